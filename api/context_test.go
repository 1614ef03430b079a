package api_test

import (
	"encoding/json"
	"slices"
	"testing"

	"siteenv/api/openapi"
	"siteenv/ledger"
)

func TestContextReportsLiveAuthority(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acct := h.account(75)
	full := h.key(acct, nil, ledger.Scopes...)
	m := h.do("GET", "/context", full.Secret, nil).json(t)
	if m["credit_balance"] != float64(75) || m["dataset_ids"] != nil || m["principal_kind"] != "machine" {
		t.Fatalf("context %v", m)
	}
	if m["integration_credit_limit"] != float64(ledger.DefaultSpendLimit) || m["integration_credits_used"] != float64(0) {
		t.Fatalf("integration fields %v", m)
	}
	if got := m["scopes"].([]any); len(got) != 9 {
		t.Fatalf("scopes %v", got)
	}
	ops, err := openapi.Operations()
	if err != nil {
		t.Fatal(err)
	}
	caps := m["capabilities"].(map[string]any)
	listed := map[string]map[string]any{}
	for _, c := range caps["operations"].([]any) {
		c := c.(map[string]any)
		listed[c["operation_id"].(string)] = c
	}
	for _, op := range ops {
		if op.Public {
			continue
		}
		c, ok := listed[op.ID]
		if !ok {
			t.Errorf("capabilities.operations lacks %s", op.ID)
			continue
		}
		if c["available"] == false && c["reason_code"] != "feature_disabled" {
			t.Errorf("%s unavailable to an all-scopes key for %v", op.ID, c["reason_code"])
		}
	}
	if len(listed) != 32 {
		t.Errorf("%d operations listed, want the contract's 32", len(listed))
	}
	li := caps["location_inputs"].(map[string]any)
	if codes := li["supported_epsg_codes"].([]any); len(codes) != 14 || codes[0] != float64(4326) || codes[13] != float64(7858) {
		t.Fatalf("epsg codes %v", codes)
	}

	// A narrow key: no usage:read hides the balance; its datasets narrow the account's.
	narrow := h.key(acct, []string{"flood.planning", "bores"}, "sites:read")
	m = h.do("GET", "/context", narrow.Secret, nil).json(t)
	if m["credit_balance"] != nil {
		t.Fatalf("balance shown without usage:read: %v", m["credit_balance"])
	}
	if ds := m["dataset_ids"].([]any); len(ds) != 2 || ds[0] != "bores" {
		t.Fatalf("dataset_ids %v", ds)
	}
	for _, c := range m["capabilities"].(map[string]any)["operations"].([]any) {
		c := c.(map[string]any)
		if c["operation_id"] == "get_usage" && (c["available"] != false || c["reason_code"] != "scope_insufficient") {
			t.Fatalf("get_usage for a key without usage:read: %v", c)
		}
	}
	none := h.key(acct, []string{}, "sites:read")
	m = h.do("GET", "/context", none.Secret, nil).json(t)
	if ds, ok := m["dataset_ids"].([]any); !ok || len(ds) != 0 {
		t.Fatalf("an empty restriction must be [], got %v", m["dataset_ids"])
	}
	limits := m["limits"].(map[string]any)
	for _, name := range []string{"reads_per_minute", "query_admissions_per_minute", "max_request_bytes", "max_field_errors", "max_idempotency_key_length"} {
		if _, ok := limits[name]; !ok {
			t.Errorf("limits lacks %s", name)
		}
	}
}

func TestUsageShowsCreditsAndCap(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acct := h.account(40)
	limit := int64(25)
	k, err := h.led.CreateKey(h.ctx, ledger.KeyParams{Account: acct, Scopes: []string{"usage:read"}, SpendLimit: &limit})
	if err != nil {
		t.Fatal(err)
	}
	m := h.do("GET", "/usage", k.Secret, nil).json(t)
	c := m["credits"].(map[string]any)
	if c["account_balance"] != float64(40) || c["integration_limit"] != float64(25) || c["integration_remaining"] != float64(25) {
		t.Fatalf("credits %v", c)
	}
	q := m["queries"].(map[string]any)
	if q["running_limit"] != float64(4) || q["queued_limit"] != float64(100) {
		t.Fatalf("queries %v", q)
	}
	if !slices.Contains([]string{"1"}, m["api_version"].(string)) {
		t.Fatal(m["api_version"])
	}
}

// TestLimitNamesMatchTheDocument keeps GET /context's limit names and the
// OpenAPI document's Limits schema the same set.
func TestLimitNamesMatchTheDocument(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas struct {
				Limits struct {
					Properties map[string]any `json:"properties"`
				} `json:"Limits"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapi.Document, &doc); err != nil {
		t.Fatal(err)
	}
	documented := doc.Components.Schemas.Limits.Properties
	// What GET /context reports: the static limits and the engine's and
	// the runner's, read where they are enforced.
	h := setup(t)
	k := h.key(h.account(0), nil, "usage:read")
	r := h.do("GET", "/context", k.Secret, nil)
	reported, ok := r.json(t)["limits"].(map[string]any)
	if r.status != 200 || !ok {
		t.Fatalf("context: %d %s", r.status, r.body)
	}
	for name := range reported {
		if _, ok := documented[name]; !ok {
			t.Errorf("limit %s is not in the document", name)
		}
	}
	for name := range documented {
		if _, ok := reported[name]; !ok {
			t.Errorf("documented limit %s is not reported", name)
		}
	}
}

// TestOperationScopesAreKeyScopes: every operation's scopes are among
// ledger.Scopes, which GET /context's capability list is cached by.
func TestOperationScopesAreKeyScopes(t *testing.T) {
	ops, err := openapi.Operations()
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		for _, sc := range op.Scopes {
			if !slices.Contains(ledger.Scopes, sc) {
				t.Errorf("%s requires %q, not a key scope", op.ID, sc)
			}
		}
	}
}

// TestContextCapabilitiesFollowTheKey: keys of different scopes read
// through the same server each get their own capability list (it is kept
// per scope set).
func TestContextCapabilitiesFollowTheKey(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acct := h.account(0)
	for range 2 {
		for _, scopes := range [][]string{{"sites:read"}, {"layers:read"}, ledger.Scopes} {
			k := h.key(acct, nil, scopes...)
			for _, c := range h.do("GET", "/context", k.Secret, nil).json(t)["capabilities"].(map[string]any)["operations"].([]any) {
				c := c.(map[string]any)
				need := c["required_scopes"].([]any)
				held := true
				for _, sc := range need {
					held = held && slices.Contains(scopes, sc.(string))
				}
				if got := c["reason_code"] == "scope_insufficient"; got == held {
					t.Fatalf("key %v: %s listed %v", scopes, c["operation_id"], c)
				}
			}
		}
	}
}
