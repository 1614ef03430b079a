package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"siteenv/ledger"
)

// TestProblemForEachErrorClass: every class of error the ledger returns
// becomes the Problem the contract fixes for it, the database's message stays
// in the server log (at WARN for outages and refused input, ERROR for bugs)
// and never reaches the body.
func TestProblemForEachErrorClass(t *testing.T) {
	t.Parallel()
	const secretDetail = "relation secret_table"
	cases := []struct {
		name      string
		err       error
		code      Code
		status    int
		retryable bool
		fields    []string
		level     string
	}{
		{"NUL in a named argument", fmt.Errorf("save: %w", &ledger.InputError{Field: "name", Param: 3, SQLState: "22021", Message: secretDetail}),
			CodeInvalidRequest, 400, false, []string{"name"}, "WARN"},
		{"refused value, argument unknown, field from the handler", at(&ledger.InputError{SQLState: "22P02", Message: secretDetail}, atLayer, "layer_ids[0]"),
			CodeInvalidRequest, 400, false, []string{"layer_ids[0]"}, "WARN"},
		{"refused value, nothing known", &ledger.InputError{SQLState: "22001", Message: secretDetail}, CodeInvalidRequest, 400, false, nil, "WARN"},
		{"foreign key", &ledger.DBError{Class: ledger.ErrInvalid, SQLState: "23503", Message: secretDetail}, CodeInvalidRequest, 400, false, nil, "WARN"},
		{"connection lost", &ledger.DBError{Class: ledger.ErrUnavailable, Message: secretDetail}, CodeServiceUnavailable, 503, true, nil, "WARN"},
		{"serialization failure", &ledger.DBError{Class: ledger.ErrUnavailable, SQLState: "40001", Message: secretDetail}, CodeServiceUnavailable, 503, true, nil, "WARN"},
		{"request deadline", context.DeadlineExceeded, CodeServiceUnavailable, 503, true, nil, "WARN"},
		{"unexpected conflict", &ledger.DBError{Class: ledger.ErrConflict, SQLState: "23505", Message: secretDetail}, CodeInternalError, 500, true, nil, "ERROR"},
		{"bug in a query", &ledger.DBError{Class: ledger.ErrInternal, SQLState: "42P01", Message: secretDetail}, CodeInternalError, 500, true, nil, "ERROR"},
		{"anything else", errors.New(secretDetail), CodeInternalError, 500, true, nil, "ERROR"},
		{"not found", ledger.ErrNotFound, CodeNotFound, 404, false, nil, ""},
		{"unknown key", at(ledger.ErrNotFound, atAuthentication, ""), CodeUnauthenticated, 401, false, nil, ""},
		{"revoked key", at(ledger.ErrKeyRevoked, atAuthentication, ""), CodeCredentialRevoked, 401, false, nil, ""},
		{"missing layer", &placedError{err: ledger.ErrNotFound, place: atLayer, field: "layer_ids[1]", name: "x.y"}, CodeNotFound, 404, false, []string{"layer_ids[1]"}, ""},
		{"purchase site missing", &placedError{err: ledger.ErrNotFound, place: atAcquisition, field: "site_id"}, CodeNotFound, 404, false, []string{"site_id"}, ""},
		{"unknown sections", &placedError{err: &ledger.UnknownSectionsError{Keys: []string{"b"}}, place: atAcquisition, field: "site_id", items: []string{"a", "b"}},
			CodeNotFound, 404, false, []string{"section_keys[1]"}, ""},
		{"capacity", ledger.ErrCapacity, CodeCapacityExceeded, 429, true, nil, ""},
		{"reference conflict", at(ledger.ErrReferenceConflict, atSiteRegistration, ""), CodeSiteReferenceConflict, 409, false, []string{"external_reference"}, ""},
		{"create not permitted", at(ledger.ErrCreateNotPermitted, atQuerySite, ""), CodeScopeInsufficient, 403, false, nil, ""},
		{"a Problem is itself", &Problem{Code: CodePaidSiteImmutable, Detail: "x"}, CodePaidSiteImmutable, 409, false, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			p := problemFor(context.Background(), log, c.err)
			b := p.body("rid")
			if b.Code != c.code || b.Status != c.status || b.Retryable != c.retryable || (p.retryAfter() != "") != c.retryable {
				t.Fatalf("%+v, want %s %d retryable=%v", b, c.code, c.status, c.retryable)
			}
			var fields []string
			for _, fe := range b.FieldErrors {
				fields = append(fields, fe.Field)
			}
			if fmt.Sprint(fields) != fmt.Sprint(c.fields) {
				t.Fatalf("field errors %v, want %v", fields, c.fields)
			}
			enc, _ := json.Marshal(b)
			if bytes.Contains(enc, []byte(secretDetail)) {
				t.Fatalf("the database's message reached the body: %s", enc)
			}
			if c.level == "" {
				return
			}
			cause := strings.Contains(c.err.Error(), secretDetail)
			if !strings.Contains(logs.String(), "level="+c.level) || (cause && !strings.Contains(logs.String(), "secret_table")) {
				t.Fatalf("log %q, want a %s line with the cause", logs.String(), c.level)
			}
		})
	}
}

// TestIdempotencyConflictRetryability: a reused key with a changed request is
// final; a duplicate still in flight is retryable with Retry-After: 1.
func TestIdempotencyConflictRetryability(t *testing.T) {
	t.Parallel()
	changed := newProblem(CodeIdempotencyConflict, "changed")
	inFlight := &Problem{Code: CodeIdempotencyConflict, Retryable: true, RetryAfter: 1}
	if changed.body("r").Retryable || changed.retryAfter() != "" {
		t.Fatal("a changed request is retryable")
	}
	if !inFlight.body("r").Retryable || inFlight.retryAfter() != "1" {
		t.Fatal("an in-flight duplicate is not retryable")
	}
}
