package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"github.com/google/uuid"

	"siteenv/clock"
)

// cursorCodec signs list positions so clients can only hand back cursors the
// server issued, for the same account, list, filters and projection, before
// they expire. Safe for concurrent use (immutable).
type cursorCodec struct {
	key   []byte
	clock clock.Clock
	ttl   time.Duration
}

func newCursorCodec(secret []byte, clk clock.Clock, ttl time.Duration) cursorCodec {
	return cursorCodec{key: deriveKey(secret, "cursor"), clock: clk, ttl: ttl}
}

// deriveKey separates the keys of different uses of the server secret.
func deriveKey(secret []byte, purpose string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("siteenv/" + purpose))
	return m.Sum(nil)
}

type cursorPayload struct {
	Account  uuid.UUID       `json:"a"`
	Resource string          `json:"r"`
	Binding  string          `json:"b"`
	Expires  int64           `json:"e"`
	Position json.RawMessage `json:"p"`
}

// binding condenses the filters and projection a cursor is bound to.
func binding(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:12])
}

// encode makes a cursor for position pos.
func (c cursorCodec) encode(account uuid.UUID, resource, bind string, pos any) (string, error) {
	p, err := json.Marshal(pos)
	if err != nil {
		return "", err
	}
	body, err := json.Marshal(cursorPayload{Account: account, Resource: resource, Binding: bind,
		Expires: c.clock.Now().Add(c.ttl).Unix(), Position: p})
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding.EncodeToString(body)
	return enc + "." + base64.RawURLEncoding.EncodeToString(c.sign(enc)), nil
}

func (c cursorCodec) sign(s string) []byte {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(s))
	return m.Sum(nil)
}

// decode verifies a cursor and reads its position into pos. Any tampering,
// another account's or list's cursor, changed filters or expiry give
// invalid_cursor, without saying which (that would help forgers).
func (c cursorCodec) decode(s string, account uuid.UUID, resource, bind string, pos any) error {
	bad := newProblem(CodeInvalidCursor, "The cursor is invalid, expired or belongs to a different list or filters; restart the list without a cursor.")
	bad.FieldErrors = []FieldError{{Field: "cursor", Message: "restart the list without a cursor"}}
	enc, sig, ok := strings.Cut(s, ".")
	if !ok {
		return bad
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, c.sign(enc)) {
		return bad
	}
	body, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return bad
	}
	var p cursorPayload
	if err := json.Unmarshal(body, &p); err != nil {
		return bad
	}
	if p.Account != account || p.Resource != resource || p.Binding != bind || c.clock.Now().Unix() >= p.Expires {
		return bad
	}
	if err := json.Unmarshal(p.Position, pos); err != nil {
		return bad
	}
	return nil
}
