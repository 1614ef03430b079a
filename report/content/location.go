package content

import (
	"math"
	"slices"
	"strconv"
	"time"
	_ "time/tzdata" // the static binary carries its own zone data

	"github.com/paulmach/orb"

	"siteenv/geo"
	"siteenv/geo/austates"
)

// timeZones are the IANA zones of the jurisdictions' capitals (AEST/AEDT,
// ACST/ACDT, AWST).
var timeZones = map[string]string{
	"NSW": "Australia/Sydney", "ACT": "Australia/Sydney", "VIC": "Australia/Melbourne", "TAS": "Australia/Hobart",
	"QLD": "Australia/Brisbane", "SA": "Australia/Adelaide", "NT": "Australia/Darwin", "WA": "Australia/Perth",
}

// locate gives the site's address, lots, local government area,
// coordinates and time zone. The LGA is that of the addresses the
// gazetteer links to the site's parcels: a site with no addressed parcel,
// or whose addresses carry none, has none held.
func locate(in Input, centre orb.Point) Location {
	loc := Location{Lon: round6(centre[0]), Lat: round6(centre[1])}
	if in.Site.Geometry != nil {
		for _, p := range ofSite(in.Site.Geometry, centre, in.Parcels) {
			if p.CadastreID != "" && !slices.Contains(loc.LotPlans, p.CadastreID) {
				loc.LotPlans = append(loc.LotPlans, p.CadastreID)
			}
			if p.Address != "" && !slices.Contains(loc.Addresses, p.Address) {
				loc.Addresses = append(loc.Addresses, p.Address)
			}
			if p.LGA != "" && !slices.Contains(loc.LGAs, p.LGA) {
				loc.LGAs = append(loc.LGAs, p.LGA)
			}
		}
	}
	// MGA2020 zones 46 to 59 span Australia's mainland and islands.
	zone := int(math.Floor((centre[0]+180)/6)) + 1
	if zone >= 46 && zone <= 59 {
		e, n := geo.MGAForward(zone, centre[0], centre[1])
		loc.MGAZone, loc.Easting, loc.Northing = zone, math.Round(e*100)/100, math.Round(n*100)/100
	}
	j := in.Site.Jurisdiction
	if j == "" {
		j = austates.StateAt(centre)
	}
	loc.TimeZone = timeZones[j]
	return loc
}

func round6(v float64) float64 { return math.Round(v*1e6) / 1e6 }

// localTime writes t in the zone (AEDT, ACST...) with its UTC offset;
// UTC when the zone is unknown.
func localTime(t time.Time, zone string) string {
	if zone != "" {
		if z, err := time.LoadLocation(zone); err == nil {
			t = t.In(z)
			return t.Format("2 January 2006 15:04 MST (UTC-07:00)")
		}
	}
	return t.UTC().Format("2 January 2006 15:04 UTC")
}

func formatInt(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
