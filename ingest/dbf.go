package ingest

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"siteenv/tiles"
)

// dbfTable is a dBASE III+ table header (the .dbf of a Shapefile).
type dbfTable struct {
	records   int64
	headerLen int
	recordLen int
	fields    []dbfField
	decode    func([]byte) (string, bool) // the code page's text decoder
}

type dbfField struct {
	name   string // as in the file
	prop   string // the property it becomes (a schema field's name when one matches)
	typ    byte   // C, N, F, L or D
	offset int    // within the record, after the deletion flag
	length int
	toText bool // a numeric field read into a string schema field
	toBool bool // a numeric field read into a boolean schema field (GDAL writes booleans as N(1))
}

// readDBFHeader reads the header and field descriptors and leaves r at the
// first record. schema maps the dBASE field names (at most 10 characters,
// often truncated or upper-cased by the writer) to the layer's fields.
func readDBFHeader(r io.Reader, size int64, decode func([]byte) (string, bool), schema tiles.FieldSchema, idProp string) (*dbfTable, error) {
	var h [32]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, errors.New(".dbf: truncated header")
	}
	t := &dbfTable{
		records:   int64(binary.LittleEndian.Uint32(h[4:])),
		headerLen: int(binary.LittleEndian.Uint16(h[8:])),
		recordLen: int(binary.LittleEndian.Uint16(h[10:])),
		decode:    decode,
	}
	if t.headerLen < 33 || t.recordLen < 1 {
		return nil, errors.New(".dbf: not a dBASE table (bad header or record length)")
	}
	if size >= 0 && int64(t.headerLen)+t.records*int64(t.recordLen) > size {
		return nil, fmt.Errorf(".dbf: truncated: the header promises %d records of %d bytes, the file has %d bytes", t.records, t.recordLen, size)
	}
	rest := make([]byte, t.headerLen-32)
	if _, err := io.ReadFull(r, rest); err != nil {
		return nil, errors.New(".dbf: truncated field descriptors")
	}
	off := 0
	seen := map[string]bool{}
	for i := 0; i+32 <= len(rest) && rest[i] != 0x0D; i += 32 {
		d := rest[i : i+32]
		raw := d[:11]
		if n := indexByte(raw, 0); n >= 0 {
			raw = raw[:n]
		}
		name, _ := decode(raw)
		name = strings.TrimSpace(name)
		f := dbfField{name: name, typ: d[11], offset: off, length: int(d[16])}
		switch f.typ {
		case 'C', 'N', 'F', 'L', 'D':
		default:
			return nil, fmt.Errorf(".dbf: field %q has dBASE type %q; supported are C, N, F, L and D", name, f.typ)
		}
		if f.typ == 'C' {
			f.length |= int(d[17]) << 8 // the Clipper/GDAL extension for long strings
		}
		off += f.length
		f.prop = matchField(name, schema, idProp)
		if seen[f.prop] {
			return nil, fmt.Errorf(".dbf: two fields map to %q", f.prop)
		}
		seen[f.prop] = true
		if sf, ok := schema.Lookup(f.prop); ok && (f.typ == 'N' || f.typ == 'F') {
			f.toText = sf.Type == tiles.TypeString
			f.toBool = sf.Type == tiles.TypeBoolean
		}
		t.fields = append(t.fields, f)
	}
	if off+1 > t.recordLen {
		return nil, fmt.Errorf(".dbf: fields span %d bytes, longer than the %d-byte record", off, t.recordLen-1)
	}
	return t, nil
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// matchField returns the layer field a dBASE field name stands for: the
// same name, else the same ignoring case, else the one field (or id
// property) whose first 10 characters are the name (dBASE names are cut
// to 10). Otherwise the name itself (Normalize then rejects the rows).
func matchField(name string, schema tiles.FieldSchema, idProp string) string {
	cands := make([]string, 0, len(schema)+1)
	for _, f := range schema {
		cands = append(cands, f.Name)
	}
	if idProp != "" {
		cands = append(cands, idProp)
	}
	for _, c := range cands {
		if c == name {
			return c
		}
	}
	var hit []string
	for _, c := range cands {
		if strings.EqualFold(c, name) {
			hit = append(hit, c)
		}
	}
	if len(hit) == 1 {
		return hit[0]
	}
	if len(name) == 10 {
		hit = hit[:0]
		for _, c := range cands {
			if len(c) > 10 && strings.EqualFold(c[:10], name) {
				hit = append(hit, c)
			}
		}
		if len(hit) == 1 {
			return hit[0]
		}
	}
	return name
}

// record converts one record (with its deletion flag) to properties.
// deleted is true for a record marked deleted. A value that cannot be read
// gives an error naming the field (the row is rejected).
func (t *dbfTable) record(rec []byte) (props map[string]any, deleted bool, err error) {
	if rec[0] == '*' {
		return nil, true, nil
	}
	props = make(map[string]any, len(t.fields))
	body := rec[1:]
	for i := range t.fields {
		f := &t.fields[i]
		raw := body[f.offset : f.offset+f.length]
		v, err := f.value(raw, t.decode)
		if err != nil {
			return nil, false, fmt.Errorf("field %q: %v", f.name, err)
		}
		props[f.prop] = v
	}
	return props, false, nil
}

func (f *dbfField) value(raw []byte, decode func([]byte) (string, bool)) (any, error) {
	switch f.typ {
	case 'C':
		s, ok := decode(trimSpaceBytes(raw, false))
		if !ok {
			return nil, errors.New("text is not valid in the file's code page")
		}
		if s == "" { // dBASE has no null: an empty text is null (as GDAL reads it)
			return nil, nil
		}
		return s, nil
	case 'N', 'F':
		s := string(trimSpaceBytes(raw, true))
		if s == "" || s[0] == '*' {
			return nil, nil
		}
		if _, err := strconv.ParseFloat(s, 64); err != nil {
			return nil, fmt.Errorf("%q is not a number", s)
		}
		if f.toText {
			return s, nil
		}
		if f.toBool {
			switch s {
			case "0":
				return false, nil
			case "1":
				return true, nil
			}
			return nil, fmt.Errorf("%q is not a boolean (0 or 1)", s)
		}
		return jsonNumber(s), nil
	case 'L':
		if len(raw) == 0 {
			return nil, nil
		}
		switch raw[0] {
		case 'T', 't', 'Y', 'y':
			return true, nil
		case 'F', 'f', 'N', 'n':
			return false, nil
		case '?', ' ', 0:
			return nil, nil
		}
		return nil, fmt.Errorf("%q is not a logical value", raw[0])
	case 'D':
		s := string(trimSpaceBytes(raw, true))
		if s == "" || s == "00000000" {
			return nil, nil
		}
		if len(s) != 8 || strings.Trim(s, "0123456789") != "" {
			return nil, fmt.Errorf("%q is not a date (YYYYMMDD)", s)
		}
		return s[:4] + "-" + s[4:6] + "-" + s[6:], nil
	}
	return nil, fmt.Errorf("unsupported type %q", f.typ)
}

func trimSpaceBytes(b []byte, left bool) []byte {
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == 0) {
		b = b[:len(b)-1]
	}
	for left && len(b) > 0 && b[0] == ' ' {
		b = b[1:]
	}
	return b
}

// codePage returns the text decoder for a .cpg's content (or the dBASE
// language driver id when there is no .cpg): UTF-8, ISO-8859-1 (Latin-1)
// or Windows-1252.
func codePage(cpg string, hasCPG bool, ldid byte) (func([]byte) (string, bool), error) {
	name := strings.ToUpper(strings.TrimSpace(cpg))
	if !hasCPG {
		switch ldid {
		case 0x57, 0x03:
			name = "1252"
		default:
			name = "ISO-8859-1" // GDAL's reading without a .cpg
		}
	}
	switch strings.NewReplacer("-", "", "_", "", " ", "").Replace(name) {
	case "UTF8", "65001":
		return func(b []byte) (string, bool) { return string(b), utf8.Valid(b) }, nil
	case "ISO88591", "88591", "LATIN1", "28591":
		return decodeLatin1, nil
	case "1252", "CP1252", "WINDOWS1252", "ANSI1252":
		return decode1252, nil
	}
	return nil, fmt.Errorf(".cpg: unsupported code page %q: supported are UTF-8, ISO-8859-1 (Latin-1) and Windows-1252", truncate(cpg, 40))
}

func decodeLatin1(b []byte) (string, bool) {
	ascii := true
	for _, c := range b {
		if c >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return string(b), true
	}
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return string(r), true
}

// cp1252 maps 0x80..0x9F of Windows-1252 (0: undefined).
var cp1252 = [32]rune{
	0x20AC, 0, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0, 0x017D, 0,
	0, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0, 0x017E, 0x0178,
}

func decode1252(b []byte) (string, bool) {
	r := make([]rune, len(b))
	for i, c := range b {
		switch {
		case c >= 0x80 && c < 0xA0:
			if cp1252[c-0x80] == 0 {
				return "", false
			}
			r[i] = cp1252[c-0x80]
		default:
			r[i] = rune(c)
		}
	}
	return string(r), true
}

// jsonNumber returns a dBASE number's text as a json.Number when it is
// JSON number syntax (exact for integers), else as float64 ("+1", ".5").
func jsonNumber(s string) any {
	if jsonNumberRE(s) {
		return json.Number(s)
	}
	v, _ := strconv.ParseFloat(s, 64)
	return v
}
