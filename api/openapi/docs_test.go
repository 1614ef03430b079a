package openapi_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"siteenv/api/openapi"
)

// TestDocsPageIsCurrent fails when api/openapi/docs.html was not rebuilt
// (`make docs`) after openapi.json changed: the page names the SHA-256 of the
// document it was rendered from. It also checks the page is self-contained,
// so /api/v1/docs works offline.
func TestDocsPageIsCurrent(t *testing.T) {
	m := regexp.MustCompile(`<meta name="siteenv-openapi-sha256" content="([0-9a-f]{64})">`).FindSubmatch(openapi.DocsPage)
	if m == nil {
		t.Fatal("docs.html names no siteenv-openapi-sha256: rebuild it with `make docs`")
	}
	sum := sha256.Sum256(openapi.Document)
	if got, want := string(m[1]), hex.EncodeToString(sum[:]); got != want {
		t.Fatalf("docs.html was built from openapi.json %s, the document is now %s: run `make docs` and commit api/openapi/docs.html", got[:12], want[:12])
	}
	page := string(openapi.DocsPage)
	// Nothing is fetched when the page loads: no external script, style
	// sheet, font or image.
	for _, re := range []string{
		`<script[^>]+src=`, `<link[^>]+href=["']?(https?:)?//`, `<img[^>]+src=["']?(https?:)?//`,
		`@import\s+url\(["']?(https?:)?//`, `@font-face[^}]*url\(["']?(https?:)?//`,
	} {
		if loc := regexp.MustCompile(re).FindStringIndex(page); loc != nil {
			t.Errorf("docs.html loads an external resource: %q", page[loc[0]:min(loc[1]+80, len(page))])
		}
	}
	// Every operation is on the page.
	ops, err := openapi.Operations()
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		if !strings.Contains(page, op.ID) {
			t.Errorf("docs.html does not mention operation %s", op.ID)
		}
	}
}

// TestDocumentDescribed checks, without node, what the linters (make lint:
// Redocly recommended, Spectral spectral:oas) need most often: a licence and
// a contact, a description on every tag and operation, and typed array items,
// so a generated client's Position is numbers (see TestGeneratedClient).
func TestDocumentDescribed(t *testing.T) {
	var doc struct {
		Info struct {
			License *struct {
				Name       string `json:"name"`
				Identifier string `json:"identifier"`
				URL        string `json:"url"`
			} `json:"license"`
			Contact *struct {
				Name string `json:"name"`
			} `json:"contact"`
		} `json:"info"`
		Tags []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"tags"`
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapi.Document, &doc); err != nil {
		t.Fatal(err)
	}
	if l := doc.Info.License; l == nil || l.Name == "" || (l.Identifier == "") == (l.URL == "") {
		t.Errorf("info.license %+v: want a name and exactly one of identifier, url", l)
	}
	if doc.Info.Contact == nil {
		t.Error("info.contact missing")
	}
	tags := map[string]bool{}
	for _, tg := range doc.Tags {
		tags[tg.Name] = true
		if strings.TrimSpace(tg.Description) == "" {
			t.Errorf("tag %s has no description", tg.Name)
		}
	}
	for path, item := range doc.Paths {
		for method, raw := range item {
			var op struct {
				OperationID string   `json:"operationId"`
				Summary     string   `json:"summary"`
				Description string   `json:"description"`
				Tags        []string `json:"tags"`
			}
			if json.Unmarshal(raw, &op) != nil || op.OperationID == "" {
				continue // path-level parameters, not an operation
			}
			if strings.TrimSpace(op.Description) == "" || strings.TrimSpace(op.Summary) == "" {
				t.Errorf("%s %s (%s): summary and description required", method, path, op.OperationID)
			}
			for _, tg := range op.Tags {
				if !tags[tg] {
					t.Errorf("%s: tag %s is not declared", op.OperationID, tg)
				}
			}
		}
	}
	// Every array schema types its items (prefixItems alone leaves a
	// generated client with []interface{}).
	var walk func(where string, v any)
	walk = func(where string, v any) {
		switch n := v.(type) {
		case map[string]any:
			if n["type"] == "array" {
				if _, ok := n["items"]; !ok {
					t.Errorf("%s: array schema without items", where)
				}
			}
			for k, c := range n {
				walk(where+"/"+k, c)
			}
		case []any:
			for i, c := range n {
				walk(where+"/"+strconv.Itoa(i), c)
			}
		}
	}
	var all any
	if err := json.Unmarshal(openapi.Document, &all); err != nil {
		t.Fatal(err)
	}
	walk("#", all)
	var pos struct {
		Items struct {
			Type string `json:"type"`
		} `json:"items"`
	}
	if err := json.Unmarshal(doc.Components.Schemas["Position"], &pos); err != nil || pos.Items.Type != "number" {
		t.Errorf("Position items %+v: want type number", pos.Items)
	}
}
