package jsonscan

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

func TestFastFloat(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	inputs := []string{"0", "-0", "0.0", "1", "-1", "151.2108", "-33.8523", "0.000001", "1e5", "1E-5", "123456789012345",
		"1234567890123456", "0.1234567890123456789", "1e22", "1e23", "1e-22", "1e-23", "9007199254740993", "-0.0e+10",
		"179.99999999", "1.7976931348623157e308", "5e-324", "0e999"}
	for i := 0; i < 20000; i++ {
		v := (rng.Float64() - 0.5) * 400
		inputs = append(inputs, strconv.FormatFloat(v, 'f', rng.IntN(12), 64), strconv.FormatFloat(v, 'g', -1, 64),
			strconv.FormatFloat(v, 'e', rng.IntN(16), 64))
	}
	for _, in := range inputs {
		want, err := strconv.ParseFloat(in, 64)
		if err != nil {
			continue
		}
		if got, ok := fastFloat([]byte(in)); ok && (got != want || math.Signbit(got) != math.Signbit(want)) {
			t.Errorf("fastFloat(%q) = %v, want %v", in, got, want)
		}
	}
}
