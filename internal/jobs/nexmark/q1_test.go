package nexmark

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/weirstream/weir/connectors/nexmark"
)

// bigEuros is 0.908 * p printed with three decimals, by math/big.
func bigEuros(p int64) string {
	v := new(big.Int).Mul(big.NewInt(p), big.NewInt(908))
	sign := ""
	if v.Sign() < 0 {
		sign = "-"
		v.Neg(v)
	}
	q, r := new(big.Int).QuoRem(v, big.NewInt(1000), new(big.Int))
	return fmt.Sprintf("%s%s.%03d", sign, q, r.Int64())
}

func TestEurosPrintsThreeDecimals(t *testing.T) {
	for _, c := range []struct {
		price int64
		want  string
	}{
		{0, "0.000"}, {1, "0.908"}, {-1, "-0.908"}, {2, "1.816"}, {1000, "908.000"},
		{1234, "1120.472"}, {1359655, "1234566.740"}, {-1234, "-1120.472"}, {11, "9.988"},
		{math.MaxInt64, "8374821809464136432.756"}, {math.MinInt64, "-8374821809464136433.664"},
	} {
		if got := string(euros(c.price).append(nil)); got != c.want {
			t.Errorf("0.908 * %d = %s, want %s", c.price, got, c.want)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 8_000 {
		p := rng.Int64() >> rng.IntN(64)
		if rng.IntN(2) == 0 {
			p = -p
		}
		if got, want := string(euros(p).append(nil)), bigEuros(p); got != want {
			t.Fatalf("0.908 * %d = %s, want %s", p, got, want)
		}
	}
}

func TestDec3CompareWithInteger(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 8_000 {
		p := rng.Int64N(200_000_000) - 100_000_000
		n := rng.Int64N(200_000_000) - 100_000_000
		if rng.IntN(4) == 0 {
			n = p * 908 / 1000 // near equality
		}
		want := new(big.Int).Mul(big.NewInt(p), big.NewInt(908)).Cmp(new(big.Int).Mul(big.NewInt(n), big.NewInt(1000)))
		if got := euros(p).cmpInt(n); got != want {
			t.Fatalf("cmp(0.908 * %d, %d) = %d, want %d", p, n, got, want)
		}
	}
}

// benchStatelessRef runs query's reference over b.N events, so ns/op and
// allocs/op are per event (the setup is amortized over b.N).
func benchStatelessRef(b *testing.B, name string) {
	q, err := Lookup(name)
	if err != nil {
		b.Fatal(err)
	}
	p := Params{Gen: nexmark.DefaultConfig()}
	out := &RefOut{}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuSeconds(b)
	if err := q.Reference(p, int64(b.N), out); err != nil {
		b.Fatal(err)
	}
	reportCPU(b, cpu0)
}

// cpuSeconds is the process's user + system CPU time.
func cpuSeconds(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// reportCPU reports events per core-second (b.N events over the CPU time
// since cpu0): wall-clock ns/op means little on a loaded machine.
func reportCPU(b *testing.B, cpu0 float64) {
	if cpu := cpuSeconds(b) - cpu0; cpu > 0 {
		b.ReportMetric(float64(b.N)/cpu, "events/core-s")
		b.ReportMetric(cpu*1e9/float64(b.N), "cpu-ns/event")
	}
}

// BenchmarkRefGenerator is the generator alone, for comparison.
func BenchmarkRefGenerator(b *testing.B) {
	g := nexmark.NewGenerator(nexmark.DefaultConfig())
	var e nexmark.Event
	b.ReportAllocs()
	cpu0 := cpuSeconds(b)
	for i := range int64(b.N) {
		g.At(i, &e)
	}
	reportCPU(b, cpu0)
}

func BenchmarkRefQ1(b *testing.B) { benchStatelessRef(b, "q1") }
