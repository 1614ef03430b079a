package synth

import (
	"hash/fnv"
	"math"
	"math/bits"
	"math/rand/v2"
	"sort"
	"time"
)

// newRand returns a PCG source for one independent stream of the generator:
// the seed and the stream's name fix its output, so streams (layers,
// localities) can be generated separately and in parallel.
func newRand(seed int64, stream string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(stream))
	return rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
}

// picker draws indices with probability proportional to their weights.
type picker struct {
	cum []float64 // cumulative weights
	idx []int32   // the index each entry stands for
}

func newPicker(n int, weight func(i int) float64) *picker {
	p := &picker{}
	total := 0.0
	for i := 0; i < n; i++ {
		w := weight(i)
		if w <= 0 || math.IsNaN(w) || math.IsInf(w, 0) {
			continue
		}
		total += w
		p.cum = append(p.cum, total)
		p.idx = append(p.idx, int32(i))
	}
	return p
}

func (p *picker) empty() bool { return len(p.cum) == 0 }

func (p *picker) pick(r *rand.Rand) int {
	x := r.Float64() * p.cum[len(p.cum)-1]
	i := sort.SearchFloat64s(p.cum, x)
	if i >= len(p.idx) {
		i = len(p.idx) - 1
	}
	return int(p.idx[i])
}

// permuter is a seeded bijection of [0, n): unique, random-looking numbers
// (plan numbers, register numbers) from a counter.
type permuter struct {
	n          uint64
	bits       uint
	mask       uint64
	a, b, c, d uint64
}

func newPermuter(r *rand.Rand, n uint64) *permuter {
	k := uint(bits.Len64(n - 1))
	if k < 2 {
		k = 2
	}
	return &permuter{n: n, bits: k, mask: 1<<k - 1, a: r.Uint64() | 1, b: r.Uint64(), c: r.Uint64() | 1, d: r.Uint64()}
}

// at returns the image of i; i must be below n.
func (p *permuter) at(i uint64) uint64 {
	x := i
	for {
		// Each step is a bijection of [0, 2^bits); cycle walking keeps
		// the composition a bijection of [0, n).
		x = (x*p.a + p.b) & p.mask
		x ^= x >> (p.bits/2 + 1)
		x = (x*p.c + p.d) & p.mask
		x ^= x >> (p.bits / 3)
		if x < p.n {
			return x
		}
	}
}

// counts splits total into parts proportional to weights, exactly summing
// to total.
func counts(total int64, weights []float64) []int64 {
	sum := 0.0
	for _, w := range weights {
		sum += w
	}
	out := make([]int64, len(weights))
	cum, prev := 0.0, int64(0)
	for i, w := range weights {
		cum += w
		next := int64(math.Floor(float64(total) * cum / sum))
		if i == len(weights)-1 {
			next = total
		}
		out[i] = next - prev
		prev = next
	}
	return out
}

// Helpers for drawing values.

func between(r *rand.Rand, lo, hi float64) float64 { return lo + r.Float64()*(hi-lo) }

func intBetween(r *rand.Rand, lo, hi int) int { return lo + r.IntN(hi-lo+1) }

func chance(r *rand.Rand, p float64) bool { return r.Float64() < p }

func oneOf[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// weighted picks from xs with the given weights (same length).
func weighted[T any](r *rand.Rand, xs []T, ws []float64) T {
	total := 0.0
	for _, w := range ws {
		total += w
	}
	x := r.Float64() * total
	for i, w := range ws {
		if x < w {
			return xs[i]
		}
		x -= w
	}
	return xs[len(xs)-1]
}

// logNormal draws exp(N(mu, sigma)).
func logNormal(r *rand.Rand, mu, sigma float64) float64 { return math.Exp(mu + sigma*r.NormFloat64()) }

func round(x float64, decimals int) float64 {
	p := math.Pow10(decimals)
	return math.Round(x*p) / p
}

const day = 24 * time.Hour

// dateBetween draws a day between two dates ("YYYY-MM-DD") and returns it
// formatted the same way.
func dateBetween(r *rand.Rand, from, to string) string {
	return dayBetween(r, from, to).Format(time.DateOnly)
}

func dayBetween(r *rand.Rand, from, to string) time.Time {
	a, b := mustDate(from), mustDate(to)
	n := int(b.Sub(a) / day)
	return a.AddDate(0, 0, r.IntN(n+1))
}

// dateTimeBetween draws a whole second between two dates and formats it in
// RFC 3339 (UTC).
func dateTimeBetween(r *rand.Rand, from, to string) string {
	a, b := mustDate(from), mustDate(to)
	secs := int64(b.Sub(a) / time.Second)
	return a.Add(time.Duration(r.Int64N(secs)) * time.Second).Format(time.RFC3339)
}

func mustDate(s string) time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic("synth: bad date literal " + s) // literals in this package only
	}
	return t
}
