package nexmark

import "testing"

func BenchmarkRefQ2(b *testing.B) { benchStatelessRef(b, "q2") }
