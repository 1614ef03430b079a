package gazetteer_test

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/paulmach/orb"

	"siteenv/ingest/gazetteer"
	"siteenv/ingest/synth"
)

var (
	genOnce sync.Once
	gen     *synth.Generator
	genErr  error
)

func generator(t testing.TB) *synth.Generator {
	t.Helper()
	genOnce.Do(func() { gen, genErr = synth.New(3, synth.Small) })
	if genErr != nil {
		t.Fatal(genErr)
	}
	return gen
}

func readAllAddresses(t testing.TB, b []byte) ([]gazetteer.Address, error) {
	t.Helper()
	var out []gazetteer.Address
	var last int64
	err := gazetteer.ReadAddresses(bytes.NewReader(b), func(line int64, a gazetteer.Address) error {
		if line <= last {
			t.Fatalf("line %d after %d", line, last)
		}
		last = line
		out = append(out, a)
		return nil
	})
	return out, err
}

func readAllParcels(t testing.TB, b []byte) ([]gazetteer.Parcel, error) {
	t.Helper()
	var out []gazetteer.Parcel
	err := gazetteer.ReadParcels(bytes.NewReader(b), func(line int64, p gazetteer.Parcel) error {
		out = append(out, p)
		return nil
	})
	return out, err
}

func TestAddressesRoundTrip(t *testing.T) {
	g := generator(t)
	var want []gazetteer.Address
	if err := g.Addresses(func(a synth.Address) error { want = append(want, a); return nil }); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := gazetteer.WriteAddresses(&buf, g.Addresses); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), "label,number,street,locality,state,postcode,longitude,latitude,lga\n") {
		t.Fatalf("header: %.80s", buf.String())
	}
	got, err := readAllAddresses(t, buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip changed the addresses (%d vs %d)", len(got), len(want))
	}
}

func TestParcelsRoundTrip(t *testing.T) {
	g := generator(t)
	var want []gazetteer.Parcel
	if err := g.Parcels(func(p synth.Parcel) error { want = append(want, p); return nil }); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := gazetteer.WriteParcels(&buf, g.Parcels); err != nil {
		t.Fatal(err)
	}
	got, err := readAllParcels(t, buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip changed the parcels (%d vs %d)", len(got), len(want))
	}
	// A MultiPolygon parcel and a CRLF file read too.
	mp := gazetteer.Parcel{Jurisdiction: "QLD", CadastreID: "2RP1234", Geometry: orb.MultiPolygon{
		{{{153, -27}, {153.001, -27}, {153.001, -26.999}, {153, -27}}},
		{{{153.01, -27}, {153.011, -27}, {153.011, -26.999}, {153.01, -27}}},
	}}
	buf.Reset()
	gazetteer.WriteParcels(&buf, func(yield func(gazetteer.Parcel) error) error { return yield(mp) })
	crlf := bytes.ReplaceAll(buf.Bytes(), []byte("\n"), []byte("\r\n\r\n"))
	got, err = readAllParcels(t, crlf)
	if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], mp) {
		t.Fatalf("MultiPolygon parcel: %v %+v", err, got)
	}
}

const goodHeader = "label,number,street,locality,state,postcode,longitude,latitude\n"
const lgaHeader = "label,number,street,locality,state,postcode,longitude,latitude,lga\n"
const goodRow = "\"12 Banksia Avenue, ERMINGTON NSW 2115\",12,Banksia Avenue,ERMINGTON,NSW,2115,151.05,-33.81\n"

func TestReadAddressesErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		line     int64
		reason   string
	}{
		{"empty", "", 1, "header"},
		{"bad header", "label,number,street\n", 1, "header must be"},
		{"tenth column", strings.TrimSuffix(goodHeader, "\n") + ",lga,x\n", 1, "header must be"},
		{"ninth column not lga", strings.TrimSuffix(goodHeader, "\n") + ",council\n", 1, "header must be"},
		{"lga without its column", goodHeader + strings.TrimSuffix(goodRow, "\n") + ",City of Parramatta\n", 2, "wrong number of fields"},
		{"lga spaces", lgaHeader + strings.TrimSuffix(goodRow, "\n") + ", City of Parramatta\n", 2, "lga has leading"},
		{"lga control", lgaHeader + strings.TrimSuffix(goodRow, "\n") + ",City\tof Parramatta\n", 2, "lga contains a control"},
		{"renamed column", strings.Replace(goodHeader, "latitude", "lat", 1), 1, "header must be"},
		{"bad state", goodHeader + goodRow + strings.Replace(goodRow, "NSW,", "NZ,", 1), 3, `state "NZ"`},
		{"bad postcode", goodHeader + strings.Replace(goodRow, ",2115,", ",211,", 1), 2, "postcode"},
		{"postcode letters", goodHeader + strings.Replace(goodRow, ",2115,", ",21a5,", 1), 2, "postcode"},
		{"longitude range", goodHeader + strings.Replace(goodRow, "151.05", "181", 1), 2, "longitude"},
		{"latitude range", goodHeader + strings.Replace(goodRow, "-33.81", "-90.5", 1), 2, "latitude"},
		{"NaN", goodHeader + strings.Replace(goodRow, "151.05", "NaN", 1), 2, "longitude"},
		{"hex", goodHeader + strings.Replace(goodRow, "151.05", "0x10", 1), 2, "longitude"},
		{"empty street", goodHeader + strings.Replace(goodRow, ",Banksia Avenue,", ",,", 1), 2, "street is empty"},
		{"spaces", goodHeader + strings.Replace(goodRow, ",ERMINGTON,", ", ERMINGTON,", 1), 2, "locality has leading"},
		{"missing field", goodHeader + goodRow + "a,b,c,d,NSW,2000,151,-33\nx\n", 4, "wrong number of fields"},
		{"bad quote", goodHeader + "\"unterminated,1,2,3,NSW,2000,1,1\n", 2, "quote"},
		{"bad utf8", goodHeader + strings.Replace(goodRow, "ERMINGTON", "ERM\xffINGTON", 2), 2, "UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readAllAddresses(t, []byte(tc.in))
			var le *gazetteer.LineError
			if !errors.As(err, &le) {
				t.Fatalf("error %v is not a *LineError", err)
			}
			if le.Line != tc.line || !strings.Contains(le.Error(), tc.reason) || !strings.HasPrefix(le.Error(), "addresses line ") {
				t.Errorf("got %q (line %d), want line %d containing %q", le.Error(), le.Line, tc.line, tc.reason)
			}
		})
	}
	// The lga column is optional, and so is its value in a row.
	got, err := readAllAddresses(t, []byte(lgaHeader+strings.TrimSuffix(goodRow, "\n")+",City of Parramatta\n"+
		strings.TrimSuffix(goodRow, "\n")+",\n"))
	if err != nil || len(got) != 2 || got[0].LGA != "City of Parramatta" || got[1].LGA != "" || got[0].Locality != "ERMINGTON" {
		t.Errorf("lga column: %+v %v", got, err)
	}
	// A byte order mark is skipped; a quoted comma is data; a line break
	// inside a quoted field is refused on the row's first line.
	in := "\xEF\xBB\xBF" + goodHeader + "\"4, 5 A Street\",1,A Street,X,VIC,3000,145,-37\n" + goodRow
	var lines []int64
	err = gazetteer.ReadAddresses(strings.NewReader(in), func(line int64, a gazetteer.Address) error {
		lines = append(lines, line)
		return nil
	})
	if err != nil || !reflect.DeepEqual(lines, []int64{2, 3}) {
		t.Errorf("got %v, %v", lines, err)
	}
	_, err = readAllAddresses(t, []byte(goodHeader+goodRow+"\"multi\nline\",1,A Street,X,VIC,3000,145,-37\n"))
	if le := (*gazetteer.LineError)(nil); !errors.As(err, &le) || le.Line != 3 || !strings.Contains(le.Reason, "control character") {
		t.Errorf("multi-line label: %v", err)
	}
	stop := errors.New("stop")
	if err := gazetteer.ReadAddresses(strings.NewReader(goodHeader+goodRow), func(int64, gazetteer.Address) error { return stop }); err != stop {
		t.Errorf("yield error: %v", err)
	}
}

const goodParcel = `{"type":"Feature","geometry":{"type":"Polygon","coordinates":[[[151,-33],[151.001,-33],[151.001,-32.999],[151,-33]]]},"properties":{"jurisdiction":"NSW","cadastre_id":"12/DP34567","address":null}}`

func TestReadParcelsErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		line     int64
		reason   string
	}{
		{"truncated", goodParcel + "\n" + goodParcel[:50] + "\n", 2, "not a GeoJSON Feature"},
		{"not feature", strings.Replace(goodParcel, `"Feature"`, `"Thing"`, 1), 1, `"type" must be "Feature"`},
		{"point", `{"type":"Feature","geometry":{"type":"Point","coordinates":[151,-33]},"properties":{"jurisdiction":"NSW","cadastre_id":"1/DP1","address":null}}`, 1, "Polygon or MultiPolygon"},
		{"no geometry", strings.Replace(goodParcel, `"geometry":{"type":"Polygon","coordinates":[[[151,-33],[151.001,-33],[151.001,-32.999],[151,-33]]]}`, `"geometry":null`, 1), 1, "geometry is missing"},
		{"unclosed", strings.Replace(goodParcel, `[151.001,-32.999],[151,-33]`, `[151.001,-32.999],[151,-33.5]`, 1), 1, "geometry"},
		{"bowtie", strings.Replace(goodParcel, `[[151,-33],[151.001,-33],[151.001,-32.999],[151,-33]]`, `[[151,-33],[151.001,-32.999],[151.001,-33],[151,-32.999],[151,-33]]`, 1), 1, "geometry"},
		{"out of range", strings.Replace(goodParcel, `151.001,-33]`, `191.001,-33]`, 1), 1, "geometry"},
		{"bad jurisdiction", strings.Replace(goodParcel, `"NSW"`, `"AUS"`, 1), 1, "jurisdiction must be"},
		{"empty cadastre", strings.Replace(goodParcel, `"12/DP34567"`, `""`, 1), 1, "cadastre_id"},
		{"numeric cadastre", strings.Replace(goodParcel, `"12/DP34567"`, `12`, 1), 1, "cadastre_id"},
		{"missing address", strings.Replace(goodParcel, `,"address":null`, ``, 1), 1, "address is required"},
		{"empty address", strings.Replace(goodParcel, `"address":null`, `"address":""`, 1), 1, "address must be"},
		{"extra property", strings.Replace(goodParcel, `"address":null`, `"address":null,"area":3`, 1), 1, `property "area"`},
		{"trailing", goodParcel + " {}", 1, "not a GeoJSON Feature"},
		{"third line", goodParcel + "\n\n" + strings.Replace(goodParcel, `"NSW"`, `"nsw"`, 1), 3, "jurisdiction"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readAllParcels(t, []byte(tc.in))
			var le *gazetteer.LineError
			if !errors.As(err, &le) {
				t.Fatalf("error %v is not a *LineError", err)
			}
			if le.Line != tc.line || !strings.Contains(le.Error(), tc.reason) || !strings.HasPrefix(le.Error(), "parcels line ") {
				t.Errorf("got %q (line %d), want line %d containing %q", le.Error(), le.Line, tc.line, tc.reason)
			}
		})
	}
	// A line longer than the reader's buffer is read whole.
	if _, err := readAllParcels(t, []byte(goodParcel+"\n"+goodParcel)); err != nil {
		t.Fatal(err)
	}
	long := strings.Replace(goodParcel, `"12/DP34567"`, `"`+strings.Repeat("1", 90)+`"`, 1)
	long = strings.Replace(long, `{"type":"Feature",`, `{"type":"Feature","foreign":"`+strings.Repeat("x", 200000)+`",`, 1)
	got, err := readAllParcels(t, []byte(goodParcel+"\n"+long+"\n"+goodParcel))
	if err != nil || len(got) != 3 {
		t.Fatalf("long line: %d parcels, %v", len(got), err)
	}
}

func FuzzReadAddresses(f *testing.F) {
	f.Add([]byte(goodHeader + goodRow))
	f.Add([]byte(goodHeader + "\"a \"\"b\"\"\",1,S St,X,WA,6000,115.8,-31.9\n"))
	f.Add([]byte(goodHeader + goodRow + "x,1,2,3,NT,0800,130.8,-12.4"))
	f.Add([]byte("\xEF\xBB\xBF" + goodHeader))
	f.Fuzz(func(t *testing.T, b []byte) {
		var got []gazetteer.Address
		err := gazetteer.ReadAddresses(bytes.NewReader(b), func(line int64, a gazetteer.Address) error {
			if line < 2 {
				t.Fatalf("data on line %d", line)
			}
			got = append(got, a)
			return nil
		})
		if err != nil {
			var le *gazetteer.LineError
			if !errors.As(err, &le) || le.Line < 1 {
				t.Fatalf("error %v without a line", err)
			}
			return
		}
		var buf bytes.Buffer
		if err := gazetteer.WriteAddresses(&buf, func(yield func(gazetteer.Address) error) error {
			for _, a := range got {
				if err := yield(a); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		again, err := readAllAddresses(t, buf.Bytes())
		if err != nil || !reflect.DeepEqual(again, got) && len(got) > 0 {
			t.Fatalf("rewrite does not read back: %v\n%q", err, buf.String())
		}
	})
}

func FuzzReadParcels(f *testing.F) {
	f.Add([]byte(goodParcel))
	f.Add([]byte(goodParcel + "\n" + strings.Replace(goodParcel, `null`, `"1 A St, X NSW 2000"`, 1) + "\n"))
	f.Add([]byte(`{"type":"Feature","geometry":{"type":"MultiPolygon","coordinates":[[[[0,0],[1,0],[1,1],[0,0]],[[0.5,0.2],[0.8,0.2],[0.8,0.5],[0.5,0.2]]]]},"properties":{"jurisdiction":"TAS","cadastre_id":"1/SP2","address":null}}`))
	f.Add([]byte("\n\n{}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var got []gazetteer.Parcel
		err := gazetteer.ReadParcels(bytes.NewReader(b), func(line int64, p gazetteer.Parcel) error {
			got = append(got, p)
			return nil
		})
		if err != nil {
			var le *gazetteer.LineError
			if !errors.As(err, &le) || le.Line < 1 {
				t.Fatalf("error %v without a line", err)
			}
			return
		}
		var buf bytes.Buffer
		if err := gazetteer.WriteParcels(&buf, func(yield func(gazetteer.Parcel) error) error {
			for _, p := range got {
				if err := yield(p); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		again, err := readAllParcels(t, buf.Bytes())
		if err != nil || len(again) != len(got) || (len(got) > 0 && !reflect.DeepEqual(again, got)) {
			t.Fatalf("rewrite does not read back: %v\n%q", err, buf.String())
		}
	})
}
