package remote

import (
	"context"
	"crypto/tls"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/network"
	"github.com/weirstream/weir/internal/security"
	"github.com/weirstream/weir/internal/security/securitytest"
)

// TestTLSDataPlane: two TaskManagers with certificates of one CA exchange
// records over mutual TLS.
func TestTLSDataPlane(t *testing.T) {
	ta, ca := securitytest.InternalTLS(t, nil)
	tb, _ := securitytest.InternalTLS(t, ca)
	a, b := newTLSTM(t, "tm-a", ta), newTLSTM(t, "tm-b", tb)
	_, cb := connect(t, a, b)
	if _, ok := cb.nc.(*tls.Conn); !ok {
		t.Fatalf("connection is %T, want *tls.Conn", cb.nc)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	fails := newFailures()
	g := network.NewGate(1, 4)
	if _, err := cb.OpenInput(InputConfig{Key: key(0, 0), Gate: g, Channel: 0, OnFailure: fails.record}); err != nil {
		t.Fatal(err)
	}
	done := make(chan *consumerLog)
	go func() { done <- consume(ctx, g) }()
	out := outChannel(t, a, 0, 0, 4)
	w := network.NewWriter([]*OutChannel{out}, network.Custom(func(int64, int) int { return 0 }), network.NewPool[int64](16), 0)
	const n = 5000
	for i := range n {
		if err := w.Emit(ctx, int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []network.Kind{network.EndOfData, network.EndOfPartition} {
		if err := w.Broadcast(ctx, network.Buffer{Kind: k}); err != nil {
			t.Fatal(err)
		}
	}
	l := <-done
	if l.err != nil {
		t.Fatal(l.err)
	}
	if got := l.values[0]; len(got) != n || got[0] != 0 || got[n-1] != n-1 {
		t.Fatalf("received %d records, want 0..%d", len(got), n-1)
	}
	if fails.count() != 0 {
		t.Fatalf("channel failures: %v", fails.errs)
	}
}

// TestTLSDataPlaneRefusals: a plain peer and peers of another CA are
// refused, with the keys to set named on both sides.
func TestTLSDataPlaneRefusals(t *testing.T) {
	ta, _ := securitytest.InternalTLS(t, nil)
	foreign, caB := securitytest.InternalTLS(t, nil)
	// tm-b serves with TLS; the others dial it (smaller ids dial).
	b := newTLSTM(t, "tm-b", ta)
	ctx := context.Background()

	plain := newTM(t, "tm-a1")
	_, err := plain.mgr.Conn(ctx, "tm-b", b.addr())
	if err == nil {
		t.Fatal("plain peer connected to a TLS data plane")
	}
	eventually(t, "the plain peer's refusal logged", func() bool {
		s := b.log.String()
		return strings.Contains(s, "did not start a TLS handshake") && strings.Contains(s, "security.ssl.internal.enabled=true")
	})

	f := newTLSTM(t, "tm-a2", foreign)
	_, err = f.mgr.Conn(ctx, "tm-b", b.addr())
	if !errors.Is(err, security.ErrHandshake) || !strings.Contains(err.Error(), "TaskManager tm-b at "+b.addr()+" presented a certificate not signed by security.ssl.internal.ca-file") {
		t.Fatalf("foreign CA peer: %v", err)
	}
	eventually(t, "the foreign peer's refusal logged", func() bool {
		return strings.Contains(b.log.String(), "refused this process's certificate")
	})

	// A certificate of another CA, trusting tm-b's CA.
	other, _ := securitytest.InternalTLS(t, caB)
	other.Config.RootCAs = ta.Config.RootCAs
	o := newTLSTM(t, "tm-a3", other)
	_, err = o.mgr.Conn(ctx, "tm-b", b.addr())
	if !errors.Is(err, security.ErrHandshake) || !strings.Contains(err.Error(), "refused the TLS handshake") || !strings.Contains(err.Error(), "security.ssl.internal.cert-file/key-file/ca-file") {
		t.Fatalf("peer with another CA's certificate: %v", err)
	}
	eventually(t, "the other CA's certificate logged", func() bool {
		return strings.Contains(b.log.String(), "presented a certificate not signed by security.ssl.internal.ca-file ("+ta.CAFile+")")
	})
}
