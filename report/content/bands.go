package content

// Band is a distance band of the statistical profile: features whose
// distance from the site d satisfies MinM < d <= MaxM; the on-site band
// (Key "on_site") holds those at distance 0 (touching or inside).
type Band struct {
	Key        string
	Label      string
	MinM, MaxM float64
}

// Bands are the profile's bands, as the established reports print them.
var Bands = []Band{
	{"on_site", "On site", 0, 0},
	{"0_100m", "0–100 m", 0, 100},
	{"100_250m", "100–250 m", 100, 250},
	{"250_500m", "250–500 m", 250, 500},
	{"500m_1km", "500 m–1 km", 500, 1000},
	{"1_2km", "1–2 km", 1000, 2000},
	{"2_5km", "2–5 km", 2000, 5000},
	{"5_10km", "5–10 km", 5000, 10000},
}

// BandOf is the index in Bands of a feature at distanceM.
func BandOf(distanceM float64) int {
	if distanceM <= 0 {
		return 0
	}
	for i := 1; i < len(Bands); i++ {
		if distanceM <= Bands[i].MaxM {
			return i
		}
	}
	return len(Bands) - 1
}

// Searched says whether band i lies (at least partly) within radiusM: a
// band beyond the layer's search distance prints a dash, not a 0.
func Searched(i int, radiusM float64) bool {
	return i == 0 || Bands[i].MinM < radiusM
}

// BandCounts counts features by band: nil for a band beyond radiusM;
// all nil when the layer's count is unknown (known false).
func BandCounts(distances []float64, radiusM float64, known bool) []*int {
	out := make([]*int, len(Bands))
	if !known {
		return out
	}
	for i := range Bands {
		if Searched(i, radiusM) {
			out[i] = new(int)
		}
	}
	for _, d := range distances {
		i := BandOf(d)
		if out[i] == nil {
			out[i] = new(int) // a feature is never dropped from the sums
		}
		*out[i]++
	}
	return out
}
