package ledger

import (
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Prefetch is a read of the presented key's own account that
// AuthenticateCount sends in the same round trip as its statement (one
// pipelined batch), for a handler whose first read is known before the key
// is checked. It reads nothing but that account's rows, and the caller
// uses its answer only once the key has authenticated and holds the
// operation's scopes; otherwise it is discarded. Were a prefetch to fail
// (a database error), the handler reads for itself, as without a prefetch;
// the request's count in its rate window stands (a sequence's nextval is
// not undone with the batch's implicit transaction), so it is counted once.
type Prefetch interface {
	queue(b *pgx.Batch, keyHash []byte)
	scan(br pgx.BatchResults)
}

// ContextPrefetch reads what ContextReads reads, for the key's account and
// integration. Err is ContextReads' error (ErrNotFound: no such key).
type ContextPrefetch struct {
	View ContextView
	Err  error
}

// contextByKeySQL is contextSQL (queries.go) for the account and the
// integration of the key whose hash is $1; $2 is the report-price setting's
// name. TestAuthenticateCountPrefetch holds its answer equal to
// ContextReads'.
var contextByKeySQL = `SELECT a.account_id, a.name, a.credit_balance, a.dataset_ids,
		i.integration_id, i.spend_limit, i.credits_used,
		u.retained, u.queued, u.running, u.next_expiry,
		(SELECT value FROM settings WHERE name = $2)
	FROM accounts a
	JOIN integrations i ON i.integration_id = (SELECT integration_id FROM api_keys WHERE key_hash = $1)
	CROSS JOIN LATERAL ` + queryUsageOf("a.account_id") + ` u
	WHERE a.account_id = (SELECT account_id FROM api_keys WHERE key_hash = $1)`

// queryLiveByKeySQL reads QueryLive of query $2 in the account of the key
// whose hash is $1.
const queryLiveByKeySQL = `SELECT status, result_key, result_bytes, released_at FROM queries
	WHERE query_id = $2 AND account_id = (SELECT account_id FROM api_keys WHERE key_hash = $1)`

func (p *ContextPrefetch) queue(b *pgx.Batch, keyHash []byte) {
	b.Queue(contextByKeySQL, keyHash, SettingReportPrice)
}

func (p *ContextPrefetch) scan(br pgx.BatchResults) {
	p.View, p.Err = scanContext(br.QueryRow())
}

// QueryLivePrefetch reads QueryLive of query ID in the key's account. Err
// is QueryLive's error (ErrNotFound: no such query of that account).
type QueryLivePrefetch struct {
	ID   uuid.UUID
	Live QueryLive
	Err  error
}

func (p *QueryLivePrefetch) queue(b *pgx.Batch, keyHash []byte) {
	b.Queue(queryLiveByKeySQL, keyHash, p.ID)
}

func (p *QueryLivePrefetch) scan(br pgx.BatchResults) {
	v := &p.Live
	p.Err = translate(br.QueryRow().Scan(&v.Status, &v.ResultKey, &v.ResultBytes, &v.ReleasedAt))
}
