package report

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/paulmach/orb"
)

// Fixtures: deterministic synthetic sections around real places.

var renderDate = time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)

// offset returns p moved dx, dy metres (east, north; small distances).
func offset(p orb.Point, dx, dy float64) orb.Point {
	const m = 111_320.0
	return orb.Point{p[0] + dx/(m*math.Cos(p[1]*math.Pi/180)), p[1] + dy/m}
}

func squareAt(c orb.Point, half float64) orb.Polygon {
	return orb.Polygon{orb.Ring{offset(c, -half, -half), offset(c, half, -half), offset(c, half, half), offset(c, -half, half), offset(c, -half, -half)}}
}

// blob is an irregular polygon of n vertices about c with mean radius r.
func blob(rng *rand.Rand, c orb.Point, r float64, n int) orb.Polygon {
	ring := make(orb.Ring, 0, n+1)
	ph1, ph2 := rng.Float64()*6, rng.Float64()*6
	for i := 0; i < n; i++ {
		a := 2 * math.Pi * float64(i) / float64(n)
		rr := r * (1 + 0.25*math.Sin(3*a+ph1) + 0.12*math.Sin(7*a+ph2))
		ring = append(ring, offset(c, rr*math.Cos(a), rr*math.Sin(a)))
	}
	return orb.Polygon{append(ring, ring[0])}
}

// scatter places n features of kind within radius metres of c.
func scatter(seed uint64, c orb.Point, radius float64, n int, kind string) []orb.Geometry {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([]orb.Geometry, 0, n)
	for i := 0; i < n; i++ {
		d := radius * math.Sqrt(rng.Float64())
		a := rng.Float64() * 2 * math.Pi
		p := offset(c, d*math.Cos(a), d*math.Sin(a))
		switch kind {
		case "point":
			out = append(out, p)
		case "line":
			ls := orb.LineString{p}
			h := rng.Float64() * 2 * math.Pi
			for j := 0; j < 12; j++ {
				h += (rng.Float64() - 0.5) * 0.8
				p = offset(p, 40*math.Cos(h), 40*math.Sin(h))
				ls = append(ls, p)
			}
			out = append(out, ls)
		default:
			out = append(out, blob(rng, p, 20+rng.Float64()*60, 24))
		}
	}
	return out
}

var (
	parramatta = orb.Point{151.0036, -33.8150}
	albury     = orb.Point{146.9135, -36.095}
	outback    = orb.Point{134.5, -25.0}
)

func attributions() []string {
	return []string{"NSW Environment Protection Authority (CC-BY-4.0)"}
}

// pointSiteMap: a point site with a point layer, a line layer and a polygon layer.
func pointSiteMap() Map {
	return Map{
		Title: "12 Smith Street, Parramatta", Section: "Contamination", Date: renderDate,
		Site: parramatta,
		Layers: []Layer{
			{ID: "nsw-epa-contaminated-land", Name: "NSW contaminated land notified to the EPA", RadiusM: 2000, Coverage: "complete",
				Features: scatter(1, parramatta, 2000, 40, "poly"), Attribution: attributions()},
			{ID: "bores", Name: "Groundwater bores", RadiusM: 1000, Coverage: "complete",
				Features: scatter(2, parramatta, 1000, 120, "point"), Attribution: []string{"Bureau of Meteorology (CC-BY-4.0)"}},
			{ID: "streams", Name: "Watercourses", RadiusM: 2000, Coverage: "partial",
				Features: scatter(3, parramatta, 1800, 15, "line"), Attribution: []string{"Geoscience Australia (CC-BY-4.0)"}},
		},
		Parcels: parcelsAround(parramatta),
	}
}

func parcelsAround(c orb.Point) []orb.Geometry {
	var out []orb.Geometry
	for i := -6; i <= 6; i++ {
		for j := -4; j <= 4; j++ {
			out = append(out, squareAt(offset(c, float64(i)*40, float64(j)*30), 14))
		}
	}
	return out
}

// denseMap: a 10 ha polygon site with one dense polygon layer of n
// features, one of them a 100,000-vertex polygon.
func denseMap(n int) Map {
	site := blob(rand.New(rand.NewPCG(7, 7)), parramatta, 180, 40)
	feats := scatter(11, parramatta, 1000, n-1, "poly")
	feats = append(feats, blob(rand.New(rand.NewPCG(9, 9)), offset(parramatta, 400, -300), 300, 100_000))
	return Map{
		Title: "Depot (polygon site)", Section: "Soils and acid sulfate soils", Date: renderDate,
		Site: site,
		Layers: []Layer{{ID: "soils", Name: "Acid sulfate soil risk", RadiusM: 1000, Coverage: "complete",
			Features: feats, Attribution: []string{"CSIRO ASRIS (CC-BY-4.0)"}}},
	}
}

// emptyMap: a section with nothing within the buffer and partial coverage.
func emptyMap() Map {
	return Map{
		Title: "Remote lease", Section: "Heritage", Date: renderDate, Site: squareAt(outback, 100),
		Layers: []Layer{
			{ID: "heritage", Name: "State heritage register", RadiusM: 1000, Coverage: "complete", Attribution: []string{"Heritage NSW (CC-BY-4.0)"}},
			{ID: "nhl", Name: "National heritage list", RadiusM: 5000, Coverage: "partial"},
			{ID: "vhr", Name: "Victorian heritage register", RadiusM: 1000, Outcome: OutsideCoverage, Coverage: "none"},
		},
	}
}

// borderMap: a site on the Murray between NSW and VIC.
func borderMap() Map {
	return Map{
		Title: "Albury riverside", Section: "Flooding", Date: renderDate, Site: albury,
		Layers: []Layer{
			{ID: "flood", Name: "Flood planning areas", RadiusM: 2000, Coverage: "complete",
				Features: scatter(21, albury, 2000, 25, "poly"), Attribution: []string{"NSW SES (CC-BY-4.0)"}},
			{ID: "gauges", Name: "Flood warning gauges", RadiusM: 10000, Coverage: "complete",
				Features: scatter(22, albury, 2000, 30, "point"), Attribution: []string{"Bureau of Meteorology (CC-BY-4.0)"}},
		},
	}
}
