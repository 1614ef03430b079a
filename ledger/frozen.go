package ledger

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"sync"
)

// A query's frozen layers are stored once each, by digest (frozen_layers,
// migration 0019): its row holds the digests in layer order (frozen_refs),
// and readers get the entries back as the frozen JSON (queryFrozenSQL).
// The entries are the same for every query of a release, and writing them
// into each row was most of an admission's time in PostgreSQL.

// frozenStored are the digests this process stored durably (or found
// stored): an admission sends only the digests of those. Entries are never
// deleted, so one stored stays stored.
type frozenStored struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]struct{}
}

// maxFrozenStored bounds the set (emptied when full: a forgotten digest
// costs one idempotent insert).
const maxFrozenStored = 100_000

func (s *frozenStored) has(d [sha256.Size]byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[d]
	return ok
}

func (s *frozenStored) add(ds [][sha256.Size]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil || len(s.m)+len(ds) > maxFrozenStored {
		s.m = make(map[[sha256.Size]byte]struct{})
	}
	for _, d := range ds {
		s.m[d] = struct{}{}
	}
}

// frozenRefs returns the digests of layers' frozen entries in order, after
// storing durably, in one round trip, those this process has not stored
// yet: an admission that names them commits relaxed, and a crash must not
// keep a query whose entries it lost.
func (l *Ledger) frozenRefs(ctx context.Context, layers []FrozenLayer) ([][]byte, error) {
	refs := make([][]byte, len(layers))
	var newDigests [][sha256.Size]byte
	var newRefs [][]byte
	var newEntries []string
	for i, f := range layers {
		d := frozenDigest(f)
		refs[i] = d[:]
		if l.frozen.has(d) {
			continue
		}
		entry, err := json.Marshal(f)
		if err != nil {
			return nil, err
		}
		newDigests, newRefs, newEntries = append(newDigests, d), append(newRefs, refs[i]), append(newEntries, string(entry))
	}
	if len(newDigests) > 0 {
		if _, err := l.pool.Exec(ctx, storeFrozenSQL, newRefs, newEntries); err != nil {
			return nil, translate(err)
		}
		l.frozen.add(newDigests)
	}
	return refs, nil
}

// frozenDigest identifies f by every field's bytes, length-prefixed, nil
// apart from empty: cheaper than hashing its JSON, whose encoding (it
// validates and compacts each raw member) cost more than the rest of an
// admission's Go work. Two spellings of the same JSON get two entries,
// which is harmless.
func frozenDigest(f FrozenLayer) [sha256.Size]byte {
	h := sha256.New()
	var n [binary.MaxVarintLen64 + 1]byte
	field := func(b []byte, present bool) {
		if !present {
			h.Write([]byte{0})
			return
		}
		n[0] = 1
		h.Write(n[:1+binary.PutUvarint(n[1:], uint64(len(b)))])
		h.Write(b)
	}
	release := ""
	if f.ReleaseID != nil {
		release = *f.ReleaseID
	}
	field([]byte(f.LayerID), true)
	field([]byte(release), f.ReleaseID != nil)
	field([]byte(f.SectionKey), true)
	field([]byte(f.SchemaVersion), true)
	field(f.FieldSchema, f.FieldSchema != nil)
	field(f.Sources, f.Sources != nil)
	field(f.Coverage, f.Coverage != nil)
	var d [sha256.Size]byte
	h.Sum(d[:0])
	return d
}

const (
	// storeFrozenSQL stores frozen entries ($2, JSON) under their digests
	// ($1), once.
	storeFrozenSQL = `INSERT INTO frozen_layers (digest, entry)
		SELECT d, e::jsonb FROM unnest($1::bytea[], $2::text[]) AS n(d, e)
		ON CONFLICT (digest) DO NOTHING`
	// queryFrozenSQL is a query row's frozen layers as JSON: its own
	// (admitted before 0019) or its entries by digest, in order.
	queryFrozenSQL = `coalesce(frozen, (SELECT coalesce(jsonb_agg(f.entry ORDER BY r.n), '[]')
		FROM unnest(frozen_refs) WITH ORDINALITY AS r(digest, n) JOIN frozen_layers f USING (digest)))`
)
