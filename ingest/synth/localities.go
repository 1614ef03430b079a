package synth

import (
	"bytes"
	_ "embed"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
)

// localitiesCSV is au-localities.csv: postcode, locality, state, longitude,
// latitude, lga. See NOTICE for its origin and licence.
//
//go:embed data/au-localities.csv
var localitiesCSV []byte

// locality is one real Australian locality.
type locality struct {
	Postcode string
	Name     string // capitals, as in an address label: "ERMINGTON"
	Title    string // title case, for prose: "Ermington"
	State    string
	LGA      string // "" when unknown
	Lon, Lat float64

	// Neighbours is the number of localities within neighbourRadius
	// degrees (itself included): a proxy for population density.
	Neighbours int
	// Nearest is the distance in metres to the nearest locality at a
	// different position (capped at maxNearest), or 0 when an earlier
	// locality sits at the same position.
	Nearest float64
	// Coastal is set for localities near the outermost coast of their
	// latitude or longitude band.
	Coastal bool
}

const (
	neighbourRadius = 0.15    // degrees
	maxNearest      = 8000.0  // metres
	mPerDegLat      = 110574. // metres per degree of latitude (approx.)
	mPerDegLonEq    = 111320. // metres per degree of longitude at the equator
	coastBand       = 0.5     // degrees
	coastReach      = 0.3     // degrees
)

// stateBounds are loose bounding boxes of the states and territories
// (mainland, Tasmania and near-shore islands; no external territories).
// The source has a few localities geocoded on the wrong continent: rows
// outside their state's box are dropped.
var stateBounds = map[string][4]float64{ // minLon, minLat, maxLon, maxLat
	"ACT": {148.7, -36.0, 149.5, -35.1},
	"NSW": {140.9, -37.6, 153.7, -28.1},
	"NT":  {128.9, -26.1, 138.1, -10.8},
	"QLD": {137.9, -29.3, 153.6, -9.0},
	"SA":  {128.9, -38.1, 141.1, -25.9},
	"TAS": {143.5, -43.7, 148.6, -39.4},
	"VIC": {140.9, -39.3, 150.1, -33.9},
	"WA":  {112.8, -35.2, 129.1, -13.6},
}

var (
	localitiesOnce sync.Once
	localitiesAll  []locality
	localitiesErr  error
)

// localities returns the cleaned localities, sorted as in the file (state,
// locality, postcode). The slice is shared and must not be modified.
func localities() ([]locality, error) {
	localitiesOnce.Do(func() {
		localitiesAll, localitiesErr = parseLocalities(bytes.NewReader(localitiesCSV))
		if localitiesErr == nil {
			annotate(localitiesAll)
		}
	})
	return localitiesAll, localitiesErr
}

// parseLocalities reads the CSV and cleans it: names in capitals with
// typographic apostrophes made plain, duplicates that creates dropped;
// postal-only names (post office boxes, delivery centres), names with glued
// words ("Glen InnesLAMBTON") and positions outside the state dropped.
func parseLocalities(r io.Reader) ([]locality, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = 6
	if _, err := cr.Read(); err != nil {
		return nil, fmt.Errorf("synth: localities header: %w", err)
	}
	seen := make(map[string]bool, 20000)
	var out []locality
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("synth: localities: %w", err)
		}
		name := strings.ReplaceAll(strings.TrimSpace(rec[1]), "’", "'")
		if gluedWords(name) {
			continue
		}
		name = strings.ToUpper(name)
		if postalOnly(name) {
			continue
		}
		l := locality{Postcode: rec[0], Name: name, Title: titleCase(name), State: rec[2], LGA: strings.TrimSpace(rec[5])}
		if l.Lon, err = strconv.ParseFloat(rec[3], 64); err != nil {
			return nil, fmt.Errorf("synth: localities: longitude %q: %w", rec[3], err)
		}
		if l.Lat, err = strconv.ParseFloat(rec[4], 64); err != nil {
			return nil, fmt.Errorf("synth: localities: latitude %q: %w", rec[4], err)
		}
		b, ok := stateBounds[l.State]
		if !ok || len(l.Postcode) != 4 || l.Lon < b[0] || l.Lat < b[1] || l.Lon > b[2] || l.Lat > b[3] {
			continue
		}
		key := l.Postcode + "|" + l.Name + "|" + l.State
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, l)
	}
	return out, nil
}

// postalOnly reports names that are post office box and delivery-centre
// postcodes, not places where people live: "PARRAMATTA DC", "PERTH BC",
// "SUBIACO PO", "CITY DELIVERY CENTRE".
func postalOnly(name string) bool {
	for _, suffix := range []string{" DC", " BC", " MC", " PO", " LPO", " MAIL CENTRE", " DELIVERY CENTRE", " WARSHIPS"} {
		if strings.HasSuffix(name, suffix) {
			return true
		}
	}
	return false
}

// gluedWords reports a lower-case letter followed by a capital.
func gluedWords(s string) bool {
	for i := 1; i < len(s); i++ {
		if s[i-1] >= 'a' && s[i-1] <= 'z' && s[i] >= 'A' && s[i] <= 'Z' {
			return true
		}
	}
	return false
}

// titleCase turns "MOUNT KURING-GAI" into "Mount Kuring-Gai" and "O'CONNOR"
// into "O'Connor".
func titleCase(s string) string {
	b := []byte(strings.ToLower(s))
	up := true
	for i, c := range b {
		if up && c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
		up = c == ' ' || c == '-' || c == '\'' || c == '('
	}
	return string(b)
}

// annotate fills Neighbours, Nearest and Coastal.
func annotate(ls []locality) {
	type cell struct{ x, y int }
	key := func(lon, lat float64) cell {
		// Longitude cells are wider so a 3x3 block covers the radius at
		// every Australian latitude (cos 45° > 0.7).
		return cell{int(math.Floor(lon / (neighbourRadius / 0.7))), int(math.Floor(lat / neighbourRadius))}
	}
	grid := make(map[cell][]int32, 8192)
	for i, l := range ls {
		k := key(l.Lon, l.Lat)
		grid[k] = append(grid[k], int32(i))
	}
	r2 := neighbourRadius * neighbourRadius
	for i := range ls {
		l := &ls[i]
		k := key(l.Lon, l.Lat)
		cos := math.Cos(l.Lat * math.Pi / 180)
		nearest := math.Inf(1)
		shadowed := false
		for dx := -1; dx <= 1; dx++ {
			for dy := -1; dy <= 1; dy++ {
				for _, j := range grid[cell{k.x + dx, k.y + dy}] {
					o := &ls[j]
					ddx, ddy := (o.Lon-l.Lon)*cos, o.Lat-l.Lat
					d2 := ddx*ddx + ddy*ddy
					if d2 <= r2 {
						l.Neighbours++
					}
					if int(j) == i {
						continue
					}
					if d2 == 0 {
						if int(j) < i {
							shadowed = true
						}
						continue
					}
					nearest = math.Min(nearest, math.Sqrt(d2)*mPerDegLat)
				}
			}
		}
		l.Nearest = math.Min(nearest, maxNearest)
		if shadowed {
			l.Nearest = 0
		}
	}
	// Coast: the outermost localities of each band, in all four directions.
	band := func(v float64) int { return int(math.Floor(v / coastBand)) }
	maxLon, minLon := map[int]float64{}, map[int]float64{}
	maxLat, minLat := map[int]float64{}, map[int]float64{}
	for _, l := range ls {
		by, bx := band(l.Lat), band(l.Lon)
		if v, ok := maxLon[by]; !ok || l.Lon > v {
			maxLon[by] = l.Lon
		}
		if v, ok := minLon[by]; !ok || l.Lon < v {
			minLon[by] = l.Lon
		}
		if v, ok := maxLat[bx]; !ok || l.Lat > v {
			maxLat[bx] = l.Lat
		}
		if v, ok := minLat[bx]; !ok || l.Lat < v {
			minLat[bx] = l.Lat
		}
	}
	for i := range ls {
		l := &ls[i]
		by, bx := band(l.Lat), band(l.Lon)
		l.Coastal = l.Lon >= maxLon[by]-coastReach || l.Lon <= minLon[by]+coastReach ||
			l.Lat >= maxLat[bx]-coastReach || l.Lat <= minLat[bx]+coastReach
	}
}

// region is a named part of Australia used for partial coverage.
type region struct {
	Key   string
	Name  string
	State string
	Box   [4]float64 // minLon, minLat, maxLon, maxLat
}

var regions = map[string]region{
	"greater-sydney": {"greater-sydney", "Greater Sydney", "NSW", [4]float64{150.2, -34.35, 151.65, -33.05}},
	"seq":            {"seq", "South East Queensland", "QLD", [4]float64{151.9, -28.3, 153.56, -26.1}},
	"perth-peel":     {"perth-peel", "Perth and Peel (Swan Coastal Plain)", "WA", [4]float64{115.4, -33.0, 116.2, -31.3}},
}

func (r region) contains(l *locality) bool {
	return l.State == r.State && l.Lon >= r.Box[0] && l.Lat >= r.Box[1] && l.Lon <= r.Box[2] && l.Lat <= r.Box[3]
}
