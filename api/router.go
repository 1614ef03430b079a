package api

import (
	"sort"
	"strings"

	"siteenv/api/openapi"
)

// route is one operation of the OpenAPI document bound to its handler.
type route struct {
	op       openapi.Operation
	segments []string // "{name}" marks a parameter
	handler  handlerFunc
}

// router matches paths below /api/v1 to operations. Built once; read-only after.
type router struct {
	routes []*route
}

func newRouter(ops []openapi.Operation, handlers map[string]handlerFunc) *router {
	r := &router{}
	for _, op := range ops {
		r.routes = append(r.routes, &route{
			op:       op,
			segments: strings.Split(strings.Trim(op.Path, "/"), "/"),
			handler:  handlers[op.ID],
		})
	}
	return r
}

// match finds the route for method and path (relative to /api/v1). HEAD
// matches the GET route (RFC 9110 9.3.2: the server omits the body). When
// the path exists under other methods only, allow lists them.
func (r *router) match(method, path string) (rt *route, params map[string]string, allow []string) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	want := method
	if method == "HEAD" {
		want = "GET"
	}
	for _, cand := range r.routes {
		p, ok := matchSegments(cand.segments, segs)
		if !ok {
			continue
		}
		if cand.op.Method == want {
			return cand, p, nil
		}
		allow = append(allow, cand.op.Method)
		if cand.op.Method == "GET" {
			allow = append(allow, "HEAD")
		}
	}
	sort.Strings(allow)
	return nil, nil, allow
}

func matchSegments(pattern, segs []string) (map[string]string, bool) {
	if len(pattern) != len(segs) {
		return nil, false
	}
	var params map[string]string
	for i, p := range pattern {
		if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}") {
			if segs[i] == "" {
				return nil, false
			}
			if params == nil {
				params = map[string]string{}
			}
			params[p[1:len(p)-1]] = segs[i]
			continue
		}
		if p != segs[i] {
			return nil, false
		}
	}
	return params, true
}
