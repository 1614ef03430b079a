package geo

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// CRSFromWKT identifies the source CRS (see ParseSourceCRS) that a WKT
// coordinate system definition describes: an ESRI .prj, OGC WKT1 or WKT2
// as GDAL, QGIS and ArcGIS write them. An EPSG authority code on the root
// (AUTHORITY["EPSG","n"] or ID["EPSG",n]) decides when present; otherwise
// the datum (GDA94, GDA2020, WGS 84 on GRS80/WGS 84) and the projection
// with its parameters must match one of the source CRSs exactly, never
// approximately. Anything else is an *UnsupportedCRSError quoting the
// definition's name. Safe for concurrent use.
func CRSFromWKT(wkt string) (CRS, error) {
	root, err := parseWKT(wkt)
	if err != nil {
		return 0, err
	}
	name := root.str(0)
	if code, ok := root.epsg(); ok {
		c, err := SourceCRSFromEPSG(code)
		if err != nil {
			return 0, unsupportedSource(fmt.Sprintf("EPSG:%d (%s)", code, name))
		}
		return c, nil
	}
	c, ok := identifyWKT(root)
	if !ok {
		return 0, unsupportedSource(name)
	}
	return c, nil
}

type wktNode struct {
	kw   string // upper case
	args []any  // string, float64 or *wktNode
}

func (n *wktNode) str(i int) string {
	if i < len(n.args) {
		if s, ok := n.args[i].(string); ok {
			return s
		}
	}
	return ""
}

func (n *wktNode) child(kws ...string) *wktNode {
	for _, a := range n.args {
		if c, ok := a.(*wktNode); ok {
			for _, kw := range kws {
				if c.kw == kw {
					return c
				}
			}
		}
	}
	return nil
}

// epsg returns the EPSG code of n's own AUTHORITY or ID.
func (n *wktNode) epsg() (int, bool) {
	a := n.child("AUTHORITY", "ID")
	if a == nil || !strings.EqualFold(a.str(0), "EPSG") || len(a.args) < 2 {
		return 0, false
	}
	switch v := a.args[1].(type) {
	case string:
		c, err := strconv.Atoi(v)
		return c, err == nil
	case float64:
		return int(v), v == math.Trunc(v)
	}
	return 0, false
}

// params returns the PARAMETER values of n by normalised name.
func (n *wktNode) params() map[string]float64 {
	out := map[string]float64{}
	for _, a := range n.args {
		c, ok := a.(*wktNode)
		if !ok || c.kw != "PARAMETER" || len(c.args) < 2 {
			continue
		}
		if v, ok := c.args[1].(float64); ok {
			out[normWKTName(c.str(0))] = v
		}
	}
	return out
}

func normWKTName(s string) string {
	s = strings.ToLower(s)
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '_' || r == '-' || r == '(' || r == ')' {
			return -1
		}
		return r
	}, s)
}

type wktDatum int

const (
	datumUnknown wktDatum = iota
	datumGDA94
	datumGDA2020
	datumWGS84
)

func datumOf(geog *wktNode) wktDatum {
	if geog == nil {
		return datumUnknown
	}
	if code, ok := geog.epsg(); ok {
		switch code {
		case 4283:
			return datumGDA94
		case 7844:
			return datumGDA2020
		case 4326:
			return datumWGS84
		}
		return datumUnknown
	}
	d := geog.child("DATUM", "GEODETICDATUM", "TRF", "ENSEMBLE")
	if d == nil {
		return datumUnknown
	}
	switch normWKTName(d.str(0)) {
	case "dgda1994", "gda1994", "gda94", "geocentricdatumofaustralia1994":
		return datumGDA94
	case "dgda2020", "gda2020", "geocentricdatumofaustralia2020":
		return datumGDA2020
	case "dwgs1984", "wgs1984", "wgs84", "worldgeodeticsystem1984", "worldgeodeticsystem1984ensemble":
		return datumWGS84
	}
	return datumUnknown
}

func identifyWKT(root *wktNode) (CRS, bool) {
	switch root.kw {
	case "GEOGCS", "GEOGCRS", "GEODCRS", "GEOGRAPHICCRS":
		switch datumOf(root) {
		case datumGDA94:
			return EPSG4283, true
		case datumGDA2020:
			return EPSG7844, true
		case datumWGS84:
			return EPSG4326, true
		}
		return 0, false
	case "PROJCS", "PROJCRS", "PROJECTEDCRS":
	default:
		return 0, false
	}
	if u := root.child("UNIT", "LENGTHUNIT"); u != nil && len(u.args) > 1 {
		if v, ok := u.args[1].(float64); !ok || v != 1 {
			return 0, false // not metres
		}
	}
	geog := root.child("GEOGCS", "GEOGCRS", "BASEGEOGCRS", "BASEGEODCRS")
	datum := datumOf(geog)
	method := ""
	ps := root.params()
	if p := root.child("PROJECTION"); p != nil {
		method = normWKTName(p.str(0))
	} else if conv := root.child("CONVERSION"); conv != nil {
		if m := conv.child("METHOD"); m != nil {
			method = normWKTName(m.str(0))
		}
		ps = conv.params()
	}
	get := func(names ...string) (float64, bool) {
		for _, n := range names {
			if v, ok := ps[n]; ok {
				return v, true
			}
		}
		return 0, false
	}
	is := func(v float64, ok bool, want float64) bool { return ok && math.Abs(v-want) < 1e-9 }
	fe, feOK := get("falseeasting")
	fn, fnOK := get("falsenorthing")
	switch method {
	case "transversemercator":
		k, kOK := get("scalefactor", "scalefactoratnaturalorigin")
		cm, cmOK := get("centralmeridian", "longitudeofnaturalorigin")
		lat0, latOK := get("latitudeoforigin", "latitudeofnaturalorigin")
		if !latOK {
			lat0, latOK = 0, true
		}
		if !is(k, kOK, mgaK0) || !is(fe, feOK, mgaFalseEasting) || !is(fn, fnOK, mgaFalseNorthing) || !is(lat0, latOK, 0) || !cmOK {
			return 0, false
		}
		zone := (int(math.Round(cm)) + 183) / 6
		if math.Abs(cm-mgaCentralMeridian(zone)) > 1e-9 {
			return 0, false
		}
		switch datum {
		case datumGDA94:
			c := CRS(mga94EPSGBase + zone)
			return c, c.MGA94Zone() != 0
		case datumGDA2020:
			c, err := MGA(zone)
			return c, err == nil
		}
	case "albersconicequalarea", "albers", "albersequalarea":
		lat1, ok1 := get("standardparallel1", "latitudeof1ststandardparallel")
		lat2, ok2 := get("standardparallel2", "latitudeof2ndstandardparallel")
		lon0, ok3 := get("centralmeridian", "longitudeofcenter", "longitudeoffalseorigin")
		lat0, ok4 := get("latitudeoforigin", "latitudeofcenter", "latitudeoffalseorigin")
		if !ok4 {
			lat0, ok4 = 0, true
		}
		eastingOK := is(fe, feOK, 0) || !feOK
		northingOK := is(fn, fnOK, 0) || !fnOK
		if !is(lat1, ok1, -18) || !is(lat2, ok2, -36) || !is(lon0, ok3, 132) || !is(lat0, ok4, 0) || !eastingOK || !northingOK {
			return 0, false
		}
		switch datum {
		case datumGDA94:
			return EPSG3577, true
		case datumGDA2020:
			return EPSG9473, true
		}
	case "mercatorauxiliarysphere", "popularvisualisationpseudomercator":
		if datum == datumWGS84 {
			return EPSG3857, true
		}
	case "mercator1sp", "mercator", "mercatorvariantA":
		// GDAL writes EPSG:3857 as Mercator_1SP on a sphere with an
		// EXTENSION["PROJ4", "+proj=merc +a=6378137 +b=6378137 ..."].
		if ext := root.child("EXTENSION"); ext != nil && strings.Contains(ext.str(1), "+a=6378137") && strings.Contains(ext.str(1), "+b=6378137") {
			return EPSG3857, true
		}
		if strings.Contains(normWKTName(root.str(0)), "pseudomercator") || strings.Contains(normWKTName(root.str(0)), "webmercator") {
			return EPSG3857, datum == datumWGS84
		}
	}
	return 0, false
}

// errWKT reports a definition that is not WKT at all.
var errWKT = errors.New("not a WKT coordinate system definition")

// errBareWord: an identifier without brackets (a WKT2 enumeration value).
var errBareWord = errors.New("bare word")

func isWKTWordByte(c byte) bool {
	return c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
}

func parseWKT(s string) (*wktNode, error) {
	p := &wktParser{s: s}
	p.ws()
	n, err := p.node(0)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnsupportedCRS, err)
	}
	p.ws()
	if p.i != len(p.s) {
		return nil, fmt.Errorf("%w: %v: text after the definition", ErrUnsupportedCRS, errWKT)
	}
	return n, nil
}

type wktParser struct {
	s string
	i int
}

const maxWKTDepth = 32

func (p *wktParser) ws() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n' || p.s[p.i] == '\r') {
		p.i++
	}
}

func (p *wktParser) node(depth int) (*wktNode, error) {
	if depth > maxWKTDepth {
		return nil, errWKT
	}
	start := p.i
	for p.i < len(p.s) && isWKTWordByte(p.s[p.i]) {
		p.i++
	}
	if p.i == start {
		return nil, errWKT
	}
	n := &wktNode{kw: strings.ToUpper(p.s[start:p.i])}
	p.ws()
	if p.i >= len(p.s) || (p.s[p.i] != '[' && p.s[p.i] != '(') {
		if depth > 0 {
			return nil, errBareWord
		}
		return nil, errWKT
	}
	closeCh := byte(']')
	if p.s[p.i] == '(' {
		closeCh = ')'
	}
	p.i++
	for {
		p.ws()
		if p.i >= len(p.s) {
			return nil, errWKT
		}
		c := p.s[p.i]
		switch {
		case c == '"':
			j := p.i + 1
			var b strings.Builder
			for {
				if j >= len(p.s) {
					return nil, errWKT
				}
				if p.s[j] == '"' {
					if j+1 < len(p.s) && p.s[j+1] == '"' {
						b.WriteByte('"')
						j += 2
						continue
					}
					break
				}
				b.WriteByte(p.s[j])
				j++
			}
			n.args = append(n.args, b.String())
			p.i = j + 1
		case c == '-' || c == '+' || c == '.' || c >= '0' && c <= '9':
			j := p.i
			for j < len(p.s) && strings.IndexByte("+-.0123456789eE", p.s[j]) >= 0 {
				j++
			}
			v, err := strconv.ParseFloat(p.s[p.i:j], 64)
			if err != nil {
				return nil, errWKT
			}
			n.args = append(n.args, v)
			p.i = j
		default:
			save := p.i
			child, err := p.node(depth + 1)
			if err == errBareWord {
				// An enumeration value such as AXIS["...",east].
				p.i = save
				for p.i < len(p.s) && isWKTWordByte(p.s[p.i]) {
					p.i++
				}
				n.args = append(n.args, p.s[save:p.i])
				break
			}
			if err != nil {
				return nil, err
			}
			n.args = append(n.args, child)
		}
		p.ws()
		if p.i >= len(p.s) {
			return nil, errWKT
		}
		if p.s[p.i] == ',' {
			p.i++
			continue
		}
		if p.s[p.i] == closeCh {
			p.i++
			return n, nil
		}
		return nil, errWKT
	}
}
