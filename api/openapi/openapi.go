// Package openapi holds the machine-readable description of API version 1:
// an OpenAPI 3.1.0 document (openapi.json, embedded as Document) that covers
// every operation, parameter, header, status and body of the contract.
//
// The document is the single source for the operation list: Operations parses
// it with encoding/json only, so the service can derive, for example, the
// capabilities.operations of GET /context without linking an OpenAPI library.
// Response validation for tests lives in the openapitest subpackage.
package openapi

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Document is the OpenAPI 3.1.0 document served at GET /api/v1/openapi.json.
// It must not be modified.
//
//go:embed openapi.json
var Document []byte

// DocsPage is the human-readable reference served at GET /api/v1/docs: one
// self-contained HTML page rendered from Document by `make docs` (Redocly
// build-docs, pinned in tools/openapi). Its <meta name="siteenv-openapi-sha256">
// names the document it was built from; a test fails when that is not
// Document. It must not be modified.
//
//go:embed docs.html
var DocsPage []byte

// Operation is one operation of the document.
type Operation struct {
	// ID is the operationId, snake_case (e.g. "create_query").
	ID string
	// Method is the upper-case HTTP method.
	Method string
	// Path is the path template relative to the server URL /api/v1,
	// e.g. "/sites/{site_id}".
	Path string
	// Scopes are the base scopes the operation requires, in document order.
	// Empty for an operation any valid key may call (get_context) and for a
	// public operation.
	Scopes []string
	// Public is true when the operation needs no API key (security: []).
	Public bool
	// Query lists the declared query parameters (path-level and operation
	// parameters, references resolved), in document order. The server refuses
	// any other query parameter.
	Query []QueryParam
}

// QueryParam is one declared query parameter.
type QueryParam struct {
	Name string
	// Array is true when the schema is an array, so the name may repeat.
	Array bool
}

// parameter is the part of a Parameter Object (or a Reference Object to
// one) that Operations reads.
type parameter struct {
	Ref    string          `json:"$ref"`
	Name   string          `json:"name"`
	In     string          `json:"in"`
	Schema json.RawMessage `json:"schema"`
}

// components are the reusable objects parameters may refer to.
type components struct {
	Parameters map[string]parameter       `json:"parameters"`
	Schemas    map[string]json.RawMessage `json:"schemas"`
}

// resolve follows a parameter's reference into components/parameters.
func (c components) resolve(p parameter) (parameter, error) {
	if p.Ref == "" {
		return p, nil
	}
	name, ok := strings.CutPrefix(p.Ref, "#/components/parameters/")
	q, found := c.Parameters[name]
	if !ok || !found || q.Ref != "" {
		return parameter{}, fmt.Errorf("unresolvable parameter reference %q", p.Ref)
	}
	return q, nil
}

// isArray reports whether a schema (possibly a reference into
// components/schemas) has type array.
func (c components) isArray(schema json.RawMessage) (bool, error) {
	for range 8 {
		if len(schema) == 0 {
			return false, nil
		}
		var s struct {
			Ref  string          `json:"$ref"`
			Type json.RawMessage `json:"type"`
		}
		if err := json.Unmarshal(schema, &s); err != nil {
			return false, err
		}
		if s.Ref == "" {
			var one string
			var many []string
			if json.Unmarshal(s.Type, &one) == nil {
				return one == "array", nil
			}
			if json.Unmarshal(s.Type, &many) == nil {
				for _, t := range many {
					if t == "array" {
						return true, nil
					}
				}
			}
			return false, nil
		}
		name, ok := strings.CutPrefix(s.Ref, "#/components/schemas/")
		if !ok {
			return false, fmt.Errorf("unresolvable schema reference %q", s.Ref)
		}
		schema = c.Schemas[name]
	}
	return false, fmt.Errorf("schema reference chain too long")
}

// queryParams lists the query parameters of a path item's and an
// operation's parameter lists; the operation's override the path's by name.
func (c components) queryParams(lists ...[]parameter) ([]QueryParam, error) {
	var out []QueryParam
	for _, list := range lists {
		for _, raw := range list {
			p, err := c.resolve(raw)
			if err != nil {
				return nil, err
			}
			if p.In != "query" {
				continue
			}
			array, err := c.isArray(p.Schema)
			if err != nil {
				return nil, fmt.Errorf("parameter %s: %w", p.Name, err)
			}
			q := QueryParam{Name: p.Name, Array: array}
			if i := slices.IndexFunc(out, func(o QueryParam) bool { return o.Name == p.Name }); i >= 0 {
				out[i] = q
				continue
			}
			out = append(out, q)
		}
	}
	return out, nil
}

// httpMethods are the Path Item fields that hold operations.
var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// Operations parses Document and returns its operations sorted by Path, then
// Method. It is safe for concurrent use; each call returns a fresh slice.
func Operations() ([]Operation, error) {
	var doc struct {
		Security   []map[string][]string                 `json:"security"`
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components components                            `json:"components"`
	}
	if err := json.Unmarshal(Document, &doc); err != nil {
		return nil, fmt.Errorf("openapi: parse document: %w", err)
	}
	var ops []Operation
	for path, item := range doc.Paths {
		var pathParams []parameter
		if raw, ok := item["parameters"]; ok {
			if err := json.Unmarshal(raw, &pathParams); err != nil {
				return nil, fmt.Errorf("openapi: parse %s parameters: %w", path, err)
			}
		}
		for _, method := range httpMethods {
			raw, ok := item[method]
			if !ok {
				continue
			}
			var o struct {
				OperationID string                 `json:"operationId"`
				Security    *[]map[string][]string `json:"security"`
				Parameters  []parameter            `json:"parameters"`
			}
			if err := json.Unmarshal(raw, &o); err != nil {
				return nil, fmt.Errorf("openapi: parse %s %s: %w", strings.ToUpper(method), path, err)
			}
			if o.OperationID == "" {
				return nil, fmt.Errorf("openapi: %s %s has no operationId", strings.ToUpper(method), path)
			}
			security := doc.Security
			if o.Security != nil {
				security = *o.Security
			}
			if len(security) > 1 {
				return nil, fmt.Errorf("openapi: %s %s: alternative security requirements are not supported", strings.ToUpper(method), path)
			}
			query, err := doc.Components.queryParams(pathParams, o.Parameters)
			if err != nil {
				return nil, fmt.Errorf("openapi: %s %s: %w", strings.ToUpper(method), path, err)
			}
			op := Operation{ID: o.OperationID, Method: strings.ToUpper(method), Path: path, Public: len(security) == 0, Query: query}
			for _, requirement := range security {
				for _, scopes := range requirement {
					op.Scopes = append(op.Scopes, scopes...)
				}
			}
			ops = append(ops, op)
		}
	}
	sort.Slice(ops, func(i, j int) bool {
		if ops[i].Path != ops[j].Path {
			return ops[i].Path < ops[j].Path
		}
		return ops[i].Method < ops[j].Method
	})
	return ops, nil
}
