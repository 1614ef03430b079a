package api

import (
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"siteenv/ledger"
)

// recentKeys are the keys this replica saw authenticated moments ago: by
// a read, or by a query's admission with room left in the account's rate.
// Only their requests run the engine while their admission is in the
// ledger (Server.precompute): engine work for a key not yet checked is free
// work for anyone holding a bad key, so it is begun only for a key that
// was good within recentKeyTTL. The admission still decides: a key revoked
// meanwhile, or over its rate, is refused, its precomputed answer
// discarded and the key forgotten. A key is vouched for only by a request
// that holds the scopes of the operation precomputed (scopes: POST
// /queries'), and a precompute begins only for layers its dataset
// restriction permits: a read by a key that may not run the query vouches
// for nothing.
type recentKeys struct {
	scopes []string // set once, before serving
	mu     sync.Mutex
	m      map[string]keySeen // by key hash
}

// keySeen is until when a key's precompute may begin, and its account and
// integration (a key's never change): an answer computed before the
// admission names its result by them (answerFirst).
type keySeen struct {
	until                time.Time
	account, integration uuid.UUID
	datasets             []string // the key's restriction (nil: none)
}

// permits is whether the key may use every layer of ids.
func (v keySeen) permits(ids []string) bool {
	for _, id := range ids {
		if v.datasets != nil && !slices.Contains(v.datasets, id) {
			return false
		}
	}
	return true
}

// recentKeyTTL bounds how long a key's last authentication vouches for it;
// maxRecentKeys bounds the memory (the map is emptied when full).
const (
	recentKeyTTL  = time.Minute
	maxRecentKeys = 100_000
)

// vouch records that hash, the key of p, was authenticated at now: a
// precompute may begin for recentKeyTTL when p holds the scopes of the
// operation precomputed (else the key is not vouched for).
func (k *recentKeys) vouch(hash []byte, now time.Time, p ledger.Principal) {
	for _, sc := range k.scopes {
		if !p.HasScope(sc) {
			return
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil || len(k.m) >= maxRecentKeys {
		k.m = make(map[string]keySeen)
	}
	k.m[string(hash)] = keySeen{until: now.Add(recentKeyTTL), account: p.AccountID, integration: p.IntegrationID, datasets: p.DatasetIDs()}
}

// vouched reports whether hash was authenticated within recentKeyTTL and
// not forgotten since, with its account and integration.
func (k *recentKeys) vouched(hash []byte, now time.Time) (keySeen, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.m[string(hash)]
	return v, ok && now.Before(v.until)
}

// forget drops hash (its admission was refused, or its rate window is
// full): its requests compute after their admission until it admits a
// query with room again.
func (k *recentKeys) forget(hash []byte) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.m, string(hash))
}
