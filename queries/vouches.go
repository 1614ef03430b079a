package queries

import (
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"siteenv/ledger"
)

// Vouches are the keys this replica saw authenticated moments ago: by
// a read, or by a query's admission with room left in the account's rate.
// Only their requests run the engine while their admission is in the
// ledger (the API's precompute): engine work for a key not yet checked is free
// work for anyone holding a bad key, so it is begun only for a key that
// was good within KeyTTL. The admission still decides: a key revoked
// meanwhile, or over its rate, is refused, its precomputed answer
// discarded and the key forgotten. A key is vouched for only by a request
// that holds the scopes of the operation precomputed (Scopes: POST
// /queries'), and a precompute begins only for layers its dataset
// restriction permits: a read by a key that may not run the query vouches
// for nothing.
// Safe for concurrent use; Scopes is set once, before serving.
type Vouches struct {
	Scopes []string
	mu     sync.Mutex
	m      map[string]Seen // by key hash
}

// Seen is until when a key's precompute may begin, and its account and
// integration (a key's never change): an answer computed before the
// admission names its result by them (the API's answerFirst).
type Seen struct {
	Until                time.Time
	Account, Integration uuid.UUID
	Datasets             []string // the key's restriction (nil: none)
}

// Permits is whether the key may use every layer of ids.
func (v Seen) Permits(ids []string) bool {
	for _, id := range ids {
		if v.Datasets != nil && !slices.Contains(v.Datasets, id) {
			return false
		}
	}
	return true
}

// KeyTTL bounds how long a key's last authentication vouches for it;
// maxVouches bounds the memory (the map is emptied when full).
const (
	KeyTTL     = time.Minute
	maxVouches = 100_000
)

// Vouch records that hash, the key of p, was authenticated at now: a
// precompute may begin for KeyTTL when p holds the scopes of the
// operation precomputed (else the key is not vouched for).
func (k *Vouches) Vouch(hash []byte, now time.Time, p ledger.Principal) {
	for _, sc := range k.Scopes {
		if !p.HasScope(sc) {
			return
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil || len(k.m) >= maxVouches {
		k.m = make(map[string]Seen)
	}
	k.m[string(hash)] = Seen{Until: now.Add(KeyTTL), Account: p.AccountID, Integration: p.IntegrationID, Datasets: p.DatasetIDs()}
}

// Vouched reports whether hash was authenticated within KeyTTL and
// not forgotten since, with its account and integration.
func (k *Vouches) Vouched(hash []byte, now time.Time) (Seen, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.m[string(hash)]
	return v, ok && now.Before(v.Until)
}

// Forget drops hash (its admission was refused, or its rate window is
// full): its requests compute after their admission until it admits a
// query with room again.
func (k *Vouches) Forget(hash []byte) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.m, string(hash))
}
