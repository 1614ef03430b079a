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
	"sort"
	"strings"
)

// Document is the OpenAPI 3.1.0 document served at GET /api/v1/openapi.json.
// It must not be modified.
//
//go:embed openapi.json
var Document []byte

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
}

// httpMethods are the Path Item fields that hold operations.
var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// Operations parses Document and returns its operations sorted by Path, then
// Method. It is safe for concurrent use; each call returns a fresh slice.
func Operations() ([]Operation, error) {
	var doc struct {
		Security []map[string][]string                 `json:"security"`
		Paths    map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(Document, &doc); err != nil {
		return nil, fmt.Errorf("openapi: parse document: %w", err)
	}
	var ops []Operation
	for path, item := range doc.Paths {
		for _, method := range httpMethods {
			raw, ok := item[method]
			if !ok {
				continue
			}
			var o struct {
				OperationID string                 `json:"operationId"`
				Security    *[]map[string][]string `json:"security"`
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
			op := Operation{ID: o.OperationID, Method: strings.ToUpper(method), Path: path, Public: len(security) == 0}
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
