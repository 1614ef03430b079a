package api

import (
	"encoding/json"
	"errors"
)

// ReportJurisdiction exposes the jurisdiction rule of POST /reports: the
// jurisdiction decided, or the code of the Problem refusing the order.
func ReportJurisdiction(geometry json.RawMessage, given string) (jurisdiction, code string, err error) {
	j, err := reportJurisdiction(geometry, given)
	var p *Problem
	if errors.As(err, &p) {
		return "", string(p.Code), nil
	}
	return j, "", err
}

// SiteStates exposes the states a site's centroid and vertices lie in.
var SiteStates = siteStates
