package api

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"siteenv/api/openapi"
)

// checkProblem fails unless err is a Problem with one of codes, within the
// contract's bounds.
func checkProblem(t *testing.T, err error, codes ...string) {
	t.Helper()
	var p *Problem
	if !errors.As(err, &p) {
		t.Fatalf("not a Problem: %T %v", err, err)
	}
	known := false
	for _, c := range codes {
		known = known || string(p.Code) == c
	}
	if !known {
		t.Fatalf("code %s, want one of %v", p.Code, codes)
	}
	if _, ok := problemKinds[p.Code]; !ok {
		t.Fatalf("unknown code %s", p.Code)
	}
	b := p.body(uuid.NewString())
	if len(b.FieldErrors) > maxFieldErrors || len(b.Detail) > maxDetailLen {
		t.Fatal("problem exceeds contract bounds")
	}
}

// FuzzQueryParams: any query string and path value, on any operation, give
// either parameters that are declared, given once, valid UTF-8 and free of
// NUL, or an invalid_request naming what is wrong; never a panic.
func FuzzQueryParams(f *testing.F) {
	ops, err := openapi.Operations()
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"", "limit=1", "limit=1&limit=2", "dry_run=true", "cursor=abc&limit=0", "search=%00", "search=%FF",
		"site_id=0190b2a4-0000-7000-8000-000000000001", "created_from=2026-01-01T00:00:00Z", "include_geometry=maybe", "a&&b==c", "%zz=1", "=x", "query=ab%C3%28"} {
		f.Add(s, "nsw.flood", uint8(0))
		f.Add(s, "a\x00b", uint8(7))
	}
	f.Add("limit=5", "\xff", uint8(13))
	f.Fuzz(func(t *testing.T, query, pathValue string, opIndex uint8) {
		op := ops[int(opIndex)%len(ops)]
		var ctx fasthttp.RequestCtx
		ctx.Request.SetRequestURI("/api/v1/x?" + query)
		r := &request{http: &ctx, op: &op, params: map[string]string{"layer_id": pathValue}}
		fe := r.checkParams()
		for _, e := range fe {
			if e.Message == "" { // a query name may be empty ("?=x")
				t.Fatalf("empty field error %+v", e)
			}
		}
		if len(fe) == 0 {
			if strings.IndexByte(pathValue, 0) >= 0 || !utf8.ValidString(pathValue) {
				t.Fatalf("path value %q accepted", pathValue)
			}
			seen := map[string]bool{}
			ctx.QueryArgs().VisitAll(func(k, v []byte) {
				declared := false
				for _, p := range op.Query {
					declared = declared || p.Name == string(k)
				}
				if !declared || seen[string(k)] || badText(string(v)) != "" {
					t.Fatalf("%s: parameter %q=%q accepted", op.ID, k, v)
				}
				seen[string(k)] = true
			})
		} else {
			checkProblem(t, paramProblem(fe), "invalid_request")
			r.paramErrs = fe
		}
		// The handlers' parsers never panic and report as invalid_request.
		var names []string
		for _, p := range op.Query {
			names = append(names, p.Name)
		}
		q := r.query(names...)
		q.limit(20, 100)
		q.str("search", 1, 200, nil)
		q.enum("kind", "address", "parcel")
		q.uuid("site_id")
		q.time("created_from")
		q.boolean("include_geometry", true)
		q.cursor()
		if err := q.err(); err != nil {
			checkProblem(t, err, "invalid_request")
		} else if len(fe) > 0 {
			t.Fatalf("query accepted what checkParams refused: %+v", fe)
		}
	})
}

// FuzzPreferWait: the Prefer header gives a wait of 0 to 3 seconds exactly
// when it is wait=0 to wait=3, and otherwise an invalid_request naming it.
func FuzzPreferWait(f *testing.F) {
	for _, s := range []string{"wait=0", "wait=3", "wait=4", "wait=03", "wait=1 ", "respond-async, wait=2", "", "WAIT=1", "wait=\x00"} {
		f.Add([]byte(s), false)
	}
	f.Add([]byte(nil), true)
	f.Fuzz(func(t *testing.T, h []byte, absent bool) {
		if absent {
			h = nil
		} else if h == nil {
			h = []byte{}
		}
		wait, err := preferWait(h)
		valid := h == nil || len(h) == 6 && string(h[:5]) == "wait=" && h[5] >= '0' && h[5] <= '3'
		if valid != (err == nil) {
			t.Fatalf("%q: err %v", h, err)
		}
		if err != nil {
			checkProblem(t, err, "invalid_request")
			return
		}
		if want := 0; h != nil {
			want = int(h[5] - '0')
			if wait != want {
				t.Fatalf("%q: wait %d", h, wait)
			}
		} else if wait != 0 {
			t.Fatalf("absent: wait %d", wait)
		}
	})
}
