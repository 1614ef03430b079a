package content

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// fieldChars bounds one printed field value, in characters.
const fieldChars = 80

// fieldSpec is what the report reads of a field's JSON Schema fragment.
type fieldSpec struct {
	Title       string `json:"title"`
	Description string `json:"description"`
	Enum        []any  `json:"enum"`
}

// Fields labels a layer's fields for people: the field schema's title;
// else its description when short; else the name made readable (never a
// raw snake_case name), with the unit from the layer's units.
type Fields struct {
	labels map[string]string
	units  map[string]string
	names  []string // the schema's fields in its order (by name)
	enums  map[string][]string
}

// NewFields reads a layer's field schema and units (JSON objects keyed by
// field name; either may be empty).
func NewFields(schema, units json.RawMessage) Fields {
	f := Fields{labels: map[string]string{}, units: map[string]string{}}
	var specs map[string]fieldSpec
	if len(schema) > 0 && json.Unmarshal(schema, &specs) == nil {
		for k, s := range specs {
			f.names = append(f.names, k)
			for _, v := range s.Enum {
				if v, ok := v.(string); ok {
					if f.enums == nil {
						f.enums = map[string][]string{}
					}
					f.enums[k] = append(f.enums[k], v)
				}
			}
			switch {
			case strings.TrimSpace(s.Title) != "":
				f.labels[k] = strings.TrimSpace(s.Title)
			case s.Description != "" && utf8.RuneCountInString(s.Description) <= 48:
				f.labels[k] = strings.TrimSuffix(strings.TrimSpace(s.Description), ".")
			}
		}
	}
	slices.Sort(f.names)
	var us map[string]*string
	if len(units) > 0 && json.Unmarshal(units, &us) == nil {
		for k, u := range us {
			if u != nil && *u != "" {
				f.units[k] = *u
			}
		}
	}
	return f
}

// Names are the schema's fields in the schema's order: by name, as the
// release's manifest and tiles order them, so that a layer's record cards
// read the same in every report.
func (f Fields) Names() []string { return f.names }

// ClassField is the field a polygon layer's areas are classed by: an
// enumerated field named for a class, category, probability, hazard or
// risk (the first by name), with its values; "" when none.
func (f Fields) ClassField() (string, []string) {
	for _, word := range []string{"class", "probability", "hazard", "risk", "category"} {
		for _, n := range f.names {
			if strings.Contains(n, word) && len(f.enums[n]) > 1 && len(f.enums[n]) <= 8 {
				return n, f.enums[n]
			}
		}
	}
	return "", nil
}

// Label is the field's printed name, with its unit.
func (f Fields) Label(name string) string {
	l := cmp.Or(f.labels[name], Humanize(name))
	if u := f.units[name]; u != "" && !strings.HasSuffix(l, "("+u+")") {
		// A name that already says its unit ("depth_m" -> "Depth (m)")
		// is not given it twice.
		l += " (" + u + ")"
	}
	return l
}

// Humanize makes a field name readable: "probability_class" ->
// "Probability class", "bore_id" -> "Bore ID".
func Humanize(name string) string {
	words := strings.FieldsFunc(name, func(r rune) bool { return r == '_' || r == '-' || r == '.' || unicode.IsSpace(r) })
	for i, w := range words {
		switch strings.ToLower(w) {
		case "id", "lga", "epa", "url", "pfas", "ahd", "gda", "mga", "abn":
			words[i] = strings.ToUpper(w)
			continue
		case "m":
			words[i] = "(m)"
			continue
		case "ha":
			words[i] = "(ha)"
			continue
		}
		if i == 0 {
			r, n := utf8.DecodeRuneInString(w)
			words[i] = string(unicode.ToUpper(r)) + w[n:]
		}
	}
	if len(words) == 0 {
		return name
	}
	return strings.Join(words, " ")
}

// Value prints a field value: text whitespace-folded and cut to
// fieldChars, numbers as given, booleans as Yes/No, times in UTC.
func Value(v any) string {
	var s string
	switch v := v.(type) {
	case nil:
		return "—"
	case string:
		s = v
	case bool:
		if v {
			return "Yes"
		}
		return "No"
	case float64:
		s = strconv.FormatFloat(v, 'f', -1, 64)
	case float32:
		s = strconv.FormatFloat(float64(v), 'f', -1, 32)
	case time.Time:
		s = v.UTC().Format(time.RFC3339)
	default:
		s = fmt.Sprint(v)
	}
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > fieldChars {
		r := []rune(s)
		s = string(r[:fieldChars-1]) + "…"
	}
	return s
}

// briefFieldNames picks the n most telling of a layer's fields for its
// appendix rows, from the names alone so that they are the same in every
// report: names first, then statuses, classes and kinds, then the rest in
// schema order; identifiers of other registers last.
func briefFieldNames(names []string, n int) []string {
	rank := func(k string) int {
		switch {
		case strings.Contains(k, "name"), strings.Contains(k, "title"), strings.Contains(k, "address"):
			return 0
		case strings.Contains(k, "status"), strings.Contains(k, "class"), strings.Contains(k, "type"),
			strings.Contains(k, "category"), strings.Contains(k, "activity"), strings.Contains(k, "purpose"):
			return 1
		case strings.HasSuffix(k, "_id"), strings.HasSuffix(k, "_url"):
			return 3
		}
		return 2
	}
	keys := slices.Clone(names)
	slices.SortStableFunc(keys, func(a, b string) int { return cmp.Compare(rank(a), rank(b)) })
	return keys[:min(len(keys), n)]
}
