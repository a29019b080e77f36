package faults

import (
	"fmt"
	"strconv"
	"strings"
)

// NewCrash returns an injector that calls crash at the nth Hit of point p
// (counted across every task that shares it) and fires nothing else. It is
// the process-level counterpart of a Plan: where a planned failure fails
// one task with an error, crash ends the whole process (a SIGKILL of
// itself), so a test can kill a TaskManager exactly at a protocol point —
// between a snapshot's barrier and its acknowledgement, say — instead of
// at a random moment. If crash returns, the Hit fails its task with an
// *InjectedError like a planned failure.
//
// Only the point's own Hits take the injector's lock; every other point
// costs the usual atomic load.
func NewCrash(p Point, nth int, crash func(Fired)) (*Injector, error) {
	b := bit(p)
	if b == 0 || nth < 1 || crash == nil {
		return nil, fmt.Errorf("crash point %q at hit %d: want a known point (%v) and a hit of 1 or more", p, nth, knownPoints())
	}
	i := &Injector{crash: crash, crashAt: int64(nth), crashPoint: p}
	i.nextThreshold.Store(i.thresholdAt(0)) // no plan: never arms
	i.mask.Store(b)
	return i, nil
}

// ParseCrash reads POINT:N, as a test hook's environment variable gives
// it (WEIR_TEST_TM_CRASH=snapshot-async:3).
func ParseCrash(s string) (Point, int, error) {
	k := strings.LastIndexByte(s, ':')
	if k < 0 {
		return "", 0, fmt.Errorf("crash point %q: want POINT:N, e.g. snapshot-async:3", s)
	}
	p, err := ParsePoint(s[:k])
	n, nerr := strconv.Atoi(s[k+1:])
	if err != nil || nerr != nil || n < 1 {
		return "", 0, fmt.Errorf("crash point %q: want POINT:N with N >= 1 and POINT one of %v", s, knownPoints())
	}
	return p, n, nil
}

// crashHit counts a Hit of the crash point and crashes at the nth (mu
// held).
func (i *Injector) crashHit(p Point) error {
	if p != i.crashPoint {
		return nil
	}
	i.crashHits++
	if i.crashHits != i.crashAt {
		return nil
	}
	f := Fired{N: 1, Point: p, Progress: i.progress.Load()}
	i.log = append(i.log, f)
	i.crash(f)
	return &InjectedError{Point: p, N: 1}
}
