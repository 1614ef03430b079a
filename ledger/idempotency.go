package ledger

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Idempotency claims are leases.
//
// A running claim records a random claim token and lease_until. The process
// that holds it renews the lease of all its running claims in one statement
// every leaseRenewal (renewLeases); a claim whose lease has lapsed belongs to a
// process that died (kill -9, crash, lost network) and is taken over by the
// next retry at once, instead of blocking its key for minutes. Why a lease
// rather than a PostgreSQL session advisory lock tied to the claimer's
// connection: a lock needs one dedicated connection per in-flight request on
// top of the connection the request's own work uses (a 100-way storm would
// exhaust the pool or the server's max_connections, and transaction-mode
// poolers drop session locks), while a lease costs one UPDATE per process
// every ~2 s and works across any number of replicas on one database.
//
// Only the token's holder may complete or release a claim, so a process that
// lost its lease (it stalled beyond the lease) cannot overwrite or delete the
// record of the process that took over. Money stays safe even then: a
// purchase carries the Idempotency-Key itself (AcquireParams.IdemKey).
//
// Lease times come from the ledger clock; replicas' clocks must agree to well
// within the lease (NTP does: milliseconds against seconds).

// DefaultIdempotencyLease is Options.IdempotencyLease's default.
const DefaultIdempotencyLease = 5 * time.Second

// legacyStale is when a running claim written before leases existed (no
// lease_until) counts as abandoned: the previous rule.
const legacyStale = "5 minutes"

// ErrClaimLost: the claim was taken over after its lease lapsed; the
// response was not stored.
var ErrClaimLost = newError("ledger: idempotency claim lost to another request")

// IdemResponse is a stored first response, replayed byte for byte.
type IdemResponse struct {
	Status      int
	ContentType string
	Location    string
	Body        []byte
}

// IdemState says what a claim found.
type IdemState int

const (
	// IdemFresh: the caller owns the key and must Complete or Release it.
	IdemFresh IdemState = iota
	// IdemReplay: a finished first response exists (IdemClaim.Response).
	IdemReplay
	// IdemMismatch: the key was used for a different logical request.
	IdemMismatch
	// IdemInFlight: the first request is still running (its lease is live).
	IdemInFlight
)

// IdemClaim is the outcome of ClaimIdempotency.
type IdemClaim struct {
	State    IdemState
	Response IdemResponse
	// Token identifies a fresh claim to CompleteIdempotency and
	// ReleaseIdempotency.
	Token uuid.UUID
	// TookOver: the fresh claim is a running one whose lease lapsed (its
	// process died before it stored a response): what that request wrote
	// may have committed (QueryByIdemKey).
	TookOver bool
}

// leases are the running claims this Ledger holds and renews.
type leases struct {
	mu struct {
		sync.Mutex
		tokens map[uuid.UUID]struct{}
	}
	stop chan struct{}
	done chan struct{}
}

func (ls *leases) add(t uuid.UUID) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.mu.tokens == nil {
		ls.mu.tokens = map[uuid.UUID]struct{}{}
	}
	ls.mu.tokens[t] = struct{}{}
}

func (ls *leases) remove(t uuid.UUID) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	delete(ls.mu.tokens, t)
}

func (ls *leases) held() []uuid.UUID {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	out := make([]uuid.UUID, 0, len(ls.mu.tokens))
	for t := range ls.mu.tokens {
		out = append(out, t)
	}
	return out
}

// startLeases starts the renewal loop; Close stops it.
func (l *Ledger) startLeases() {
	l.leases.stop, l.leases.done = make(chan struct{}), make(chan struct{})
	go l.renewLeases()
}

// stopLeases ends renewal without releasing anything, as a crash would: the
// claims lapse after the lease.
func (l *Ledger) stopLeases() {
	if l.leases.stop == nil {
		return
	}
	select {
	case <-l.leases.stop:
	default:
		close(l.leases.stop)
	}
	<-l.leases.done
}

// renewLeases extends this process's running claims every third of a lease,
// so two renewals can fail before a live claim lapses. Real time paces it (it
// is the process being alive); the lease itself is on the ledger clock.
func (l *Ledger) renewLeases() {
	defer close(l.leases.done)
	t := time.NewTicker(l.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-l.leases.stop:
			return
		case <-t.C:
		}
		tokens := l.leases.held()
		if len(tokens) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), l.lease/3)
		_, err := l.pool.Exec(ctx, renewIdempotencySQL, tokens, l.now().Add(l.lease))
		cancel()
		if err != nil {
			l.log.Warn("idempotency lease renewal failed", "claims", len(tokens), "err", translate(err))
		}
	}
}

// ClaimIdempotency claims (integration, key) for a request whose logical
// identity is (operation, fingerprint). A running claim whose lease has
// lapsed (its process is gone) is taken over at once. A fresh claim is
// renewed by this Ledger until CompleteIdempotency or ReleaseIdempotency.
func (l *Ledger) ClaimIdempotency(ctx context.Context, integration uuid.UUID, key, operation string, fingerprint []byte) (IdemClaim, error) {
	now := l.now()
	token := uuid.New()
	// Renewal starts before the row exists: renewing a token with no row is a no-op.
	l.leases.add(token)
	fresh := false
	defer func() {
		if !fresh {
			l.leases.remove(token)
		}
	}()
	// Relaxed commit (relaxed.go): the claim needs no fsync of its own. A
	// response is sent only after a durable commit that follows the claim
	// (the stored response's, or a purchase's), and flushing that commit's
	// WAL flushes the claim with it; a claim lost with a crash before then
	// lost everything its request wrote too, and a retry runs it afresh.
	tag, err := l.execRelaxed(ctx, claimIdempotencySQL, integration, key, operation, fingerprint, now, token, now.Add(l.lease))
	if err != nil {
		return IdemClaim{}, nameParams(err, "", "Idempotency-Key")
	}
	if tag.RowsAffected() == 1 {
		fresh = true
		return IdemClaim{State: IdemFresh, Token: token}, nil
	}
	var (
		op, state  string
		fp         []byte
		status     *int
		ctype, loc *string
		body       []byte
	)
	err = l.pool.QueryRow(ctx, readIdempotencySQL, integration, key).
		Scan(&op, &fp, &state, &status, &ctype, &loc, &body)
	if err = translate(err); errors.Is(err, ErrNotFound) {
		// Released between the insert and the read: the caller polls again.
		return IdemClaim{State: IdemInFlight}, nil
	}
	if err != nil {
		return IdemClaim{}, err
	}
	if op != operation || !bytes.Equal(fp, fingerprint) {
		return IdemClaim{State: IdemMismatch}, nil
	}
	if state == "done" {
		r := IdemResponse{Status: *status, Body: body}
		if ctype != nil {
			r.ContentType = *ctype
		}
		if loc != nil {
			r.Location = *loc
		}
		return IdemClaim{State: IdemReplay, Response: r}, nil
	}
	// Take over a lapsed claim. The condition is re-checked on the locked row,
	// so of several replicas racing for it exactly one wins.
	tag, err = l.pool.Exec(ctx, takeOverIdempotencySQL, integration, key, token, now.Add(l.lease), now)
	if err != nil {
		return IdemClaim{}, translate(err)
	}
	if tag.RowsAffected() == 1 {
		fresh = true
		l.log.Info("idempotency claim taken over after its lease lapsed", "operation", operation)
		return IdemClaim{State: IdemFresh, Token: token, TookOver: true}, nil
	}
	return IdemClaim{State: IdemInFlight}, nil
}

// CompleteIdempotency stores the first response of the claim token for
// replay. ErrClaimLost: another request took the claim over meanwhile.
func (l *Ledger) CompleteIdempotency(ctx context.Context, integration uuid.UUID, key string, token uuid.UUID, r IdemResponse) error {
	l.leases.remove(token)
	tag, err := l.pool.Exec(ctx, completeIdempotencySQL, integration, key, token, r.Status, r.ContentType, r.Location, r.Body, l.now())
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return ErrClaimLost
	}
	return nil
}

// completeAuditedSQL stores the response (as CompleteIdempotency) and
// appends the request's audit record (as RecordActivity) in one statement:
// one durable commit for both. The record is appended even when the claim
// was lost, since the request did run; done counts the stored responses.
const completeAuditedSQL = `WITH done AS (
		UPDATE idempotency SET state = 'done', status = $4, content_type = $5, location = nullif($6, ''), body = $7, updated_at = $8,
			claim_token = NULL, lease_until = NULL
		WHERE integration_id = $1 AND idem_key = $2 AND claim_token = $3 AND state = 'running'
		RETURNING 1
	), audit AS (
		INSERT INTO activity (activity_id, account_id, integration_id, operation, outcome, request_id,
			http_status, error_code, resource_type, resource_id, created_at)
		VALUES ($9, $10, $1, $11, $12, $13, $14, $15, $16, $17, $8)
	)
	SELECT count(*) FROM done`

// CompleteIdempotencyAudited is CompleteIdempotency and RecordActivity of
// the request's audit record a, committed together (durably) in one round
// trip. The record is written even when the claim was lost (ErrClaimLost);
// any other error writes neither.
func (l *Ledger) CompleteIdempotencyAudited(ctx context.Context, integration uuid.UUID, key string, token uuid.UUID, r IdemResponse, account uuid.UUID, a Activity) error {
	l.leases.remove(token)
	if a.ID == uuid.Nil {
		a.ID = newID()
	}
	var done int
	err := l.pool.QueryRow(ctx, completeAuditedSQL, integration, key, token, r.Status, r.ContentType, r.Location, r.Body, l.now(),
		a.ID, account, a.Operation, a.Outcome, a.RequestID, a.HTTPStatus, a.ErrorCode, a.ResourceType, a.ResourceID).Scan(&done)
	if err != nil {
		return translate(err)
	}
	if done == 0 {
		return ErrClaimLost
	}
	return nil
}

// ReleaseIdempotency forgets the claim token's running claim so that a retry
// executes again (used after retryable failures, which must not be replayed).
// A claim taken over by another request is left alone.
func (l *Ledger) ReleaseIdempotency(ctx context.Context, integration uuid.UUID, key string, token uuid.UUID) error {
	l.leases.remove(token)
	_, err := l.pool.Exec(ctx, releaseIdempotencySQL, integration, key, token)
	return translate(err)
}

// LapseIdempotency hands the claim token's running claim back lapsed
// instead of forgetting it: the key's next request takes it over at once
// (IdemClaim.TookOver) and so looks for the query its first request's
// admission committed (QueryByIdemKey). For a taken-over claim whose
// query exists, ended without a response of its own (a sibling key's
// refusal, a retryable failure): released, the next request would claim
// the key afresh and admit a second query. A claim taken over by another
// request is left alone.
func (l *Ledger) LapseIdempotency(ctx context.Context, integration uuid.UUID, key string, token uuid.UUID) error {
	l.leases.remove(token)
	_, err := l.pool.Exec(ctx, lapseIdempotencySQL, integration, key, token, l.now())
	return translate(err)
}

// The statements of idempotency claims, by what they do.
const (
	// renewIdempotencySQL extends the leases of the running claims of the
	// tokens $1 to $2.
	renewIdempotencySQL = `UPDATE idempotency SET lease_until = $2 WHERE claim_token = ANY ($1) AND state = 'running'`
	// claimIdempotencySQL inserts a running claim unless the key has one.
	claimIdempotencySQL = `INSERT INTO idempotency (integration_id, idem_key, operation, fingerprint, state, created_at, updated_at, claim_token, lease_until)
		VALUES ($1, $2, $3, $4, 'running', $5, $5, $6, $7) ON CONFLICT DO NOTHING`
	// readIdempotencySQL reads a key's claim or stored response.
	readIdempotencySQL = `SELECT operation, fingerprint, state, status, content_type, location, body
		FROM idempotency WHERE integration_id = $1 AND idem_key = $2`
	// takeOverIdempotencySQL takes a running claim whose lease lapsed by $5.
	takeOverIdempotencySQL = `UPDATE idempotency SET claim_token = $3, lease_until = $4, updated_at = $5
		WHERE integration_id = $1 AND idem_key = $2 AND state = 'running'
		AND coalesce(lease_until, updated_at + interval '` + legacyStale + `') <= $5`
	// completeIdempotencySQL stores the response of the claim of token $3.
	completeIdempotencySQL = `UPDATE idempotency SET state = 'done', status = $4, content_type = $5, location = nullif($6, ''), body = $7, updated_at = $8,
			claim_token = NULL, lease_until = NULL
		WHERE integration_id = $1 AND idem_key = $2 AND claim_token = $3 AND state = 'running'`
	// lapseIdempotencySQL ends the lease of the running claim of token $3
	// at $4, keeping the claim.
	lapseIdempotencySQL = `UPDATE idempotency SET lease_until = $4, updated_at = $4
		WHERE integration_id = $1 AND idem_key = $2 AND claim_token = $3 AND state = 'running'`
	// releaseIdempotencySQL forgets the running claim of token $3.
	releaseIdempotencySQL = `DELETE FROM idempotency WHERE integration_id = $1 AND idem_key = $2 AND claim_token = $3 AND state = 'running'`
)
