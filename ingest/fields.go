package ingest

import (
	"fmt"
	"sort"
	"sync"

	"siteenv/tiles"
)

// Source columns outside the layer's field schema. Publishers ship extra
// columns (an ogr2ogr GeoPackage made from a CSV keeps its lat/lon) and
// their own names for the schema's fields; the layer file says what to do
// with them (field_map, unknown_fields) and the summary lists it.

// Policies for source columns that are not fields of the layer's schema
// (LayerDef.UnknownFields).
const (
	UnknownFieldsReject = "reject" // the row is rejected (the default)
	UnknownFieldsDrop   = "drop"   // the column is dropped, and listed in the summary
	// UnknownFieldsKeep keeps the column as a nullable string field of the
	// release's field_schema under its own name (see keep.go).
	UnknownFieldsKeep = "keep"
)

// fieldPolicy applies field_map and unknown_fields to each row's
// properties. Safe for concurrent use.
type fieldPolicy struct {
	schema tiles.FieldSchema
	rename map[string]string // source column -> schema field
	drop   bool
	keep   map[string]bool // columns kept as string fields (set before rows are read)

	mu struct {
		sync.Mutex
		dropped map[string]bool
		renamed map[string]string
	}
}

func newFieldPolicy(schema tiles.FieldSchema, rename map[string]string, drop bool) *fieldPolicy {
	p := &fieldPolicy{schema: schema, rename: rename, drop: drop}
	p.mu.dropped, p.mu.renamed = map[string]bool{}, map[string]string{}
	return p
}

// apply returns props with source columns renamed and, under the drop
// policy, columns outside the schema removed. props is copied before any
// change. A renamed column whose target is also present is an error.
func (p *fieldPolicy) apply(props map[string]any) (map[string]any, error) {
	if p == nil || (len(p.rename) == 0 && !p.drop && len(p.keep) == 0) {
		return props, nil
	}
	var out map[string]any
	var dropped []string
	var renamed [][2]string
	for k, v := range props {
		if to, ok := p.rename[k]; ok {
			if out == nil {
				out = copyProps(props)
			}
			if _, clash := props[to]; clash {
				return nil, fmt.Errorf("column %q is mapped to field %q, which the row also has", k, to)
			}
			delete(out, k)
			out[to] = v
			renamed = append(renamed, [2]string{k, to})
			continue
		}
		if p.keep[k] {
			switch v.(type) {
			case nil, string:
			default:
				s, err := keptText(v)
				if err != nil {
					return nil, fmt.Errorf("column %q: %v", k, err)
				}
				if out == nil {
					out = copyProps(props)
				}
				out[k] = s
			}
			continue
		}
		if _, ok := p.schema.Lookup(k); !ok && p.drop {
			if out == nil {
				out = copyProps(props)
			}
			delete(out, k)
			dropped = append(dropped, k)
		}
	}
	if out == nil {
		return props, nil
	}
	if len(dropped) > 0 || len(renamed) > 0 {
		p.mu.Lock()
		for _, k := range dropped {
			p.mu.dropped[k] = true
		}
		for _, r := range renamed {
			p.mu.renamed[r[0]] = r[1]
		}
		p.mu.Unlock()
	}
	return out, nil
}

func copyProps(props map[string]any) map[string]any {
	out := make(map[string]any, len(props))
	for k, v := range props {
		out[k] = v
	}
	return out
}

// report returns the columns dropped (sorted) and renamed (source ->
// field) over the run.
func (p *fieldPolicy) report() (dropped []string, renamed map[string]string) {
	if p == nil {
		return nil, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.mu.dropped {
		dropped = append(dropped, k)
	}
	sort.Strings(dropped)
	if len(p.mu.renamed) > 0 {
		renamed = make(map[string]string, len(p.mu.renamed))
		for k, v := range p.mu.renamed {
			renamed[k] = v
		}
	}
	return dropped, renamed
}

// renamed returns the schema field source column col is mapped to, and
// records the rename.
func (p *fieldPolicy) renamed(col string) (string, bool) {
	if p == nil {
		return "", false
	}
	to, ok := p.rename[col]
	if ok {
		p.mu.Lock()
		p.mu.renamed[col] = to
		p.mu.Unlock()
	}
	return to, ok
}

// dropping reports whether columns outside the schema are dropped.
func (p *fieldPolicy) dropping() bool { return p != nil && p.drop }

// noteDropped records that column col was dropped.
func (p *fieldPolicy) noteDropped(col string) {
	p.mu.Lock()
	p.mu.dropped[col] = true
	p.mu.Unlock()
}
