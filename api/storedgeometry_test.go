package api_test

import (
	"strings"
	"testing"
)

// A stored geometry that cannot be decoded (damaged data, or a bug that
// wrote it) is an internal error the client is told about and may retry,
// never a geometry silently missing: a layer's coverage read as "unknown"
// would tell the client nothing is known where the service knows it
// cannot read what it has.
func TestDamagedStoredCoverageIsAnError(t *testing.T) {
	t.Parallel()
	h := setup(t)
	const damaged = `{"type":"Polygon","coordinates":[[[150.5,-34.2],"damaged"]]}`
	h.publish("nsw.flood", "flood", 20, []string{"NSW"}, damaged)
	acct := h.account(100)
	k := h.key(acct, nil, "layers:read")
	site := h.site(acct)
	for _, path := range []string{"/layers?site_id=" + site.String(), "/layers/nsw.flood?site_id=" + site.String()} {
		r := h.do("GET", path, k.Secret, nil)
		p := r.problem(t, "internal_error", 500)
		if d := p["detail"].(string); strings.Contains(d, "damaged") || strings.Contains(d, "coverage") {
			t.Errorf("%s: the detail tells the cause: %s", path, d)
		}
	}
	// Without a site the coverage is only stated, not read.
	if l := h.do("GET", "/layers/nsw.flood", k.Secret, nil).json(t)["layer"].(map[string]any); l["coverage"] != "partial" {
		t.Errorf("without a site: coverage %v", l["coverage"])
	}
}
