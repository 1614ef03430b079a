package api_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"siteenv/ledger"
)

func TestActivityFeed(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acct := h.account(0)
	k := h.key(acct, nil, "usage:read", "sites:read")
	sibling := h.key(acct, nil, "usage:read") // another integration of the same account

	var ids []string
	for i := 0; i < 5; i++ {
		h.clock.Advance(time.Second)
		r := h.do("GET", "/context", k.Secret, nil)
		ids = append(ids, r.header.Get("X-Request-Id"))
	}
	h.clock.Advance(time.Second)
	h.do("GET", "/usage", sibling.Secret, nil) // the sibling's, not ours
	h.clock.Advance(time.Second)
	h.do("GET", "/reports", k.Secret, nil) // scope_insufficient, audited as denied

	r := h.do("GET", "/activity?limit=2", k.Secret, nil)
	m := r.json(t)
	items := m["activity"].([]any)
	if len(items) != 2 {
		t.Fatalf("%d items", len(items))
	}
	first := items[0].(map[string]any)
	if first["operation"] != "list_reports" || first["outcome"] != "denied" || first["error_code"] != "scope_insufficient" {
		t.Fatalf("newest item %v", first)
	}
	if items[1].(map[string]any)["request_id"] != ids[4] {
		t.Fatal("not newest first")
	}
	// Follow the cursor to the end: 6 of ours, none of the sibling's, no feed reads.
	seen := 2
	cur := m["page"].(map[string]any)["next_cursor"].(string)
	for cur != "" {
		m = h.do("GET", "/activity?limit=2&cursor="+url.QueryEscape(cur), k.Secret, nil).json(t)
		for _, it := range m["activity"].([]any) {
			if it.(map[string]any)["operation"] == "list_activity" {
				t.Fatal("reads of the feed are listed")
			}
			seen++
		}
		cur = ""
		if nc, ok := m["page"].(map[string]any)["next_cursor"].(string); ok {
			cur = nc
		}
	}
	if seen != 6 {
		t.Fatalf("traversal saw %d items, want 6", seen)
	}

	// Filters.
	m = h.do("GET", "/activity?outcome=completed&operation=get_context", k.Secret, nil).json(t)
	if n := len(m["activity"].([]any)); n != 5 {
		t.Fatalf("filtered: %d", n)
	}
	m = h.do("GET", "/activity?request_id="+ids[2], k.Secret, nil).json(t)
	if n := len(m["activity"].([]any)); n != 1 {
		t.Fatalf("request_id filter: %d", n)
	}
	from := url.QueryEscape(time.Date(2026, 11, 22, 9, 0, 12, 0, time.UTC).Format(time.RFC3339))
	before := url.QueryEscape(time.Date(2026, 11, 22, 19, 0, 14, 0, time.FixedZone("AEST", 10*3600)).Format(time.RFC3339))
	m = h.do("GET", "/activity?created_from="+from+"&created_before="+before, k.Secret, nil).json(t)
	if n := len(m["activity"].([]any)); n != 2 {
		t.Fatalf("date range [12s, 14s): %d items", n)
	}
	// Items carry no key material.
	if raw := h.do("GET", "/activity", k.Secret, nil).body; strings.Contains(string(raw), k.Secret) || strings.Contains(string(raw), k.KeyID.String()) {
		t.Fatal("activity exposes credential identifiers")
	}
}

func TestCursorsAreBoundAndSigned(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acct := h.account(0)
	k := h.key(acct, nil, "usage:read")
	other := h.key(h.account(0), nil, "usage:read")
	for i := 0; i < 3; i++ {
		h.do("GET", "/context", k.Secret, nil)
	}
	m := h.do("GET", "/activity?limit=1", k.Secret, nil).json(t)
	cur := m["page"].(map[string]any)["next_cursor"].(string)
	if r := h.do("GET", "/activity?limit=1&cursor="+url.QueryEscape(cur), k.Secret, nil); r.status != 200 {
		t.Fatalf("valid cursor refused: %s", r.body)
	}
	tampered := []byte(cur)
	tampered[3] ^= 1
	cases := map[string]struct {
		key, query string
	}{
		"tampered":        {k.Secret, "limit=1&cursor=" + url.QueryEscape(string(tampered))},
		"truncated":       {k.Secret, "limit=1&cursor=" + url.QueryEscape(cur[:len(cur)-2])},
		"garbage":         {k.Secret, "limit=1&cursor=not-a-cursor"},
		"another account": {other.Secret, "limit=1&cursor=" + url.QueryEscape(cur)},
		"changed filters": {k.Secret, "limit=1&outcome=completed&cursor=" + url.QueryEscape(cur)},
	}
	for name, c := range cases {
		r := h.do("GET", "/activity?"+c.query, c.key, nil)
		if r.status != 400 {
			t.Fatalf("%s: status %d", name, r.status)
		}
		r.problem(t, "invalid_cursor", 400)
		assertProblemShape(t, r)
	}
	// A different page size keeps the cursor valid (it is not a filter).
	if r := h.do("GET", "/activity?limit=2&cursor="+url.QueryEscape(cur), k.Secret, nil); r.status != 200 {
		t.Fatalf("limit change refused: %s", r.body)
	}
	h.clock.Advance(2 * time.Hour)
	r := h.do("GET", "/activity?limit=1&cursor="+url.QueryEscape(cur), k.Secret, nil)
	r.problem(t, "invalid_cursor", 400)
}

func TestActivityRechecksDatasetRestrictions(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.publish("nsw.flood", "flood", 0, []string{"NSW"}, "")
	acct := h.account(0)
	all := h.key(acct, nil, "layers:read", "usage:read")
	h.do("GET", "/layers/nsw.flood", all.Secret, nil)
	// A restricted key of the same integration does not see records about the layer.
	narrow, err := h.led.CreateKey(h.ctx, ledger.KeyParams{Account: acct, Scopes: []string{"usage:read"}, Datasets: []string{"other.layer"}, Integration: &all.IntegrationID})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range h.do("GET", "/activity", narrow.Secret, nil).json(t)["activity"].([]any) {
		if it.(map[string]any)["resource_id"] == "nsw.flood" {
			t.Fatal("a restricted key sees activity about a layer outside its datasets")
		}
	}
	seen := false
	for _, it := range h.do("GET", "/activity", all.Secret, nil).json(t)["activity"].([]any) {
		seen = seen || it.(map[string]any)["resource_id"] == "nsw.flood"
	}
	if !seen {
		t.Fatal("the unrestricted key lost the record")
	}
}
