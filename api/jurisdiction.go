package api

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/paulmach/orb"

	"siteenv/geo"
	"siteenv/geo/austates"
)

// reportJurisdiction decides a report's jurisdiction from the site's
// boundary: the states and territories its vertices and centroid lie in
// or within 3 nautical miles of (austates.StatesOf). Exactly one of the contract's
// eight is the site's jurisdiction, and a given one must equal it. None, or
// several (a site across a border, or in Jervis Bay Territory, which is not
// one of the eight), leave it undetermined: the order must name one, and
// when the site touches several it must be one of them.
func reportJurisdiction(geometry json.RawMessage, given string) (string, error) {
	g, err := geo.DecodeStored("site boundary", geometry)
	if err != nil {
		return "", err
	}
	found := siteStates(g)
	if len(found) == 1 && slices.Contains(jurisdictions, found[0]) {
		if given != "" && given != found[0] {
			return "", &Problem{Code: CodeReportJurisdictionConflict,
				Detail:      fmt.Sprintf("The site lies in %s; a report's jurisdiction cannot override the one its boundary determines.", found[0]),
				FieldErrors: []FieldError{{Field: "jurisdiction", Message: "the site lies in " + found[0] + "; omit jurisdiction or send " + found[0]}}}
		}
		return found[0], nil
	}
	var candidates []string
	for _, c := range found {
		if c == "JBT" {
			// The ACT's laws apply in Jervis Bay Territory; every point of it
			// is also within 3 nautical miles of NSW.
			c = "ACT"
		}
		if slices.Contains(jurisdictions, c) && !slices.Contains(candidates, c) {
			candidates = append(candidates, c)
		}
	}
	where := "lies in no Australian state or territory of the boundary data (offshore or outside it)"
	if len(found) > 0 {
		where = "touches " + strings.Join(found, ", ")
	}
	switch {
	case given == "":
		msg := "required: one of " + strings.Join(jurisdictions, ", ")
		if len(found) > 1 && len(candidates) > 0 {
			msg = "required: one of " + strings.Join(candidates, ", ")
		}
		return "", &Problem{Code: CodeReportJurisdictionRequired,
			Detail:      "The site's jurisdiction cannot be determined from its boundary (it " + where + "); add jurisdiction to the order.",
			FieldErrors: []FieldError{{Field: "jurisdiction", Message: msg}}}
	case len(found) > 1 && !slices.Contains(candidates, given):
		return "", &Problem{Code: CodeReportJurisdictionConflict,
			Detail:      fmt.Sprintf("The site %s; %s is not among them.", where, given),
			FieldErrors: []FieldError{{Field: "jurisdiction", Message: "must be one of " + strings.Join(candidates, ", ")}}}
	}
	return given, nil
}

// siteStates returns, sorted, the codes of the states and territories
// that the site's centroid or vertices lie in or lie within 3 nautical
// miles of (at most two): geo.StatesOf over geo/austates' outlines.
func siteStates(g orb.Geometry) []string { return austates.StatesOf(g) }
