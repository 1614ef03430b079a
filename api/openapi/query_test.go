package openapi_test

import (
	"slices"
	"testing"

	"siteenv/api/openapi"
)

// TestOperationQueryParameters: Operations lists, for each operation, exactly
// the query parameters kin-openapi resolves from the document (path-level
// and operation parameters, references followed), arrays marked.
func TestOperationQueryParameters(t *testing.T) {
	doc := loadDoc(t)
	ops, err := openapi.Operations()
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]openapi.Operation{}
	for _, op := range ops {
		byID[op.ID] = op
	}
	for _, e := range allOperations(doc) {
		var want []openapi.QueryParam
		params := append(slices.Clone(doc.Paths.Value(e.path).Parameters), e.op.Parameters...)
		for _, p := range params {
			if p.Value.In != "query" {
				continue
			}
			array := p.Value.Schema != nil && p.Value.Schema.Value.Type.Is("array")
			want = append(want, openapi.QueryParam{Name: p.Value.Name, Array: array})
		}
		got := byID[e.op.OperationID].Query
		if !slices.Equal(got, want) {
			t.Errorf("%s: query parameters %v, want %v", e.op.OperationID, got, want)
		}
	}
	if got := byID["list_activity"].Query; len(got) != 7 || got[0].Name != "cursor" {
		t.Errorf("list_activity query parameters %v", got)
	}
}
