package openapitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"siteenv/api/openapi"
)

// bodySchemas compiles each response body schema of the document once, as
// JSON Schema 2020-12 (what kin-openapi validates an OpenAPI 3.1 body with),
// and keeps it: kin-openapi compiles a body's schema anew for every response
// it validates, which took about half of an API test's CPU.
type bodySchemas struct {
	mu       sync.Mutex
	compiler *jsonschema.Compiler
	compiled map[*openapi3.SchemaRef]*jsonschema.Schema
}

// docURL is the document's address among the compiler's resources; a body
// schema's references (#/components/schemas/...) resolve in it.
const docURL = "mem:///openapi.json"

func newBodySchemas() (*bodySchemas, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(openapi.Document))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	// The formats are kin-openapi's: uuid as Check documents it, the
	// string formats kin-openapi defines, and any other format accepted.
	formats := map[string]bool{}
	collectFormats(doc, formats)
	for name := range formats {
		c.RegisterFormat(&jsonschema.Format{Name: name, Validate: func(v any) error {
			s, ok := v.(string)
			switch {
			case !ok:
				return nil
			case name == "uuid":
				if !uuidRE.MatchString(s) {
					return fmt.Errorf("not a UUID")
				}
				return nil
			}
			if f, ok := openapi3.SchemaStringFormats[name]; ok {
				return f.Validate(s)
			}
			return nil
		}})
	}
	c.AssertFormat()
	if err := c.AddResource(docURL, doc); err != nil {
		return nil, err
	}
	return &bodySchemas{compiler: c, compiled: map[*openapi3.SchemaRef]*jsonschema.Schema{}}, nil
}

func collectFormats(node any, formats map[string]bool) {
	switch node := node.(type) {
	case map[string]any:
		if f, ok := node["format"].(string); ok {
			formats[f] = true
		}
		for _, v := range node {
			collectFormats(v, formats)
		}
	case []any:
		for _, v := range node {
			collectFormats(v, formats)
		}
	}
}

// schema returns ref compiled: a reference into the document as it is, an
// inline schema as a resource of its own whose references point into the
// document.
func (b *bodySchemas) schema(ref *openapi3.SchemaRef) (*jsonschema.Schema, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s, ok := b.compiled[ref]; ok {
		return s, nil
	}
	loc := docURL + ref.Ref
	if !strings.HasPrefix(ref.Ref, "#/") {
		raw, err := json.Marshal(ref.Value)
		if err != nil {
			return nil, err
		}
		raw = bytes.ReplaceAll(raw, []byte(`"$ref":"#/`), []byte(`"$ref":"`+docURL+`#/`))
		inline, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		loc = fmt.Sprintf("mem:///body-%d.json", len(b.compiled))
		if err := b.compiler.AddResource(loc, inline); err != nil {
			return nil, err
		}
	}
	s, err := b.compiler.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("compile %s: %w", loc, err)
	}
	b.compiled[ref] = s
	return s, nil
}

// jsonBody reports whether a body of Content-Type ct is JSON.
func jsonBody(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// validateBody checks a JSON body against the schema of the response the
// operation documents for status and the body's media type; it reports
// what kin-openapi's body check reports, its reasons as the validator gives
// them.
func (b *bodySchemas) validateBody(response *openapi3.Response, ct string, body []byte, add func(string)) {
	if response == nil || len(response.Content) == 0 {
		return
	}
	media := response.Content.Get(ct)
	if media == nil {
		add(fmt.Sprintf("response header Content-Type has unexpected value: %q", ct))
		return
	}
	if media.Schema == nil {
		return
	}
	value, err := jsonschema.UnmarshalJSON(bytes.NewReader(body)) // numbers kept exact, nothing after the value
	if err != nil {
		add(fmt.Sprintf("failed to decode response body: %v", err))
		return
	}
	s, err := b.schema(media.Schema)
	if err != nil {
		add(err.Error())
		return
	}
	if err := s.Validate(value); err != nil {
		// The validator's message lists each failing place in the body,
		// a line each.
		add("response body doesn't match schema: " + strings.ReplaceAll(err.Error(), "\n", "; "))
	}
}
