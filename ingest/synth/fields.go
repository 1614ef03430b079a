package synth

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/paulmach/orb"
)

// fieldDef is one property of a layer: its JSON Schema fragment and unit.
type fieldDef struct {
	Name     string
	Type     string // string, integer, number, boolean
	Nullable bool
	Format   string // "", "date", "date-time"
	Desc     string
	Enum     []string
	Min, Max *float64
	Unit     string // "" = not in units; "-" = unitless (null); else the unit
}

func str(name, desc string) fieldDef { return fieldDef{Name: name, Type: "string", Desc: desc} }
func date(name, desc string) fieldDef {
	return fieldDef{Name: name, Type: "string", Format: "date", Desc: desc}
}
func dateTime(name, desc string) fieldDef {
	return fieldDef{Name: name, Type: "string", Format: "date-time", Desc: desc}
}
func integer(name, desc string) fieldDef { return fieldDef{Name: name, Type: "integer", Desc: desc} }
func number(name, desc string) fieldDef  { return fieldDef{Name: name, Type: "number", Desc: desc} }
func boolean(name, desc string) fieldDef { return fieldDef{Name: name, Type: "boolean", Desc: desc} }
func enum(name, desc string, values ...string) fieldDef {
	return fieldDef{Name: name, Type: "string", Desc: desc, Enum: values}
}

func (f fieldDef) null() fieldDef { f.Nullable = true; return f }
func (f fieldDef) unit(u string) fieldDef {
	f.Unit = u
	return f
}
func (f fieldDef) min(v float64) fieldDef { f.Min = &v; return f }
func (f fieldDef) max(v float64) fieldDef { f.Max = &v; return f }

// fragment is the field's JSON Schema fragment.
func (f fieldDef) fragment() json.RawMessage {
	m := map[string]any{"type": f.Type}
	if f.Nullable {
		m["type"] = []string{f.Type, "null"}
	}
	if f.Format != "" {
		m["format"] = f.Format
	}
	if f.Desc != "" {
		m["description"] = f.Desc
	}
	if f.Enum != nil {
		m["enum"] = f.Enum
	}
	if f.Min != nil {
		m["minimum"] = *f.Min
	}
	if f.Max != nil {
		m["maximum"] = *f.Max
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err) // maps of strings and finite numbers always marshal
	}
	return b
}

// fctx is what a layer's property generator knows about the feature.
type fctx struct {
	r        *rand.Rand
	loc      *locality
	at       orb.Point // the feature's centre
	areaHa   float64   // polygons: area in hectares
	lengthKm float64   // lines: length in km
	parts    int       // multi-geometries: number of parts
	index    int64     // 1-based position in the layer
}

func (c *fctx) date(from, to string) string     { return dateBetween(c.r, from, to) }
func (c *fctx) dateTime(from, to string) string { return dateTimeBetween(c.r, from, to) }
func (c *fctx) chance(p float64) bool           { return chance(c.r, p) }
func (c *fctx) pick(xs ...string) string        { return oneOf(c.r, xs) }

// lga is the locality's local government area, or nil when unknown.
func (c *fctx) lga() any {
	if c.loc.LGA == "" {
		return nil
	}
	return c.loc.LGA
}

// lgaName is the LGA, or a stand-in for prose when unknown.
func (c *fctx) lgaName() string {
	if c.loc.LGA == "" {
		return c.loc.Title
	}
	return c.loc.LGA
}

// street is a plausible street address without locality: "12 Banksia Avenue".
func (c *fctx) street() string {
	n := 1 + int(logNormal(c.r, 3, 1))
	if n > 2000 {
		n = 2000
	}
	return strconv.Itoa(n) + " " + oneOf(c.r, streetStems) + " " + weighted(c.r, streetTypes, streetTypeWeights)
}

// waterway is a stream name of the feature's area (waterwayStemsFor).
func (c *fctx) waterway() string {
	return oneOf(c.r, waterwayStemsFor(c.loc)) + " " + oneOf(c.r, waterwayTypes)
}

// area is the feature's area in hectares, rounded to 0.01 (at least 0.01).
func (c *fctx) area() float64 { return math.Max(0.01, round(c.areaHa, 2)) }

// sqm is the area in square metres, rounded to 0.1.
func (c *fctx) sqm() float64 { return math.Max(0.1, round(c.areaHa*10000, 1)) }

func (c *fctx) num(lo, hi float64, decimals int) float64 {
	return round(between(c.r, lo, hi), decimals)
}

func (c *fctx) logNum(mu, sigma float64, decimals int) float64 {
	return round(logNormal(c.r, mu, sigma), decimals)
}

func (c *fctx) int(lo, hi int) int64 { return int64(intBetween(c.r, lo, hi)) }
