package api

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// queryParams reads a request's query string, collecting every problem as a
// field error so one response names all bad parameters.
type queryParams struct {
	get func(name string) (string, bool)
	fe  []FieldError
}

// checkParams finds, for every operation alike, query parameters the OpenAPI
// document does not declare for it, a declared non-array parameter given more
// than once, and path or query values that are not valid UTF-8 or hold NUL
// (PostgreSQL text cannot store NUL; such input is the client's error, never
// an outage). Server.serve refuses them before the handler runs, or for a
// read lets the handler's query report them together with its own findings.
func (r *request) checkParams() []FieldError {
	var fe []FieldError
	add := func(field, msg string) { fe = append(fe, FieldError{Field: field, Message: msg}) }
	for _, name := range sortedKeys(r.params) {
		if msg := badText(r.params[name]); msg != "" {
			add(name, msg)
		}
	}
	declared := map[string]bool{} // name -> array
	for _, p := range r.op.Query {
		declared[p.Name] = p.Array
	}
	seen := map[string]int{}
	var bad map[string]string
	r.http.QueryArgs().VisitAll(func(k, v []byte) {
		seen[string(k)]++
		if msg := badText(string(v)); msg != "" {
			if bad == nil {
				bad = map[string]string{}
			}
			bad[string(k)] = msg
		}
	})
	for _, k := range sortedKeys(seen) {
		array, ok := declared[k]
		switch {
		case !ok:
			add(k, "unknown query parameter")
		case seen[k] > 1 && !array:
			add(k, "must be given at most once")
		case bad[k] != "":
			add(k, bad[k])
		}
	}
	return fe
}

// paramProblem is the invalid_request naming bad query or path parameters.
func paramProblem(fe []FieldError) *Problem {
	return invalid("Some query or path parameters are invalid.", fe...)
}

// badText says what is wrong with a text input PostgreSQL could not store
// as given, or "" when it is fine.
func badText(s string) string {
	switch {
	case !utf8.ValidString(s):
		return "must be valid UTF-8"
	case strings.IndexByte(s, 0) >= 0:
		return "must not contain NUL characters"
	}
	return ""
}

// query checks the query string holds only the allowed names, each once.
// Problems Server.serve found (checkParams) come first in its report.
func (r *request) query(allowed ...string) *queryParams {
	q := &queryParams{fe: slices.Clone(r.paramErrs)}
	r.paramsRead = true
	seen := map[string]int{}
	values := map[string]string{}
	r.http.QueryArgs().VisitAll(func(k, v []byte) {
		seen[string(k)]++
		values[string(k)] = string(v)
	})
	for _, k := range sortedKeys(seen) {
		switch {
		case !slices.Contains(allowed, k):
			q.add(k, "unknown query parameter")
		case seen[k] > 1:
			q.add(k, "must be given at most once")
		}
	}
	q.get = func(name string) (string, bool) { v, ok := values[name]; return v, ok }
	return q
}

// add notes a problem with field; the first noted for a field stands.
func (q *queryParams) add(field, msg string) {
	if slices.ContainsFunc(q.fe, func(fe FieldError) bool { return fe.Field == field }) {
		return
	}
	q.fe = append(q.fe, FieldError{Field: field, Message: msg})
}

// err is the collected invalid_request, or nil.
func (q *queryParams) err() error {
	if len(q.fe) == 0 {
		return nil
	}
	return invalid("Some query parameters are invalid.", q.fe...)
}

// limit reads the page size: default def, 1..max.
func (q *queryParams) limit(def, max int) int {
	v, ok := q.get("limit")
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		q.add("limit", fmt.Sprintf("must be an integer from 1 to %d", max))
		return def
	}
	return n
}

// str reads an optional string of minLen..maxLen characters matching re (if any).
func (q *queryParams) str(name string, minLen, maxLen int, re *regexp.Regexp) string {
	v, ok := q.get(name)
	if !ok {
		return ""
	}
	n := utf8.RuneCountInString(v)
	switch {
	case !utf8.ValidString(v):
		q.add(name, "must be valid UTF-8")
	case n < minLen || n > maxLen:
		q.add(name, fmt.Sprintf("must be %d to %d characters", minLen, maxLen))
	case re != nil && !re.MatchString(v):
		q.add(name, "must match "+re.String())
	default:
		return v
	}
	return ""
}

// enum reads an optional value from a fixed set.
func (q *queryParams) enum(name string, values ...string) string {
	v, ok := q.get(name)
	if !ok {
		return ""
	}
	if !slices.Contains(values, v) {
		q.add(name, "must be one of "+strings.Join(values, ", "))
		return ""
	}
	return v
}

// uuid reads an optional UUID.
func (q *queryParams) uuid(name string) *uuid.UUID {
	v, ok := q.get(name)
	if !ok {
		return nil
	}
	id, err := parseUUID(v)
	if err != nil {
		q.add(name, "must be a UUID")
		return nil
	}
	return &id
}

// time reads an optional RFC 3339 date-time, which must carry a timezone.
func (q *queryParams) time(name string) *time.Time {
	v, ok := q.get(name)
	if !ok {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		q.add(name, "must be an RFC 3339 date-time with an explicit timezone, e.g. 2026-01-31T09:00:00+10:00")
		return nil
	}
	return &t
}

// boolean reads an optional true/false.
func (q *queryParams) boolean(name string, def bool) bool {
	v, ok := q.get(name)
	if !ok {
		return def
	}
	switch v {
	case "true":
		return true
	case "false":
		return false
	}
	q.add(name, "must be true or false")
	return def
}

// cursor reads the raw cursor string (verified later against its binding).
func (q *queryParams) cursor() string {
	v, ok := q.get("cursor")
	if !ok {
		return ""
	}
	if v == "" || len(v) > maxCursorLen {
		q.add("cursor", fmt.Sprintf("must be 1 to %d characters", maxCursorLen))
		return ""
	}
	return v
}

// parseUUID accepts only the canonical 36-character form.
func parseUUID(s string) (uuid.UUID, error) {
	if len(s) != 36 {
		return uuid.Nil, fmt.Errorf("not a uuid")
	}
	return uuid.Parse(s)
}
