package jsonscan

import (
	"strconv"
	"unsafe"
)

// ParseNumber converts the text of a JSON number (already checked against
// the grammar, as NumberBytes returns it) to the nearest float64; one too
// large gives ±Inf. It does not allocate.
func ParseNumber(raw []byte) float64 {
	if v, ok := fastFloat(raw); ok {
		return v
	}
	// The text is only read during the call.
	v, _ := strconv.ParseFloat(unsafe.String(unsafe.SliceData(raw), len(raw)), 64)
	return v
}

// pow10 holds the powers of ten that float64 represents exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// fastFloat converts a JSON number already checked against the grammar
// without allocating, when Clinger's fast path applies: at most 15
// significant digits and a decimal exponent within ±22, so that the result
// is one correctly rounded multiplication or division of two exactly
// represented values. ok is false otherwise (use strconv.ParseFloat).
func fastFloat(b []byte) (v float64, ok bool) {
	i, neg := 0, false
	if b[0] == '-' {
		neg, i = true, 1
	}
	var mant uint64
	sig, exp10 := 0, 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if mant != 0 || b[i] != '0' {
			mant = mant*10 + uint64(b[i]-'0')
			sig++
		}
	}
	if i < len(b) && b[i] == '.' {
		for i++; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			if mant != 0 || b[i] != '0' {
				mant = mant*10 + uint64(b[i]-'0')
				sig++
			}
			exp10--
		}
	}
	if sig > 15 {
		return 0, false
	}
	if i < len(b) { // exponent
		i++
		eneg := false
		if b[i] == '+' || b[i] == '-' {
			eneg = b[i] == '-'
			i++
		}
		e := 0
		for ; i < len(b); i++ {
			e = e*10 + int(b[i]-'0')
			if e > 1000 {
				return 0, false
			}
		}
		if eneg {
			e = -e
		}
		exp10 += e
	}
	v = float64(mant)
	switch {
	case mant == 0:
	case exp10 < 0 && exp10 >= -22:
		v /= pow10[-exp10]
	case exp10 >= 0 && exp10 <= 22:
		v *= pow10[exp10]
	default:
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}
