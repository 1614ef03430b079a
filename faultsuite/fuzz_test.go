package faultsuite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"siteenv/api/openapi"
	"siteenv/ledger"
)

// fuzzRequests is the size of the fuzz pass (the issue asks for >= 5,000).
const (
	fuzzRequests = 5200
	fuzzAccounts = 32 // reads are limited per account per minute: spread them
	fuzzWorkers  = 4
)

// paramSpec is one parameter of an operation in the OpenAPI document.
type paramSpec struct {
	name, in string
	schema   map[string]any
}

// opSpec is an operation with its parameters.
type opSpec struct {
	openapi.Operation
	params  []paramSpec
	hasBody bool
}

// loadOpSpecs reads every operation's parameters from the document,
// resolving $refs, so the fuzzer covers exactly the documented surface.
func loadOpSpecs(t *testing.T) []opSpec {
	t.Helper()
	ops, err := openapi.Operations()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(openapi.Document, &doc); err != nil {
		t.Fatal(err)
	}
	resolve := func(v any) map[string]any {
		m, _ := v.(map[string]any)
		for range 8 {
			ref, ok := m["$ref"].(string)
			if !ok {
				break
			}
			cur := any(doc)
			for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
				cur = cur.(map[string]any)[part]
			}
			m, _ = cur.(map[string]any)
		}
		return m
	}
	paths := doc["paths"].(map[string]any)
	var specs []opSpec
	for _, op := range ops {
		item := paths[op.Path].(map[string]any)
		o := item[strings.ToLower(op.Method)].(map[string]any)
		spec := opSpec{Operation: op, hasBody: o["requestBody"] != nil}
		var raw []any
		if ps, ok := item["parameters"].([]any); ok {
			raw = append(raw, ps...)
		}
		if ps, ok := o["parameters"].([]any); ok {
			raw = append(raw, ps...)
		}
		for _, p := range raw {
			pm := resolve(p)
			spec.params = append(spec.params, paramSpec{name: pm["name"].(string), in: pm["in"].(string), schema: resolve(pm["schema"])})
		}
		specs = append(specs, spec)
	}
	return specs
}

// fuzzTenant is an account with resources whose ids the fuzzer uses.
type fuzzTenant struct {
	tenant
	site, query, purchase, portfolio string
}

// fuzzReq is one generated request.
type fuzzReq struct {
	op    *opSpec
	who   int // tenant index
	class string
	req   rawRequest
	// oracle, if set, is a class-specific requirement on the answer (beyond
	// the global ones: no 5xx, a valid response, an exact Problem).
	oracle func(res result) error
}

// gen builds the deterministic request list.
type gen struct {
	rng     *rand.Rand
	tenants []fuzzTenant
	revoked string // a revoked key
	narrow  string // a key with usage:read only
	seq     int
}

func (g *gen) pick(xs ...string) string { return xs[g.rng.IntN(len(xs))] }

// uuid is a random (version 4) UUID drawn from the seeded generator.
func (g *gen) uuid() string {
	var b uuid.UUID
	for i := range b {
		b[i] = byte(g.rng.Uint32())
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return b.String()
}

// validParam is a valid value for a parameter of tenant w.
func (g *gen) validParam(p paramSpec, w int) string {
	tn := g.tenants[w]
	switch p.name {
	case "site_id":
		return tn.site
	case "query_id":
		return tn.query
	case "purchase_id":
		return tn.purchase
	case "portfolio_id":
		return tn.portfolio
	case "report_id", "artifact_id", "revision_id", "request_id":
		return g.uuid()
	case "layer_id":
		return g.pick(freeLayer, pricedLayer)
	case "section_key":
		return g.pick(freeSection, pricedSection)
	case "capability":
		return "dl_" + g.uuid() + "." + strings.Repeat("A", 43)
	case "query":
		return g.pick("Smith Street", "Parramatta", "12/DP1234")
	case "search":
		return g.pick("Site", "fault", "bores")
	case "cursor":
		return g.pick("eyJ4IjoxfQ", "abc.def", strings.Repeat("z", 40))
	case "operation":
		return g.pick("create_site", "get_context", "list_sites")
	case "postcode":
		return "2150"
	case "Idempotency-Key":
		g.seq++
		return fmt.Sprintf("fz-%d-%d", g.rng.Uint32(), g.seq)
	case "Prefer":
		return g.pick("wait=0", "wait=1")
	case "Range":
		return g.pick("bytes=0-10", "bytes=5-")
	}
	if enum, ok := p.schema["enum"].([]any); ok && len(enum) > 0 {
		return fmt.Sprint(enum[g.rng.IntN(len(enum))])
	}
	switch p.schema["type"] {
	case "integer":
		lo, hi := 1, 20
		if v, ok := p.schema["minimum"].(float64); ok {
			lo = int(v)
		}
		if v, ok := p.schema["maximum"].(float64); ok {
			hi = min(int(v), lo+50)
		}
		return fmt.Sprint(lo + g.rng.IntN(hi-lo+1))
	case "boolean":
		return g.pick("true", "false")
	}
	if p.schema["format"] == "date-time" {
		return g.pick("2026-01-01T00:00:00Z", "2025-06-30T09:00:00+10:00")
	}
	return "abc"
}

// selector is a valid location selector of tenant w.
func (g *gen) selector(w int, forResolve bool) map[string]any {
	tn := g.tenants[w]
	kinds := []string{"point", "saved_site", "external_reference", "projected_point", "cadastre", "geometry"}
	if forResolve {
		kinds = append(kinds, "address")
	}
	lon, lat := centreLon+g.rng.Float64()*0.01, centreLat+g.rng.Float64()*0.01
	switch g.pick(kinds...) {
	case "saved_site":
		return map[string]any{"kind": "saved_site", "site_id": tn.site}
	case "external_reference":
		return map[string]any{"kind": "external_reference", "namespace": "crm", "reference": fmt.Sprintf("ref-%d", w)}
	case "projected_point":
		return map[string]any{"kind": "projected_point", "easting": 315000.0 + g.rng.Float64()*100, "northing": 6256000.0, "epsg": 7856}
	case "cadastre":
		return map[string]any{"kind": "cadastre", "jurisdiction": "NSW", "cadastre_ids": []any{"12/DP1234"}}
	case "geometry":
		d := 0.001
		return map[string]any{"kind": "geometry", "crs": "OGC:CRS84", "geometry": map[string]any{"type": "Polygon", "coordinates": []any{[]any{
			[]any{lon, lat}, []any{lon + d, lat}, []any{lon + d, lat + d}, []any{lon, lat + d}, []any{lon, lat}}}}}
	case "address":
		return map[string]any{"kind": "address", "address_id": "a_" + g.uuid()}
	}
	return map[string]any{"kind": "point", "longitude": lon, "latitude": lat}
}

// body is a valid request body for op, of tenant w.
func (g *gen) body(op *opSpec, w int) map[string]any {
	tn := g.tenants[w]
	switch op.ID {
	case "resolve_location":
		return map[string]any{"location": g.selector(w, true)}
	case "create_site":
		b := map[string]any{"site": g.selector(w, false)}
		if g.rng.IntN(2) == 0 {
			b["name"] = g.pick("Depot", "North paddock", "Yard 7")
		}
		return b
	case "update_site":
		var pf any = tn.portfolio
		if g.rng.IntN(2) == 0 {
			pf = nil
		}
		return map[string]any{"name": g.pick("Renamed", "Other"), "portfolio_id": pf}
	case "create_acquisition":
		return map[string]any{"site_id": tn.site, "section_keys": []any{g.pick(freeSection, pricedSection)}}
	case "create_query":
		return map[string]any{"site": map[string]any{"kind": "saved_site", "site_id": tn.site}, "layer_ids": []any{freeLayer},
			"radius_m": float64(g.rng.IntN(2000)), "page_size": float64(1 + g.rng.IntN(50)), "include_geometry": g.rng.IntN(2) == 0}
	case "create_report":
		return map[string]any{"site_id": tn.site, "jurisdiction": "NSW"}
	}
	return map[string]any{}
}

// placeholder marks where raw bytes go into a marshalled body.
const placeholder = "@@FZ@@"

func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// nodes lists the paths to every value below root (keys and indices).
func nodes(v any, path []any, out *[][]any) {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range x {
				if !yield(k) {
					return
				}
			}
		}) {
			p := append(slices.Clone(path), k)
			*out = append(*out, p)
			nodes(x[k], p, out)
		}
	case []any:
		for i := range x {
			p := append(slices.Clone(path), i)
			*out = append(*out, p)
			nodes(x[i], p, out)
		}
	}
}

func getAt(root any, path []any) any {
	cur := root
	for _, p := range path {
		switch k := p.(type) {
		case string:
			cur = cur.(map[string]any)[k]
		case int:
			cur = cur.([]any)[k]
		}
	}
	return cur
}

func setAt(root any, path []any, v any) {
	parent := getAt(root, path[:len(path)-1])
	switch k := path[len(path)-1].(type) {
	case string:
		parent.(map[string]any)[k] = v
	case int:
		parent.([]any)[k] = v
	}
}

func kindOf(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case float64, int:
		return "number"
	case bool:
		return "bool"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "null"
}

// stringLeaves lists paths to string values.
func stringLeaves(root any) [][]any {
	var all, out [][]any
	nodes(root, nil, &all)
	for _, p := range all {
		if _, ok := getAt(root, p).(string); ok {
			out = append(out, p)
		}
	}
	return out
}

// objects lists paths to objects (the root is the empty path).
func objects(root any) [][]any {
	out := [][]any{{}}
	var all [][]any
	nodes(root, nil, &all)
	for _, p := range all {
		if _, ok := getAt(root, p).(map[string]any); ok {
			out = append(out, p)
		}
	}
	return out
}

// invalidJSONOracle requires invalid_json (400) unless something checked
// earlier answered (rate limit, an operation not implemented).
func invalidJSONOracle(res result) error {
	if res.status == 429 || res.problem().Code == "feature_disabled" {
		return nil
	}
	if res.status != 400 || res.problem().Code != "invalid_json" {
		return fmt.Errorf("want 400 invalid_json, got %d %s", res.status, res.problem().Code)
	}
	return nil
}

// refusedOracle requires a 4xx answer: the input is wrong.
func refusedOracle(res result) error {
	if res.status < 400 || res.status >= 500 {
		return fmt.Errorf("bad input was accepted: %d", res.status)
	}
	return nil
}

// unknownParamOracle requires 400 invalid_request naming the parameter.
func unknownParamOracle(name string) func(result) error {
	return func(res result) error {
		p := res.problem()
		if res.status == 429 || p.Code == "feature_disabled" {
			return nil
		}
		if res.status != 400 || p.Code != "invalid_request" {
			return fmt.Errorf("unknown query parameter %q: want 400 invalid_request, got %d %s", name, res.status, p.Code)
		}
		for _, fe := range p.FieldErrors {
			if fe.Field == name {
				return nil
			}
		}
		return fmt.Errorf("unknown query parameter %q is not named in field_errors %+v", name, p.FieldErrors)
	}
}

// next generates request i.
func (g *gen) next(specs []opSpec, i int) fuzzReq {
	op := &specs[g.rng.IntN(len(specs))]
	w := i % len(g.tenants)
	fr := fuzzReq{op: op, who: w}
	path := map[string]string{}
	var query [][2]string
	var header [][2]string
	var pathParams, queryParams []paramSpec
	for _, p := range op.params {
		switch p.in {
		case "path":
			path[p.name] = g.validParam(p, w)
			pathParams = append(pathParams, p)
		case "query":
			queryParams = append(queryParams, p)
			if p.name == "query" || g.rng.IntN(3) == 0 {
				query = append(query, [2]string{p.name, g.validParam(p, w)})
			}
		case "header":
			header = append(header, [2]string{p.name, g.validParam(p, w)})
		}
	}
	if !op.Public {
		header = append(header, [2]string{"Authorization", "Bearer " + g.tenants[w].key})
	}
	var body any
	if op.hasBody {
		body = g.body(op, w)
		header = append(header, [2]string{"Content-Type", "application/json"})
	}
	var rawBody []byte
	method := op.Method
	rawPath := ""

	classes := []string{"valid", "query.unknown", "query.badvalue", "query.nul", "query.utf8", "query.huge", "query.dup",
		"header", "header", "method", "path.unknown"}
	if len(pathParams) > 0 {
		classes = append(classes, "path.mutate", "path.mutate", "path.mutate")
	}
	if op.hasBody {
		classes = append(classes, "body.truncated", "body.dupkey", "body.dupkey", "body.wrongtype", "body.wrongtype", "body.nul", "body.nul",
			"body.rawctl", "body.utf8", "body.utf8", "body.deep", "body.garbage", "body.garbage")
	}
	fr.class = g.pick(classes...)
	knownQuery := func() paramSpec {
		if len(queryParams) == 0 {
			return paramSpec{name: g.pick("search", "limit", "site_id"), schema: map[string]any{}}
		}
		return queryParams[g.rng.IntN(len(queryParams))]
	}

	switch fr.class {
	case "query.unknown":
		name := g.pick("dry_run", "foo", "debug", "limit_", "Site_id", "callback", "api_key", "x")
		query = append(query, [2]string{name, g.pick("true", "1", "")})
		if !op.Public {
			fr.oracle = unknownParamOracle(name)
		}
	case "query.badvalue":
		p := knownQuery()
		query = slices.DeleteFunc(query, func(kv [2]string) bool { return kv[0] == p.name })
		query = append(query, [2]string{p.name, g.pick("", "abc", "-1", "0", "1.5", "99999999999999999999", "null", "TRUE",
			"2026-01-01T00:00:00", "2026-13-45T99:00:00Z", "nsw", "00000000-0000-0000-0000-000000000000", strings.ToUpper(g.uuid()),
			"' OR 1=1 --", "%", "\u00e9\u00e9", "😀")})
	case "query.nul":
		p := knownQuery()
		query = slices.DeleteFunc(query, func(kv [2]string) bool { return kv[0] == p.name })
		v := g.validParam(p, w)
		at := g.rng.IntN(len(v) + 1)
		query = append(query, [2]string{p.name, v[:at] + "\x00" + v[at:]})
	case "query.utf8":
		p := knownQuery()
		query = slices.DeleteFunc(query, func(kv [2]string) bool { return kv[0] == p.name })
		v := g.validParam(p, w)
		at := g.rng.IntN(len(v) + 1)
		query = append(query, [2]string{p.name, v[:at] + g.pick("\xff", "\xc3\x28", "\xed\xa0\x80", "\xf0\x28\x8c\x28", "\xc0\xaf") + v[at:]})
	case "query.huge":
		p := knownQuery()
		query = slices.DeleteFunc(query, func(kv [2]string) bool { return kv[0] == p.name })
		query = append(query, [2]string{p.name, strings.Repeat(g.pick("a", "9", "é"), 300+g.rng.IntN(9000))})
	case "query.dup":
		p := knownQuery()
		query = append(query, [2]string{p.name, g.validParam(p, w)}, [2]string{p.name, g.validParam(p, w)})
	case "header":
		var want string
		header, want = g.mutateHeader(header, w, op.hasBody)
		if want != "" && !op.Public {
			fr.oracle = codeOracle(want)
		}
	case "method":
		var other []string
		for _, m := range []string{"GET", "POST", "PATCH", "DELETE", "PUT", "OPTIONS"} {
			documented := false
			for _, s := range specs {
				if s.Path == op.Path && s.Method == m {
					documented = true
				}
			}
			if !documented {
				other = append(other, m)
			}
		}
		method = g.pick(other...)
	case "path.unknown":
		// (Not "//": fasthttp normalises it to "/", the same resource.)
		rawPath = g.pick("/api/v1/nope", "/api/v1/sites/a/b/c/d", "/api/v2/sites", "/API/V1/sites",
			"/api/v1/%00", "/api/v1/sites%00", "/api", "/", "/api/v1/queries/"+g.uuid()+"/nope")
	case "path.mutate":
		p := pathParams[g.rng.IntN(len(pathParams))]
		other := g.tenants[(w+1)%len(g.tenants)]
		path[p.name] = g.pick(g.uuid(), "not-a-uuid", strings.ToUpper(g.validParam(p, w)),
			strings.ReplaceAll(g.uuid(), "-", ""), strings.Repeat("x", 5000), "\x00", "\xff\xfe", "..", "a/b",
			other.site, other.query, other.purchase, "' OR 1=1 --", "😀", " ", g.validParam(p, w)+"\x00", "{"+p.name+"}",
			"A", strings.Repeat("a", 161), "-bad", "%")
	case "body.truncated":
		b := marshal(body)
		rawBody = b[:1+g.rng.IntN(max(len(b)-1, 1))]
		fr.oracle = invalidJSONOracle
	case "body.dupkey":
		objs := objects(body)
		target := objs[g.rng.IntN(len(objs))]
		obj := getAt(body, target).(map[string]any)
		if len(obj) == 0 {
			obj["site_id"] = g.tenants[w].site
		}
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range obj {
				if !yield(k) {
					return
				}
			}
		})
		k := keys[g.rng.IntN(len(keys))]
		obj[placeholder] = g.dupValue(obj[k])
		rawBody = bytes.Replace(marshal(body), []byte(`"`+placeholder+`"`), marshal(k), 1)
		fr.oracle = invalidJSONOracle
	case "body.wrongtype":
		var all [][]any
		nodes(body, nil, &all)
		if len(all) == 0 {
			rawBody = []byte(g.pick("[]", `"x"`, "1", "true"))
			break
		}
		p := all[g.rng.IntN(len(all))]
		old := kindOf(getAt(body, p))
		var repl any
		for {
			repl = []any{"str", 123.0, true, []any{}, map[string]any{}, []any{1.0, 2.0}, map[string]any{"a": 1.0}, placeholder}[g.rng.IntN(8)]
			if repl == placeholder && old != "number" {
				break // 1e400: a number too large for float64
			}
			if repl != placeholder && kindOf(repl) != old {
				break
			}
		}
		setAt(body, p, repl)
		rawBody = bytes.Replace(marshal(body), []byte(`"`+placeholder+`"`), []byte("1e400"), 1)
		fr.oracle = refusedOracle
	case "body.nul", "body.rawctl", "body.utf8":
		leaves := stringLeaves(body)
		if len(leaves) == 0 {
			if o, ok := body.(map[string]any); ok {
				o["zz"] = "x"
				leaves = [][]any{{"zz"}}
			}
		}
		p := leaves[g.rng.IntN(len(leaves))]
		v := getAt(body, p).(string)
		at := g.rng.IntN(len(v) + 1)
		setAt(body, p, v[:at]+placeholder+v[at:])
		inject := map[string]string{
			"body.nul":    g.pick(`\u0000`, `\u0000\u0000`),
			"body.rawctl": g.pick("\x00", "\x01", "\n", "\x1f"),
			"body.utf8":   g.pick("\xff", "\xc3\x28", "\xed\xa0\x80", "\xf0\x28\x8c\x28", "\xc0\xaf", "\xfe\xfe\xff"),
		}[fr.class]
		rawBody = bytes.Replace(marshal(body), []byte(placeholder), []byte(inject), 1)
		if fr.class != "body.nul" {
			fr.oracle = invalidJSONOracle
		}
	case "body.deep":
		depth := []int{64, 500, 5000, 10001, 100000}[g.rng.IntN(5)]
		open, closeTok := "[", "]"
		if g.rng.IntN(2) == 0 {
			open, closeTok = `{"a":`, "}"
		}
		deep := strings.Repeat(open, depth) + "1" + strings.Repeat(closeTok, depth)
		var all [][]any
		nodes(body, nil, &all)
		if len(all) == 0 {
			rawBody = []byte(deep)
		} else {
			setAt(body, all[g.rng.IntN(len(all))], placeholder)
			rawBody = bytes.Replace(marshal(body), []byte(`"`+placeholder+`"`), []byte(deep), 1)
		}
		fr.oracle = refusedOracle
	case "body.garbage":
		valid := marshal(body)
		switch g.rng.IntN(12) {
		case 0:
			rawBody = []byte{}
		case 1:
			rawBody = []byte("null")
		case 2:
			rawBody = []byte("[]")
		case 3:
			rawBody = []byte(`"just a string"`)
		case 4:
			rawBody = []byte("<xml/>")
		case 5:
			rawBody = append([]byte("\xef\xbb\xbf"), valid...) // BOM
		case 6:
			rawBody = append(slices.Clone(valid), []byte(" trailing")...)
			fr.oracle = invalidJSONOracle
		case 7:
			rawBody = append(slices.Clone(valid), valid...)
			fr.oracle = invalidJSONOracle
		case 8:
			rawBody = bytes.Repeat([]byte(" "), 2<<20) // over 1 MiB
		case 9:
			if o, ok := body.(map[string]any); ok {
				o["unknown_field_zz"] = 1.0
			}
			rawBody = marshal(body)
		case 10:
			if o, ok := body.(map[string]any); ok {
				o["blob"] = strings.Repeat("b", 900_000)
			}
			rawBody = marshal(body)
		default:
			rawBody = []byte("{}")
		}
	}

	target := rawPath
	if target == "" {
		target = "/api/v1" + op.Path
		for name, v := range path {
			target = strings.Replace(target, "{"+name+"}", url.PathEscape(v), 1)
		}
	}
	if len(query) > 0 {
		var qs []string
		for _, kv := range query {
			qs = append(qs, url.QueryEscape(kv[0])+"="+url.QueryEscape(kv[1]))
		}
		target += "?" + strings.Join(qs, "&")
	}
	if rawBody == nil && body != nil {
		rawBody = marshal(body)
	}
	fr.req = rawRequest{method: method, target: target, header: header, body: rawBody}
	if method == "GET" || method == "DELETE" || method == "OPTIONS" {
		if !op.hasBody || fr.class == "method" {
			fr.req.body = nil
		}
	}
	return fr
}

// dupValue is a second value for a duplicated key: same type where possible,
// so only the duplication is wrong.
func (g *gen) dupValue(v any) any {
	switch x := v.(type) {
	case string:
		if _, err := uuid.Parse(x); err == nil {
			return g.tenants[g.rng.IntN(len(g.tenants))].site
		}
		return x + "-second"
	case float64:
		return x + 1
	case bool:
		return !x
	}
	return v
}

// codeOracle requires the Problem code (a rate limit or an operation that
// is not implemented may answer first).
func codeOracle(code string) func(result) error {
	return func(res result) error {
		p := res.problem()
		if res.status == 429 || (p.Code == "feature_disabled" && code != "unauthenticated" && code != "credential_revoked") {
			return nil
		}
		if p.Code != code {
			return fmt.Errorf("want %s, got %d %s", code, res.status, p.Code)
		}
		return nil
	}
}

// mutateHeader changes one header of the request; want is the Problem code
// the change must produce, where it is certain ("" otherwise).
func (g *gen) mutateHeader(h [][2]string, w int, hasBody bool) (out [][2]string, want string) {
	switch n := g.rng.IntN(16); {
	case n == 0:
		want = "unauthenticated"
	case n == 5:
		want = "credential_revoked"
	case n == 7 && hasBody:
		want = "unsupported_media_type"
	default:
		return g.mutateHeaderN(h, w, n), ""
	}
	return g.mutateHeaderN(h, w, map[string]int{"unauthenticated": 0, "credential_revoked": 5, "unsupported_media_type": 16}[want]), want
}

func (g *gen) mutateHeaderN(h [][2]string, w int, n int) [][2]string {
	set := func(name, value string) [][2]string {
		out := slices.DeleteFunc(slices.Clone(h), func(kv [2]string) bool { return strings.EqualFold(kv[0], name) })
		if value != "" {
			out = append(out, [2]string{name, value})
		}
		return out
	}
	key := g.tenants[w].key
	switch n {
	case 16:
		return set("Content-Type", g.pick("text/plain", "application/xml", "multipart/form-data"))
	case 0:
		return set("Authorization", "")
	case 1:
		return set("Authorization", "Bearer "+g.pick("sk_nope", "x", strings.Repeat("k", 4000), key[:len(key)/2]))
	case 2:
		return set("Authorization", g.pick("Basic dXNlcjpwYXNz", "Bearer", "Bearer  "+key, "bearer "+key, "Token "+key, key))
	case 3:
		return set("Authorization", "Bearer "+key+g.pick("\x00", "\xff", " x"))
	case 4:
		return append(set("Authorization", "Bearer "+key), [2]string{"Authorization", "Bearer " + g.tenants[(w+1)%len(g.tenants)].key})
	case 5:
		return set("Authorization", "Bearer "+g.revoked)
	case 6:
		return set("Authorization", "Bearer "+g.narrow)
	case 7:
		return set("Content-Type", g.pick("text/plain", "application/xml", "application/json; charset=latin1", "multipart/form-data", "application/json\x00", "\xff"))
	case 8:
		return set("Content-Type", "")
	case 9:
		return set("Idempotency-Key", g.pick("", "has space", strings.Repeat("k", 129), "bad\x00key", "ключ", "a/b"))
	case 10:
		return append(h, [2]string{"Idempotency-Key", "second-key"})
	case 11:
		return set("Prefer", g.pick("wait=9", "wait=-1", "wait=abc", "wait=3, respond-async", "wait=1\x00"))
	case 12:
		return set("Range", g.pick("bytes=abc", "bytes=5-1", "bytes=0-1,2-3", "items=0-1", "bytes=99999999999999999999-"))
	case 13:
		return append(h, [2]string{"X-Fuzz", g.pick("\xff\xfe", "a\x00b", strings.Repeat("h", 8000))})
	case 14:
		return append(h, [2]string{"Accept", g.pick("application/xml", "*/*;q=0", "\xff")})
	}
	return append(h, [2]string{"X-Request-Id", g.pick("injected", g.uuid(), "\x00")})
}

// TestFuzzEveryRoute: a seeded pass of >= 5,000 requests over every route of
// the OpenAPI document, mixing valid and mutated path parameters, query
// parameters, headers and JSON bodies. No answer may be a 5xx (no outage is
// injected here), every answer must conform to the document, every error
// must be an exact Problem whose code, status and retryable flag match the
// status table, and mutations with a definite answer get it (unknown query
// parameters: 400 naming them; malformed JSON, duplicate keys, invalid UTF-8:
// invalid_json; wrong types: refused).
func TestFuzzEveryRoute(t *testing.T) {
	t.Parallel()
	seed := *seedFlag
	t.Logf("fuzz seed %d (replay with -faultsuite.seed=%d)", seed, seed)
	dsn := newDatabase(t)
	e := env{dataDir: scratchDir(t), dsn: dsn}
	l := openLedger(t, dsn)
	loadCatalogue(t, e, l)
	// Priced, so report orders reach the real path (and builds run beside
	// the fuzzing) instead of answering feature_disabled.
	cli(t, e, "admin", "config", "set", "report-price", "5")
	srv := startServer(t, e)
	c := newClient(t, func() string { return srv.addr })

	ctx := context.Background()
	g := &gen{rng: rand.New(rand.NewPCG(seed, seed^0x5eed))}
	for i := range fuzzAccounts {
		tn := newTenant(t, l, fmt.Sprintf("Fuzz %d", i), tenantCredits)
		pf, err := l.CreatePortfolio(ctx, tn.account, "Fuzz portfolio")
		if err != nil {
			t.Fatal(err)
		}
		ft := fuzzTenant{tenant: tn, portfolio: pf.ID.String()}
		ft.site = createSite(t, c, tn.key, i, map[string]any{"external_reference": map[string]any{"namespace": "crm", "reference": fmt.Sprintf("ref-%d", i)}})
		ft.purchase = buy(t, c, tn.key, ft.site, "fz-buy-"+uuid.NewString())
		ft.query = runQuery(t, c, tn.key, ft.site, "fz-q-"+uuid.NewString())
		g.tenants = append(g.tenants, ft)
	}
	k, err := l.CreateKey(ctx, ledger.KeyParams{Account: g.tenants[0].account, Scopes: ledger.Scopes})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.RevokeKey(ctx, k.KeyID); err != nil {
		t.Fatal(err)
	}
	g.revoked = k.Secret
	narrow, err := l.CreateKey(ctx, ledger.KeyParams{Account: g.tenants[1].account, Scopes: []string{"usage:read"}})
	if err != nil {
		t.Fatal(err)
	}
	g.narrow = narrow.Secret

	specs := loadOpSpecs(t)
	reqs := make([]fuzzReq, fuzzRequests)
	for i := range reqs {
		reqs[i] = g.next(specs, i)
	}

	v := c.v
	var (
		mu        sync.Mutex
		byStatus  = map[int]int{}
		byOp      = map[string]int{}
		failures  []string
		failCount = map[string]int{}
		docGap    int
	)
	// Up to 4 examples per mutation class, so every kind of failure shows.
	fail := func(class, msg string) {
		mu.Lock()
		defer mu.Unlock()
		failCount[class]++
		if failCount[class] <= 4 {
			failures = append(failures, class+": "+msg)
		}
	}
	work := make(chan int)
	var wg sync.WaitGroup
	for range fuzzWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				fr := reqs[i]
				label := fmt.Sprintf("#%d %s %s %q", i, fr.op.ID, fr.req.method, clip(fr.req.target, 160))
				res, err := srv.send(fr.req)
				mu.Lock()
				byOp[fr.op.ID]++
				if err == nil {
					byStatus[res.status]++
				} else {
					byStatus[0]++
				}
				mu.Unlock()
				if err != nil {
					fail(fr.class, fmt.Sprintf("%s: no HTTP answer: %v", label, err))
					continue
				}
				if res.status >= 500 {
					fail(fr.class, fmt.Sprintf("%s: %d: %s", label, res.status, clip(string(res.body), 400)))
					continue
				}
				if fr.op.ID == "get_openapi" && res.status == 400 && res.problem().Code == "invalid_request" && checkStatusTable(res) == nil {
					// A request fasthttp cannot parse (a NUL in a header, a
					// request line over 32 KiB) is refused with 400 before
					// routing, but the document lists no 400 for
					// get_openapi: a gap in the (frozen) document, not a
					// service defect. Counted and reported, not failed.
					mu.Lock()
					docGap++
					mu.Unlock()
					continue
				}
				if err := validate(v, srv.addr, fr.req, res); err != nil {
					fail(fr.class, fmt.Sprintf("%s: %v", label, clip(err.Error(), 1200)))
					continue
				}
				if fr.oracle != nil {
					if err := fr.oracle(res); err != nil {
						fail(fr.class, fmt.Sprintf("%s: %v: %s", label, err, clip(string(res.body), 300)))
					}
				}
			}
		}()
	}
	for i := range reqs {
		work <- i
	}
	close(work)
	wg.Wait()

	statuses := slices.Sorted(func(yield func(int) bool) {
		for s := range byStatus {
			if !yield(s) {
				return
			}
		}
	})
	var parts []string
	for _, s := range statuses {
		name := fmt.Sprint(s)
		if s == 0 {
			name = "no-answer"
		}
		parts = append(parts, fmt.Sprintf("%s:%d", name, byStatus[s]))
	}
	t.Logf("fuzz: seed %d, %d requests over %d operations; by status %s", seed, len(reqs), len(byOp), strings.Join(parts, " "))
	if docGap > 0 {
		t.Logf("fuzz: %d unparseable requests to get_openapi answered 400 invalid_request, a status its operation does not document", docGap)
	}
	for _, s := range specs {
		if byOp[s.ID] == 0 {
			t.Errorf("operation %s got no request", s.ID)
		}
	}
	if len(failCount) > 0 {
		classes := slices.Sorted(func(yield func(string) bool) {
			for k := range failCount {
				if !yield(k) {
					return
				}
			}
		})
		var fc []string
		for _, k := range classes {
			fc = append(fc, fmt.Sprintf("%s:%d", k, failCount[k]))
		}
		sort.Strings(failures)
		t.Errorf("fuzz failures by mutation class: %s; first %d:\n%s", strings.Join(fc, " "), len(failures), strings.Join(failures, "\n"))
	}
	if !srv.running() {
		t.Fatal("the server died during the fuzz pass")
	}
	if out := cli(t, e, "admin", "ledger", "check"); out["ok"] != true {
		t.Errorf("siteenv admin ledger check after the fuzz pass: %v", out)
	}
}

// clip shortens s to about n bytes for a failure message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("...(%d bytes)", len(s))
}
