package ledger_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"siteenv/ledger"
	"siteenv/ledger/ledgertest"
)

// rect is a parcel row: a lon/lat rectangle.
func rect(j, id string, addr string, lon0, lat0, lon1, lat1 float64) ledger.ParcelRow {
	g := fmt.Sprintf(`{"type":"Polygon","coordinates":[[[%[1]v,%[2]v],[%[3]v,%[2]v],[%[3]v,%[4]v],[%[1]v,%[4]v],[%[1]v,%[2]v]]]}`, lon0, lat0, lon1, lat1)
	p := ledger.ParcelRow{Jurisdiction: j, CadastreID: id, Geometry: json.RawMessage(g), MinLon: lon0, MinLat: lat0, MaxLon: lon1, MaxLat: lat1}
	if addr != "" {
		p.Address = &addr
	}
	return p
}

func addr(number, street, locality, state, postcode string, lon, lat float64) ledger.AddressRow {
	return ledger.AddressRow{Label: number + " " + street + ", " + locality + " " + state + " " + postcode,
		Number: number, Street: street, Locality: locality, State: state, Postcode: postcode, Lon: lon, Lat: lat}
}

// load replaces the gazetteer with the rows.
func load(t testing.TB, ctx context.Context, led *ledger.Ledger, as []ledger.AddressRow, ps []ledger.ParcelRow) {
	t.Helper()
	i, j := 0, 0
	_, _, err := led.ReplaceGazetteer(ctx,
		func() (ledger.AddressRow, bool, error) {
			if i == len(as) {
				return ledger.AddressRow{}, false, nil
			}
			i++
			return as[i-1], true, nil
		},
		func() (ledger.ParcelRow, bool, error) {
			if j == len(ps) {
				return ledger.ParcelRow{}, false, nil
			}
			j++
			return ps[j-1], true, nil
		})
	if err != nil {
		t.Fatal(err)
	}
}

func labels(ms []ledger.AddressMatch) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Label
	}
	return out
}

func TestAddressSearchRanksAndFollowsReloads(t *testing.T) {
	t.Parallel()
	b := setup(t)
	as := []ledger.AddressRow{
		addr("12", "Smith Street", "PARRAMATTA", "NSW", "2150", 151.0031, -33.8151),
		addr("14", "Smith Street", "PARRAMATTA", "NSW", "2150", 151.0033, -33.8151),
		addr("12A", "Smith Street", "PARRAMATTA", "NSW", "2150", 151.0035, -33.8151),
		addr("12", "Smith Road", "PARRAMATTA", "NSW", "2150", 151.0101, -33.8198),
		addr("12", "Smith Street", "ERMINGTON", "NSW", "2115", 151.0551, -33.8101),
		addr("3", "Queen Street", "BRISBANE CITY", "QLD", "4000", 153.0251, -27.4701),
	}
	load(t, b.ctx, b.led, as, []ledger.ParcelRow{rect("NSW", "12/DP34567", as[0].Label, 151.0030, -33.8153, 151.0032, -33.8149)})

	cases := []struct {
		q      ledger.AddressQuery
		first  string
		absent string
	}{
		{ledger.AddressQuery{Text: "12 smth st parramata"}, "12 Smith Street, PARRAMATTA NSW 2150", ""},
		{ledger.AddressQuery{Text: "12a smith street parramatta"}, "12A Smith Street, PARRAMATTA NSW 2150", ""},
		{ledger.AddressQuery{Text: "Unit 4/14 Smith St, Parramatta"}, "14 Smith Street, PARRAMATTA NSW 2150", ""},
		{ledger.AddressQuery{Text: "12 smith rd parramatta"}, "12 Smith Road, PARRAMATTA NSW 2150", ""},
		{ledger.AddressQuery{Text: "12 smith street", Postcode: "2115"}, "12 Smith Street, ERMINGTON NSW 2115", "12 Smith Street, PARRAMATTA NSW 2150"},
		{ledger.AddressQuery{Text: "queen st", Jurisdiction: "QLD"}, "3 Queen Street, BRISBANE CITY QLD 4000", "12 Smith Street, PARRAMATTA NSW 2150"},
		{ledger.AddressQuery{Text: "12 smith street", Jurisdiction: "QLD"}, "", "12 Smith Street, PARRAMATTA NSW 2150"},
	}
	for _, c := range cases {
		c.q.Limit = 10
		got, _, err := b.led.SearchAddresses(b.ctx, c.q)
		if err != nil {
			t.Fatal(err)
		}
		ls := labels(got)
		if c.first != "" && (len(ls) == 0 || ls[0] != c.first) {
			t.Errorf("%+v: got %q, want %q first", c.q, ls, c.first)
		}
		if c.first == "" && len(ls) != 0 {
			t.Errorf("%+v: got %q, want none", c.q, ls)
		}
		if c.absent != "" && slices.Contains(ls, c.absent) {
			t.Errorf("%+v: got %q, must not contain %q", c.q, ls, c.absent)
		}
	}

	// The limit and more.
	got, more, err := b.led.SearchAddresses(b.ctx, ledger.AddressQuery{Text: "smith street parramatta", Limit: 2})
	if err != nil || len(got) != 2 || !more {
		t.Fatalf("limit 2: %q more=%v err=%v", labels(got), more, err)
	}
	got, more, err = b.led.SearchAddresses(b.ctx, ledger.AddressQuery{Text: "queen street brisbane", Limit: 10})
	if err != nil || len(got) != 1 || more {
		t.Fatalf("one match: %q more=%v err=%v", labels(got), more, err)
	}

	// Identifiers resolve, and stay the same across a reload.
	a, err := b.led.AddressByID(b.ctx, got[0].ID)
	if err != nil || a.Label != "3 Queen Street, BRISBANE CITY QLD 4000" || !strings.HasPrefix(a.ID, "adr_") {
		t.Fatalf("by id: %+v %v", a, err)
	}
	queenID := got[0].ID
	for _, bad := range []string{"", "adr_", "adr_zz", "x" + queenID, strings.ToUpper(queenID)} {
		if _, err := b.led.AddressByID(b.ctx, bad); err != ledger.ErrNotFound {
			t.Errorf("%q: %v", bad, err)
		}
	}

	// A reload replaces the streets too: nothing of the old gazetteer is found.
	load(t, b.ctx, b.led, []ledger.AddressRow{as[5], addr("9", "Banksia Avenue", "ERMINGTON", "NSW", "2115", 151.05, -33.81)}, nil)
	got, _, err = b.led.SearchAddresses(b.ctx, ledger.AddressQuery{Text: "12 smith street parramatta", Limit: 10})
	if err != nil || len(got) != 0 {
		t.Fatalf("after reload: %q %v", labels(got), err)
	}
	got, _, err = b.led.SearchAddresses(b.ctx, ledger.AddressQuery{Text: "9 banksia ave ermington", Limit: 10})
	if err != nil || len(got) != 1 {
		t.Fatalf("after reload: %q %v", labels(got), err)
	}
	if a, err := b.led.AddressByID(b.ctx, queenID); err != nil || a.ID != queenID {
		t.Fatalf("id after reload: %+v %v", a, err)
	}
}

func TestParcelLookups(t *testing.T) {
	t.Parallel()
	b := setup(t)
	as := []ledger.AddressRow{addr("12", "Smith Street", "PARRAMATTA", "NSW", "2150", 151.0031, -33.8151)}
	load(t, b.ctx, b.led, as, []ledger.ParcelRow{
		rect("NSW", "12/DP34567", as[0].Label, 151.0030, -33.8153, 151.0032, -33.8149),
		rect("NSW", "13/DP34567", "", 151.0032, -33.8153, 151.0034, -33.8149),
		rect("QLD", "2RP1234", "", 153.0250, -27.4702, 153.0252, -27.4700),
	})
	ps, err := b.led.ParcelsAt(b.ctx, 151.0031, -33.8151)
	if err != nil || len(ps) != 1 || ps[0].CadastreID != "12/DP34567" || ps[0].Postcode == nil || *ps[0].Postcode != "2150" {
		t.Fatalf("at: %+v %v", ps, err)
	}
	// On the shared edge, both boxes hold the point.
	if ps, err := b.led.ParcelsAt(b.ctx, 151.0032, -33.8151); err != nil || len(ps) != 2 {
		t.Fatalf("edge: %+v %v", ps, err)
	}
	ps, err = b.led.ParcelsByID(b.ctx, "NSW", []string{"13/DP34567", "2RP1234", "nope"})
	if err != nil || len(ps) != 1 || ps[0].CadastreID != "13/DP34567" || ps[0].Address != nil {
		t.Fatalf("by id: %+v %v", ps, err)
	}
	ms, _, err := b.led.SearchParcels(b.ctx, ledger.ParcelQuery{Text: "12/DP3456", Limit: 10})
	if err != nil || len(ms) == 0 || ms[0].CadastreID != "12/DP34567" {
		t.Fatalf("search: %+v %v", ms, err)
	}
	ms, _, err = b.led.SearchParcels(b.ctx, ledger.ParcelQuery{Text: "12 smith st parramatta", Limit: 10})
	if err != nil || len(ms) != 1 || ms[0].CadastreID != "12/DP34567" {
		t.Fatalf("search by address: %+v %v", ms, err)
	}
	for _, c := range []struct {
		lon, lat float64
		near     bool
	}{{151.0031, -33.8151, true}, {151.0100, -33.8151, true}, {135, -25, false}} {
		near, err := b.led.GazetteerNear(b.ctx, c.lon, c.lat, 0.01)
		if err != nil || near != c.near {
			t.Errorf("near %v,%v: %v %v", c.lon, c.lat, near, err)
		}
	}
}

// BenchmarkSearch measures address search latency over a generated
// gazetteer of one million addresses (generated and loaded once per run,
// only under -bench). Queries are real labels rewritten as people type them:
// abbreviated street types, a typo, lower case, part of the locality, or no
// house number. It reports p50, p95 and p99 latency in milliseconds.
//
//	go test ./ledger/ -run '^$' -bench BenchmarkSearch -benchtime 2000x
func BenchmarkSearch(b *testing.B) {
	const total = 1_000_000
	ctx := context.Background()
	led := ledgertest.New(b, nil)
	start := time.Now()
	gen := newAddressGen(1)
	sample := make([]ledger.AddressRow, 0, 2000)
	n := 0
	if _, _, err := led.ReplaceGazetteer(ctx, func() (ledger.AddressRow, bool, error) {
		if n == total {
			return ledger.AddressRow{}, false, nil
		}
		a := gen.next()
		if n%(total/cap(sample)) == 0 {
			sample = append(sample, a)
		}
		n++
		return a, true, nil
	}, func() (ledger.ParcelRow, bool, error) { return ledger.ParcelRow{}, false, nil }); err != nil {
		b.Fatal(err)
	}
	b.Logf("loaded %d addresses in %s", total, time.Since(start).Round(time.Second))
	r := rand.New(rand.NewPCG(2, 2))
	queries := make([]string, len(sample))
	for i, a := range sample {
		queries[i] = typed(r, a)
	}
	// Warm the caches and the statement cache as a running server would be.
	for _, q := range queries[:200] {
		if _, _, err := led.SearchAddresses(ctx, ledger.AddressQuery{Text: q, Limit: 10}); err != nil {
			b.Fatal(err)
		}
	}
	var lat []time.Duration
	found := 0
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		q := queries[i%len(queries)]
		t0 := time.Now()
		ms, _, err := led.SearchAddresses(ctx, ledger.AddressQuery{Text: q, Limit: 10})
		lat = append(lat, time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
		if len(ms) > 0 && sample[i%len(sample)].Label == ms[0].Label {
			found++
		}
		i++
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.95), "p95-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(100*float64(found)/float64(len(lat)), "%first")
}

// typed rewrites an address label the way people type it.
func typed(r *rand.Rand, a ledger.AddressRow) string {
	i := strings.LastIndex(a.Street, " ")
	name, typ := a.Street[:i], a.Street[i+1:]
	abbr := map[string]string{"Street": "st", "Road": "rd", "Avenue": "ave", "Crescent": "cres", "Drive": "dr", "Place": "pl",
		"Court": "ct", "Parade": "pde", "Terrace": "tce", "Circuit": "cct", "Highway": "hwy", "Close": "cl", "Lane": "ln"}
	if s, ok := abbr[typ]; ok && r.IntN(2) == 0 {
		typ = s
	}
	if len(name) > 4 && r.IntN(2) == 0 { // drop one letter
		k := 1 + r.IntN(len(name)-2)
		name = name[:k] + name[k+1:]
	}
	loc := strings.ToLower(a.Locality)
	if len(loc) > 6 && r.IntN(3) == 0 { // typing not finished
		loc = loc[:len(loc)-2]
	}
	q := strings.ToLower(a.Number + " " + name + " " + typ + " " + loc)
	if r.IntN(5) == 0 {
		q += " " + strings.ToLower(a.State) + " " + a.Postcode
	}
	return q
}

// addressGen generates a plausible national gazetteer: localities with
// states and postcodes, each with streets of consecutive house numbers.
type addressGen struct {
	r        *rand.Rand
	names    []string
	locality struct {
		name, state, postcode string
		lon, lat              float64
		streets               int
	}
	street struct {
		name    string
		numbers int
		next    int
	}
	seen map[string]bool
}

var (
	syllables   = strings.Fields("ban ksi a par ra mat ta er ming ton smi th wil low gre en ham bro ok wat son mar ley ash field hill dale wood ber ry kings queens vic to ri ca ro se lin den mel cas tle new port camp bell rich mond hur st ville glen el gin hav bay view pine oak ce dar jac aran da wa nga ko lee me ade lai")
	streetTypes = strings.Fields("Street Road Avenue Crescent Close Court Place Drive Parade Lane Way Terrace Circuit Highway Grove Boulevard")
	states      = [][2]string{{"NSW", "2"}, {"VIC", "3"}, {"QLD", "4"}, {"SA", "5"}, {"WA", "6"}, {"TAS", "7"}, {"NT", "0"}, {"ACT", "2"}}
)

func newAddressGen(seed uint64) *addressGen {
	g := &addressGen{r: rand.New(rand.NewPCG(seed, seed)), seen: map[string]bool{}}
	for range 4000 {
		g.names = append(g.names, g.word(1+g.r.IntN(3)))
	}
	return g
}

func (g *addressGen) word(n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(syllables[g.r.IntN(len(syllables))])
	}
	w := b.String()
	return strings.ToUpper(w[:1]) + w[1:]
}

func (g *addressGen) next() ledger.AddressRow {
	for {
		if g.street.next >= g.street.numbers {
			if g.locality.streets == 0 {
				s := states[g.r.IntN(len(states))]
				g.locality.name = strings.ToUpper(g.word(2 + g.r.IntN(2)))
				g.locality.state, g.locality.postcode = s[0], s[1]+fmt.Sprintf("%03d", g.r.IntN(1000))
				g.locality.lon, g.locality.lat = 115+38*g.r.Float64(), -43+31*g.r.Float64()
				g.locality.streets = 5 + g.r.IntN(36)
			}
			g.locality.streets--
			g.street.name = g.names[g.r.IntN(len(g.names))] + " " + streetTypes[g.r.IntN(len(streetTypes))]
			g.street.numbers, g.street.next = 10+g.r.IntN(110), 0
		}
		g.street.next++
		num := strconv.Itoa(g.street.next)
		a := ledger.AddressRow{Label: num + " " + g.street.name + ", " + g.locality.name + " " + g.locality.state + " " + g.locality.postcode,
			Number: num, Street: g.street.name, Locality: g.locality.name, State: g.locality.state, Postcode: g.locality.postcode,
			Lon: g.locality.lon + float64(g.street.next)*1e-4, Lat: g.locality.lat}
		if !g.seen[a.Label] {
			g.seen[a.Label] = true
			return a
		}
	}
}
