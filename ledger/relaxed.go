package ledger

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Relaxed commits.
//
// Money, receipts, grants, the idempotency records of paid operations and
// of POST /sites, and published releases commit durably (synchronous_commit
// on: the commit waits for its WAL to reach disk). A few other writes
// commit with synchronous_commit off: the commit
// returns once its WAL is in memory, and the WAL writer flushes it within
// 3 x wal_writer_delay (600 ms by default). A crash of PostgreSQL (not of
// siteenv) in that window loses those commits whole (never part of one: the
// database stays consistent), and nothing else. WAL is flushed in order, so
// any later durable commit makes every earlier relaxed one durable too.
//
// What uses it, and what a crash could lose (see docs/operations.md, "Durability"):
//   - POST /queries as a whole (free, its inputs frozen): its admission
//     (Admit: claim, site, query row) and its answer
//     (FinishQueryCompleted: finish, stored response, audit record;
//     CompleteIdempotencyAuditedRelaxed on the step-by-step path), or both
//     in one statement for an answer computed first (admitAnswered:
//     siteenv_admit_answered relaxes its own transaction's commit). A crash
//     can lose an answer already sent, whole, with its query and its site:
//     the client's retry with the same key runs the query afresh. Any
//     later durable commit flushes it (TestRelaxedQueryAnswerAfterCrash).
//     The items below describe the step-by-step path's parts.
//   - SaveSite (a site registered by POST /sites or POST /queries): both run
//     under an idempotency claim, and the response naming the site is sent
//     only after the durable idempotency commit, which flushes the site with
//     it. Anything durable that refers to the site (a purchase, a grant)
//     commits after it and so flushes it too. Lost otherwise: a site only
//     ever seen by reads in the moment before the crash; the client's retry
//     registers it again.
//   - CreateQuery (a query's queued state): the client learns the query id
//     only from the POST response, which is sent after the request's
//     idempotency record commits durably, flushing the query with it. Lost
//     otherwise: a query no client was told about; the client's retry with
//     its Idempotency-Key runs it again.
//   - ClaimQuery (running state): the query returns to queued and is run
//     again; a worker that finishes the lost attempt finds it not running
//     and discards its result (FinishQuery reports it not kept).
//   - FinishQuery (the outcome): the query returns to running and is
//     requeued when its attempt lease lapses, then runs again on the same
//     frozen releases, so it produces the same result. A POST that waited
//     for the result answers only after its durable idempotency commit.
//   - ClaimIdempotency (a request's running claim): every response is
//     sent after a durable commit that follows the claim (the stored
//     response, CompleteIdempotencyAudited; a purchase's), which flushes
//     the claim with it. Lost otherwise: the claim of a request that had
//     not answered and whose writes were all lost with it; the client's
//     retry executes it afresh, as it would after a released claim.
//   - The audit records of reads (GET), which are also queued in the
//     process and written in batches (activityqueue.go: a crash of the
//     process loses what is still queued): the last moments of read
//     activity. Records of writes stay durable; an idempotent write's record
//     commits with its stored response (CompleteIdempotencyAudited).

// relaxedTxSQL begins the implicit transaction of a batch without BEGIN
// (Admit, relaxedBatch): it relaxes the transaction's commit, and
// plans its statements generically. Their plans are key lookups, the same
// for every parameter, and PostgreSQL's default (plan_cache_mode auto) kept
// planning the admission's statements anew on every execution (about a
// fifth of the admission's time). Both settings end with the transaction,
// as SET LOCAL's in an explicit one.
const relaxedTxSQL = `SELECT set_config('synchronous_commit', 'off', true), set_config('plan_cache_mode', 'force_generic_plan', true)`

// relaxedBegin opens a transaction and relaxes its commit in one round trip
// (pgx sends an argument-less statement as a simple query, which may hold
// several statements).
var relaxedBegin = pgx.TxOptions{BeginQuery: "BEGIN; SET LOCAL synchronous_commit = off"}

// relaxedTx is tx with synchronous_commit off for this transaction only.
func (l *Ledger) relaxedTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, l.pool, relaxedBegin, fn)
}

// execRelaxed runs one statement in its own transaction with
// synchronous_commit off, in a single round trip (a pipelined batch).
func (l *Ledger) execRelaxed(ctx context.Context, sql string, args ...any) (tag pgconn.CommandTag, err error) {
	err = l.relaxedBatch(ctx, func(br pgx.BatchResults) (err error) {
		tag, err = br.Exec()
		return err
	}, sql, args...)
	return tag, err
}

// queryRowRelaxed is execRelaxed for a statement that returns at most a
// row, handed to scan. A scan that finds no row (pgx.ErrNoRows) still
// commits and is returned as such.
func (l *Ledger) queryRowRelaxed(ctx context.Context, scan func(pgx.Row) error, sql string, args ...any) error {
	var scanErr error
	err := l.relaxedBatch(ctx, func(br pgx.BatchResults) error {
		if scanErr = scan(br.QueryRow()); errors.Is(scanErr, pgx.ErrNoRows) {
			return nil
		}
		return scanErr
	}, sql, args...)
	if err != nil {
		return err
	}
	return scanErr
}

// relaxedBatch sends relaxedTxSQL and the statement as one batch, one
// implicit transaction (committed at the batch's end, rolled back whole on
// an error); read takes the statement's result.
func (l *Ledger) relaxedBatch(ctx context.Context, read func(pgx.BatchResults) error, sql string, args ...any) error {
	b := &pgx.Batch{}
	b.Queue(relaxedTxSQL)
	b.Queue(sql, args...)
	br := l.pool.SendBatch(ctx, b)
	_, err := br.Exec()
	if err == nil {
		err = read(br)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}
