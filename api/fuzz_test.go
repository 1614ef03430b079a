package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"siteenv/clock"
)

// FuzzDecodeBody: any bytes give either a decoded value or a Problem of the
// body family, never a panic or another error.
func FuzzDecodeBody(f *testing.F) {
	for _, s := range []string{`{"name":"a","n":1}`, `{"name":`, `[]`, `null`, `{"n":1.5}`, `{"x":1}`, "\xff", `{"name":"a"} trailing`, ``,
		`{"name":"a","name":"b"}`, `{"list":[{"k":1,"k":2}]}`, `{"Name":"a","name":"b"}`, `{"name":"a\u0000"}`, "{\"name\":\"a\x00\"}",
		"{\"name\":\"\xc3\x28\"}", "{\"list\":[\"\xed\xa0\x80\"]}", `{"name":"\ud800"}`, `{"list":[[[[[]]]]]}`, `{"n":1} {"n":2}`} {
		f.Add([]byte(s), "application/json")
	}
	f.Add([]byte(`{}`), "text/plain")
	f.Add([]byte(`{}`), "application/json; charset=latin1")
	f.Fuzz(func(t *testing.T, body []byte, ctype string) {
		var dst struct {
			Name string   `json:"name"`
			N    int      `json:"n"`
			List []string `json:"list"`
		}
		err := decodeBody(ctype, body, &dst)
		if err == nil {
			// Accepted: one well-formed UTF-8 JSON value whose text holds no NUL.
			if !utf8.Valid(body) || !json.Valid(body) {
				t.Fatalf("accepted %q", body)
			}
			for _, s := range append([]string{dst.Name}, dst.List...) {
				if strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s) {
					t.Fatalf("accepted text %q from %q", s, body)
				}
			}
			return
		}
		var p *Problem
		if !errors.As(err, &p) {
			t.Fatalf("non-Problem error %v", err)
		}
		switch p.Code {
		case "invalid_json", "invalid_request", "unsupported_media_type":
		default:
			t.Fatalf("unexpected code %s", p.Code)
		}
		b := p.body(uuid.NewString())
		if len(b.FieldErrors) > maxFieldErrors || len(b.Detail) > maxDetailLen {
			t.Fatal("problem exceeds contract bounds")
		}
	})
}

// FuzzIdempotencyKey: the header check accepts exactly the contract's pattern.
func FuzzIdempotencyKey(f *testing.F) {
	for _, s := range []string{"a", "abc-123_x.y:z", "", " ", "a b", string(bytes.Repeat([]byte("k"), 129)), "ключ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		want := len(key) >= 1 && len(key) <= 128
		for _, c := range []byte(key) {
			ok := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-'
			want = want && ok
		}
		if got := idempotencyKeyRE.MatchString(key); got != want {
			t.Fatalf("%q: accepted=%v, want %v", key, got, want)
		}
	})
}

// FuzzCursorDecode: arbitrary strings never decode unless they were issued,
// and never panic.
func FuzzCursorDecode(f *testing.F) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := newCursorCodec(bytes.Repeat([]byte("k"), 32), clk, time.Hour)
	acct := uuid.MustParse("0190b2a4-0000-7000-8000-000000000001")
	good, err := c.encode(acct, "activity", "b", timeIDPosition{T: clk.Now(), ID: acct})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add("a.b")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		var pos timeIDPosition
		err := c.decode(s, acct, "activity", "b", &pos)
		if err == nil && s != good {
			// Another encoding of the same signed bytes would need a MAC forgery.
			enc, _, _ := bytes.Cut([]byte(s), []byte("."))
			genc, _, _ := bytes.Cut([]byte(good), []byte("."))
			if !bytes.Equal(enc, genc) {
				t.Fatalf("forged cursor %q accepted", s)
			}
		}
		var p *Problem
		if err != nil && (!errors.As(err, &p) || p.Code != "invalid_cursor") {
			t.Fatalf("error %v", err)
		}
	})
}
