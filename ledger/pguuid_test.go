package ledger_test

import (
	"slices"
	"testing"

	"github.com/google/uuid"

	"siteenv/ledger"
)

// TestUUIDCodec proves uuid.UUID goes to PostgreSQL and back as the same
// 16 bytes through the ledger's registered plans: alone, in arrays, and
// NULL (nil in a *uuid.UUID; a uuid.UUID is left as it was, as pgx did
// through uuid.UUID's own Scan before).
func TestUUIDCodec(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := uuid.New()
	ids := []uuid.UUID{uuid.New(), uuid.Nil, id}
	keep := uuid.New()
	back, arr, null, nullPtr, text, err := ledger.UUIDRoundTripForTest(b.ctx, b.led, id, ids, keep)
	if err != nil {
		t.Fatal(err)
	}
	if back != id || text != id.String() || !slices.Equal(arr, ids) || null != keep || nullPtr != nil {
		t.Fatalf("back %s (%s), arr %v, null %s, nullPtr %v; want %s, %v", back, text, arr, null, nullPtr, id, ids)
	}
}
