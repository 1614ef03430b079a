package gazetteer

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/paulmach/orb"
)

// AddressHeader is the header row of an addresses file. A ninth column,
// LGAColumn, is optional.
var AddressHeader = []string{"label", "number", "street", "locality", "state", "postcode", "longitude", "latitude"}

// LGAColumn names the optional last column: the local government area of
// the address's locality, e.g. "City of Parramatta" ("" when unknown).
const LGAColumn = "lga"

// Limits on address fields, in bytes.
const (
	maxLabelLen = 500
	maxFieldLen = 200
)

// ReadAddresses reads an addresses CSV file and calls yield for each row with
// its 1-based line number. The header must be exactly AddressHeader (a UTF-8
// byte order mark before it is ignored), optionally followed by LGAColumn.
// Every field but lga is required; state must
// be one of States, postcode four digits, longitude -180..180 and latitude
// -90..90 (finite decimal numbers). A bad row stops the read with a
// *LineError; an error from yield is returned as is.
func ReadAddresses(r io.Reader, yield func(line int64, a Address) error) error {
	cr := csv.NewReader(skipBOM(r))
	cr.FieldsPerRecord = 0 // the header's count: 8, or 9 with lga
	cr.ReuseRecord = true
	bad := func(line int, format string, args ...any) error {
		return &LineError{File: "addresses", Line: int64(line), Reason: fmt.Sprintf(format, args...)}
	}
	head, err := cr.Read()
	if err == io.EOF {
		return bad(1, "empty file: the header %q is missing", strings.Join(AddressHeader, ","))
	}
	if err != nil {
		return csvError(err)
	}
	badHead := len(head) != len(AddressHeader) && (len(head) != len(AddressHeader)+1 || head[len(AddressHeader)] != LGAColumn)
	for i, h := range AddressHeader {
		if badHead || head[i] != h {
			return bad(1, "header must be %q, optionally followed by \",%s\"", strings.Join(AddressHeader, ","), LGAColumn)
		}
	}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return csvError(err)
		}
		line, _ := cr.FieldPos(0)
		a, reason := parseAddress(rec)
		if reason != "" {
			return bad(line, "%s", reason)
		}
		if err := yield(int64(line), a); err != nil {
			return err
		}
	}
}

func parseAddress(rec []string) (Address, string) {
	for i, v := range rec[:6] {
		name := AddressHeader[i]
		switch {
		case strings.TrimSpace(v) == "":
			return Address{}, name + " is empty"
		case !utf8.ValidString(v):
			return Address{}, name + " is not valid UTF-8"
		case v != strings.TrimSpace(v):
			return Address{}, name + " has leading or trailing spaces"
		case i == 0 && len(v) > maxLabelLen:
			return Address{}, fmt.Sprintf("label is longer than %d bytes", maxLabelLen)
		case i > 0 && len(v) > maxFieldLen:
			return Address{}, fmt.Sprintf("%s is longer than %d bytes", name, maxFieldLen)
		}
		if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return Address{}, name + " contains a control character"
		}
	}
	a := Address{Label: rec[0], Number: rec[1], Street: rec[2], Locality: rec[3], State: rec[4], Postcode: rec[5]}
	if !ValidState(a.State) {
		return Address{}, fmt.Sprintf("state %q is not one of %s", a.State, strings.Join(States, " "))
	}
	if !validPostcode(a.Postcode) {
		return Address{}, fmt.Sprintf("postcode %q is not 4 digits", a.Postcode)
	}
	lon, ok := parseCoord(rec[6], 180)
	if !ok {
		return Address{}, fmt.Sprintf("longitude %q is not a number in -180..180", rec[6])
	}
	lat, ok := parseCoord(rec[7], 90)
	if !ok {
		return Address{}, fmt.Sprintf("latitude %q is not a number in -90..90", rec[7])
	}
	a.Point = orb.Point{lon, lat}
	if len(rec) > len(AddressHeader) {
		v := rec[len(AddressHeader)]
		switch {
		case !utf8.ValidString(v):
			return Address{}, "lga is not valid UTF-8"
		case v != strings.TrimSpace(v):
			return Address{}, "lga has leading or trailing spaces"
		case len(v) > maxFieldLen:
			return Address{}, fmt.Sprintf("lga is longer than %d bytes", maxFieldLen)
		case strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }):
			return Address{}, "lga contains a control character"
		}
		a.LGA = v
	}
	return a, ""
}

func validPostcode(s string) bool {
	if len(s) != 4 {
		return false
	}
	for i := 0; i < 4; i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parseCoord parses a plain decimal coordinate within -limit..limit.
func parseCoord(s string, limit float64) (float64, bool) {
	if s == "" || strings.ContainsAny(s, "xXpP_nNiI") { // no hex, NaN, Inf or underscores
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || v < -limit || v > limit {
		return 0, false
	}
	return v, true
}

func csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		line := pe.Line
		if line == 0 {
			line = pe.StartLine
		}
		return &LineError{File: "addresses", Line: int64(line), Reason: pe.Err.Error()}
	}
	return fmt.Errorf("addresses: %w", err)
}

// skipBOM drops a leading UTF-8 byte order mark.
func skipBOM(r io.Reader) io.Reader {
	bom := []byte{0xEF, 0xBB, 0xBF}
	buf := make([]byte, 3)
	n, err := io.ReadFull(r, buf)
	if n == 3 && bytes.Equal(buf, bom) {
		return r
	}
	rest := r
	if err != nil {
		rest = errReader{err}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			rest = bytes.NewReader(nil)
		}
	}
	return io.MultiReader(bytes.NewReader(buf[:n]), rest)
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// WriteAddresses writes the addresses produced by addrs as an addresses CSV
// file (header first, with the lga column). Coordinates are written in the shortest form that
// reads back to the same float64. It returns the first error of addrs or of
// w.
func WriteAddresses(w io.Writer, addrs func(yield func(Address) error) error) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(append(slices.Clone(AddressHeader), LGAColumn)); err != nil {
		return err
	}
	rec := make([]string, len(AddressHeader)+1)
	var buf []byte
	err := addrs(func(a Address) error {
		rec[0], rec[1], rec[2], rec[3], rec[4], rec[5] = a.Label, a.Number, a.Street, a.Locality, a.State, a.Postcode
		buf = strconv.AppendFloat(buf[:0], a.Point[0], 'f', -1, 64)
		rec[6] = string(buf)
		buf = strconv.AppendFloat(buf[:0], a.Point[1], 'f', -1, 64)
		rec[7] = string(buf)
		rec[8] = a.LGA
		return cw.Write(rec)
	})
	if err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}
