package bench

import "math"

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
