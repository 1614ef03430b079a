package api

import (
	"encoding/json"
	"testing"
	"time"
)

// TestEncodeContextIsEncodingJSON: GET /context's spliced body is byte for
// byte what encoding/json writes for the whole body, field order included.
func TestEncodeContextIsEncodingJSON(t *testing.T) {
	type caps struct {
		Operations                  json.RawMessage `json:"operations"`
		LocationInputs              json.RawMessage `json:"location_inputs"`
		IntegrationCreditsRemaining int64           `json:"integration_credits_remaining"`
	}
	// The whole body: head's fields (embedded, so encoded in its place),
	// then the rest.
	type whole struct {
		contextHead
		Capabilities       caps            `json:"capabilities"`
		Usage              contextUsage    `json:"usage"`
		Limits             json.RawMessage `json:"limits"`
		ReportPriceCredits *int64          `json:"report_price_credits"`
	}
	ops, err := json.Marshal([]capability{
		{OperationID: "get_context", RequiredScopes: []string{}, Available: true},
		{OperationID: "create_report", RequiredScopes: []string{"reports:create"}, ReasonCode: ptr("report_unavailable")},
	})
	if err != nil {
		t.Fatal(err)
	}
	limits, err := json.Marshal(map[string]int64{"max_radius_m": 10000, "reads_per_minute": 600})
	if err != nil {
		t.Fatal(err)
	}
	expiry := time.Date(2026, 11, 26, 1, 2, 3, 456000000, time.UTC)
	for _, tc := range []struct {
		name        string
		head        contextHead
		remaining   int64
		usage       contextUsage
		reportPrice *int64
	}{
		{name: "nulls", head: contextHead{APIVersion: "1", Account: accountRef{ID: "a"}, Scopes: []string{}}},
		{
			name: "every field",
			head: contextHead{APIVersion: "1", Account: accountRef{ID: "0b5c", Name: ptr(`Ä "<site> & co"` + "\u2028\\")},
				PrincipalKind: "integration", Scopes: []string{"context:read", "usage:read"}, DatasetIDs: []string{"nsw-flood", "qld-veg"},
				CreditBalance: ptr(int64(-3)), IntegrationCreditLimit: 5000, IntegrationCreditsUsed: 120},
			remaining:   4880,
			usage:       contextUsage{RetainedResultBytes: 1 << 40, QueuedQueries: 2, RunningQueries: 1, NextResultExpiry: &expiry},
			reportPrice: ptr(int64(250)),
		},
		{name: "no datasets", head: contextHead{APIVersion: "1", Account: accountRef{ID: "b"}, Scopes: []string{}, DatasetIDs: []string{}}, reportPrice: ptr(int64(0))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := encodeContext(tc.head, ops, locationInputsJSON(), tc.remaining, tc.usage, limits, tc.reportPrice)
			if err != nil {
				t.Fatal(err)
			}
			want, err := marshalNoEscape(whole{
				contextHead:  tc.head,
				Capabilities: caps{Operations: ops, LocationInputs: locationInputsJSON(), IntegrationCreditsRemaining: tc.remaining},
				Usage:        tc.usage, Limits: limits, ReportPriceCredits: tc.reportPrice,
			})
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Fatalf("spliced body differs from encoding/json's:\n got %s\nwant %s", got, want)
			}
		})
	}
}
