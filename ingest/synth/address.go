package synth

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/paulmach/orb"

	"siteenv/ingest/gazetteer"
)

// Address is an address point; see gazetteer.Address.
type Address = gazetteer.Address

// Parcel is a cadastral parcel; see gazetteer.Parcel. Generated parcels are
// always an orb.Polygon.
type Parcel = gazetteer.Parcel

// Street layout, in metres. Each locality gets a square of parallel streets
// (rotated at random) centred on its centroid; lots line both sides of each
// street, back to back with the lots of the next street. A square of half
// side h never reaches beyond h·√2 from the centroid, which is kept under
// half the distance to the nearest other locality, so the parcels of two
// localities never overlap.
const (
	roadHalf  = 7.5                       // half the road reserve
	minFront  = 12.0                      // lot frontage, least
	maxFront  = 25.0                      // lot frontage, most
	minDepth  = 30.0                      // lot depth, least
	maxDepth  = 50.0                      // lot depth, most
	rowPitch  = 2*(roadHalf+maxDepth) + 5 // 120: street to street
	rowBand   = 2 * (roadHalf + maxDepth) // 115: the lots of one street
	crossGap  = 15.0                      // a cross street between street segments
	minSeg    = 400.0                     // street segment (one name), shortest
	maxSeg    = 900.0                     // street segment, longest
	minHalf   = 150.0                     // smallest layout half side
	maxRadius = 4000.0                    // largest layout radius
	vacancy   = 0.06                      // share of lots without an address
	unparcel  = 0.02                      // share of addresses without a parcel
	setback   = 0.3                       // address point: this far into the lot's depth
	densityEx = 1.15                      // address weight = neighbours^densityEx
)

const noLayout = "synth: locality has no layout"

// rows is the number of streets a square of half side h holds.
func rows(h float64) int {
	if 2*h < rowBand {
		return 0
	}
	return int((2*h-rowBand)/rowPitch) + 1
}

// lotCapacity is a lower bound on the number of lots a square of half side h
// holds, whatever the random frontages and street segments.
func lotCapacity(h float64) int {
	r := rows(h)
	if r == 0 {
		return 0
	}
	segs := math.Ceil(2 * h / minSeg)
	perSide := int((2*h-segs*crossGap)/maxFront) - int(segs)
	if perSide < 0 {
		perSide = 0
	}
	return r * 2 * perSide
}

// maxHalf is the largest layout half side around locality l.
func maxHalf(l *locality) float64 {
	return math.Min(l.Nearest/2, maxRadius) / math.Sqrt2
}

// halfFor is the smallest half side (in 10 m steps from minHalf) holding n
// lots, at most hmax.
func halfFor(n int, hmax float64) float64 {
	for h := minHalf; h < hmax; h += 10 {
		if lotCapacity(h) >= n {
			return h
		}
	}
	return hmax
}

// allocateAddresses spreads total addresses over the localities in
// proportion to a density weight (how many localities are nearby, so
// capital-city suburbs get more), never more than a locality's layout
// holds (the excess flows to the others).
func allocateAddresses(seed int64, locs []locality, total int64) []int32 {
	r := newRand(seed, "addresses/allocation")
	n := len(locs)
	w := make([]float64, n)
	capa := make([]float64, n)
	for i := range locs {
		l := &locs[i]
		jitter := between(r, 0.6, 1.4)
		capa[i] = float64(lotCapacity(maxHalf(l)))
		if capa[i] > 0 {
			w[i] = math.Pow(float64(l.Neighbours), densityEx) * jitter
		}
	}
	alloc := make([]float64, n)
	remaining := float64(total)
	for iter := 0; iter < 64 && remaining >= 0.5; iter++ {
		sum := 0.0
		for i := range w {
			if alloc[i] < capa[i] {
				sum += w[i]
			}
		}
		if sum == 0 {
			break
		}
		placed := 0.0
		for i := range w {
			if alloc[i] >= capa[i] || w[i] == 0 {
				continue
			}
			add := math.Min(remaining*w[i]/sum, capa[i]-alloc[i])
			alloc[i] += add
			placed += add
		}
		remaining -= placed
	}
	out := make([]int32, n)
	cum, prev := 0.0, int64(0)
	for i := range alloc {
		cum += alloc[i]
		next := int64(math.Floor(cum + 1e-6))
		c := next - prev
		if float64(c) > capa[i] {
			c = int64(capa[i])
		}
		out[i] = int32(c)
		prev += c
	}
	// Rounding may leave a few over: give them to localities with room.
	for i := 0; prev < total && i < n; i++ {
		if out[i] > 0 && float64(out[i]) < capa[i] {
			out[i]++
			prev++
		}
	}
	return out
}

// lot is one generated lot: a parcel, an address, or both.
type lot struct {
	Address   Address
	HasAddr   bool
	Parcel    Parcel
	HasParcel bool
	// Road, on the first lot of a street segment, is the segment's centre
	// line and RoadName its name, Main whether it is a main road (the
	// basemap draws them).
	Road     orb.LineString
	RoadName string
	Main     bool
}

// plans hands out unique plan numbers per (state, plan type).
type plans struct {
	seed  int64
	perms map[string]*planSeq
}

type planSeq struct {
	lo   uint64
	perm *permuter
	next uint64
}

func (p *plans) number(kind string, lo, hi uint64) uint64 {
	s := p.perms[kind]
	if s == nil {
		s = &planSeq{lo: lo, perm: newPermuter(newRand(p.seed, "plans/"+kind), hi-lo)}
		p.perms[kind] = s
	}
	i := s.next
	s.next++
	if i >= s.perm.n { // range exhausted: continue above it, still unique
		return hi + i - s.perm.n
	}
	return lo + s.perm.at(i)
}

// planRun is a run of lots registered on one plan.
type planRun struct {
	format  func(lot int) string
	nextLot int
}

// newPlan starts a plan in the cadastre convention of l's state:
//
//	NSW  "<lot>/DP<plan>", strata "<lot>/SP<plan>"       e.g. 12/DP34567, 4/SP81234
//	QLD  "<lot>RP<plan>" or "<lot>SP<plan>"             e.g. 2RP1234, 15SP260411
//	VIC  "<lot>\PS<plan>", older "<lot>\LP<plan>"        e.g. 3\PS512345
//	SA   "D<plan>/A<allotment>", filed "F<plan>/A<allot>" e.g. D12345/A12
//	WA   "<lot>/DP<plan>", diagrams "<lot>/D<plan>"      e.g. 12/DP412345
//	TAS  "<lot>/SP<plan>", older "<lot>/P<plan>"         e.g. 7/SP145678
//	NT   "<lot>/S<plan>" (survey plan)                    e.g. 9/S2001123
//	ACT  "B<block>/S<section>/<DIVISION>"                e.g. B12/S34/AINSLIE
func newPlan(r *rand.Rand, p *plans, l *locality) planRun {
	first := 1
	if chance(r, 0.25) {
		first = intBetween(r, 2, 300)
	}
	pick := func(share float64, a, b string) string {
		if chance(r, share) {
			return a
		}
		return b
	}
	var f func(int) string
	switch l.State {
	case "NSW":
		if pick(0.88, "DP", "SP") == "DP" {
			n := p.number("NSW/DP", 1000, 1_300_000)
			f = func(lot int) string { return strconv.Itoa(lot) + "/DP" + u(n) }
		} else {
			n := p.number("NSW/SP", 10_000, 110_000)
			first = 1
			f = func(lot int) string { return strconv.Itoa(lot) + "/SP" + u(n) }
		}
	case "QLD":
		if pick(0.55, "RP", "SP") == "RP" {
			n := p.number("QLD/RP", 1000, 260_000)
			f = func(lot int) string { return strconv.Itoa(lot) + "RP" + u(n) }
		} else {
			n := p.number("QLD/SP", 100_000, 350_000)
			f = func(lot int) string { return strconv.Itoa(lot) + "SP" + u(n) }
		}
	case "VIC":
		if pick(0.8, "PS", "LP") == "PS" {
			n := p.number("VIC/PS", 300_000, 900_000)
			f = func(lot int) string { return strconv.Itoa(lot) + `\PS` + u(n) }
		} else {
			n := p.number("VIC/LP", 1000, 230_000)
			f = func(lot int) string { return strconv.Itoa(lot) + `\LP` + u(n) }
		}
	case "SA":
		kind := pick(0.85, "D", "F")
		n := p.number("SA/"+kind, 1000, 250_000)
		f = func(lot int) string { return kind + u(n) + "/A" + strconv.Itoa(lot) }
	case "WA":
		if pick(0.9, "DP", "D") == "DP" {
			n := p.number("WA/DP", 1000, 430_000)
			f = func(lot int) string { return strconv.Itoa(lot) + "/DP" + u(n) }
		} else {
			n := p.number("WA/D", 10_000, 100_000)
			f = func(lot int) string { return strconv.Itoa(lot) + "/D" + u(n) }
		}
	case "TAS":
		if pick(0.85, "SP", "P") == "SP" {
			n := p.number("TAS/SP", 1000, 190_000)
			f = func(lot int) string { return strconv.Itoa(lot) + "/SP" + u(n) }
		} else {
			n := p.number("TAS/P", 1000, 250_000)
			f = func(lot int) string { return strconv.Itoa(lot) + "/P" + u(n) }
		}
	case "NT":
		n := p.number("NT/S", 1_970_000, 2_030_000)
		f = func(lot int) string { return strconv.Itoa(lot) + "/S" + u(n) }
	case "ACT":
		// Sections are numbered per division name: several localities (one per
		// postcode) can share a division, and ids must stay unique.
		sec := p.number("ACT/S/"+l.Name, 1, 100_000)
		f = func(lot int) string { return "B" + strconv.Itoa(lot) + "/S" + u(sec) + "/" + l.Name }
	default:
		panic(fmt.Sprintf("synth: no cadastre convention for state %q", l.State)) // states are fixed by parseLocalities
	}
	return planRun{format: f, nextLot: first}
}

func u(n uint64) string { return strconv.FormatUint(n, 10) }

// streetNamer names a locality's street segments, never twice.
type streetNamer struct {
	r    *rand.Rand
	used map[string]bool
}

func (s *streetNamer) name(state string, main bool) string {
	if main {
		for tries := 0; tries < 4; tries++ {
			n := oneOf(s.r, highways[state])
			if !s.used[n] {
				s.used[n] = true
				return n
			}
		}
	}
	for tries := 0; tries < 40; tries++ {
		n := oneOf(s.r, streetStems) + " " + weighted(s.r, streetTypes, streetTypeWeights)
		if !s.used[n] {
			s.used[n] = true
			return n
		}
	}
	for _, dir := range []string{"", " North", " South", " East", " West"} {
		for _, stem := range streetStems {
			for _, typ := range streetTypes {
				n := stem + " " + typ + dir
				if !s.used[n] {
					s.used[n] = true
					return n
				}
			}
		}
	}
	n := "Unnamed Road " + strconv.Itoa(len(s.used)+1)
	s.used[n] = true
	return n
}

// lots generates every lot of every locality, in locality order. Addresses
// and Parcels are two views of this one stream.
func (g *Generator) lots(yield func(*lot) error) error {
	pl := &plans{seed: g.seed, perms: map[string]*planSeq{}}
	var lt lot
	for i := range g.locs {
		n := int(g.addrCount[i])
		if n == 0 {
			continue
		}
		if err := g.localityLots(i, n, pl, &lt, yield); err != nil {
			return err
		}
	}
	return nil
}

func (g *Generator) localityLots(i, n int, pl *plans, lt *lot, yield func(*lot) error) error {
	l := &g.locs[i]
	r := newRand(g.seed, "addresses/"+strconv.Itoa(i))
	h := halfFor(n, maxHalf(l))
	capLots := lotCapacity(h)
	if capLots < n {
		return fmt.Errorf("%s: %s %s: %d addresses, room for %d", noLayout, l.Name, l.Postcode, n, capLots)
	}
	spare := capLots - n // lots that may stay vacant
	fr := newFrame(l.Lon, l.Lat, r.Float64()*math.Pi)
	namer := &streetNamer{r: r, used: map[string]bool{}}
	nrows := rows(h)
	// Streets nearest the centroid first.
	order := make([]int, nrows)
	for k := range order {
		order[k] = k
	}
	yc := func(k int) float64 { return -h + float64(k)*rowPitch + rowBand/2 }
	sortByAbs(order, yc)
	done := 0
	for ri, k := range order {
		y0 := yc(k)
		x := -h
		for seg := 0; x < h && done < n; seg++ {
			segEnd := math.Min(h, x+between(r, minSeg, maxSeg))
			if h-segEnd < minSeg/2 {
				segEnd = h
			}
			main := ri == 0 && seg == 0 && nrows > 1 && chance(r, 0.35)
			street := namer.name(l.State, main)
			road := orb.LineString{fr.at(x, y0), fr.at(segEnd, y0)}
			for side := 0; side < 2 && done < n; side++ {
				num := 1 + side // odd numbers on the left, even on the right
				var plan planRun
				runLeft := 0
				for cx := x; done < n; {
					front := between(r, minFront, maxFront)
					if cx+front > segEnd {
						break
					}
					depth := between(r, minDepth, maxDepth)
					if runLeft == 0 {
						plan = newPlan(r, pl, l)
						runLeft = intBetween(r, 4, 20)
					}
					runLeft--
					// The lot, counter-clockwise in the street's frame.
					ylo, yhi := y0+roadHalf, y0+roadHalf+depth
					ya := y0 + roadHalf + setback*depth
					if side == 1 {
						ylo, yhi = y0-roadHalf-depth, y0-roadHalf
						ya = y0 - roadHalf - setback*depth
					}
					x1 := cx + front
					ring := orb.Ring{fr.at(cx, ylo), fr.at(x1, ylo), fr.at(x1, yhi), fr.at(cx, yhi), {}}
					ring[4] = ring[0]
					cadastre := plan.format(plan.nextLot)
					plan.nextLot++
					*lt = lot{}
					if road != nil {
						lt.Road, lt.RoadName, lt.Main = road, street, main
						road = nil
					}
					if spare > 0 && chance(r, vacancy) {
						spare--
					} else {
						number := strconv.Itoa(num)
						lt.HasAddr = true
						lt.Address = Address{
							Label:    number + " " + street + ", " + l.Name + " " + l.State + " " + l.Postcode,
							Number:   number,
							Street:   street,
							Locality: l.Name,
							State:    l.State,
							Postcode: l.Postcode,
							Point:    fr.at((cx+x1)/2, ya),
							// The locality's LGA as data/au-localities.csv
							// gives it (see NOTICE); "" where it has none.
							LGA: l.LGA,
						}
						done++
					}
					lt.HasParcel = !lt.HasAddr || !chance(r, unparcel)
					lt.Parcel = Parcel{Jurisdiction: l.State, CadastreID: cadastre, Geometry: orb.Polygon{ring}}
					if lt.HasAddr {
						lt.Parcel.AddressLabel = lt.Address.Label
					}
					if err := yield(lt); err != nil {
						return err
					}
					num += 2
					cx = x1
				}
			}
			x = segEnd + crossGap
		}
	}
	if done < n {
		return fmt.Errorf("%s: %s %s: placed %d of %d addresses", noLayout, l.Name, l.Postcode, done, n)
	}
	return nil
}

// sortByAbs orders row indexes by the distance of their centre line from
// the centroid (ties: lower first).
func sortByAbs(order []int, yc func(int) float64) {
	for i := 1; i < len(order); i++ {
		for j := i; j > 0; j-- {
			a, b := math.Abs(yc(order[j])), math.Abs(yc(order[j-1]))
			if a < b || (a == b && order[j] < order[j-1]) {
				order[j], order[j-1] = order[j-1], order[j]
			} else {
				break
			}
		}
	}
}

// Addresses streams every address point, locality by locality. Each is on
// the parcel whose AddressLabel is its Label, except about 2%, which have
// no parcel. Labels are unique.
func (g *Generator) Addresses(yield func(Address) error) error {
	return g.lots(func(lt *lot) error {
		if lt.HasAddr {
			return yield(lt.Address)
		}
		return nil
	})
}

// Parcels streams every parcel (a rotated rectangle along a street,
// counter-clockwise), locality by locality. About 6% have no address.
// Cadastre ids are unique per jurisdiction.
func (g *Generator) Parcels(yield func(Parcel) error) error {
	return g.lots(func(lt *lot) error {
		if lt.HasParcel {
			return yield(lt.Parcel)
		}
		return nil
	})
}

// AddressCount is the number of addresses Addresses yields.
func (g *Generator) AddressCount() int64 {
	var n int64
	for _, c := range g.addrCount {
		n += int64(c)
	}
	return n
}
