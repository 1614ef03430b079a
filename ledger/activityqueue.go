package ledger

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"
)

// The audit records of reads are written behind the request.
//
// QueueReadActivity hands a read's record to this process's writer and
// returns at once; the writer inserts whatever has queued in one statement
// (a batch of up to maxActivityBatch records) with a relaxed commit (see
// relaxed.go), then takes the next batch. A batch of fewer than
// activityLingerBatch records lingers up to activityLinger for more (unless
// FlushActivity is waiting), so under load PostgreSQL inserts the records
// of dozens of requests per statement and commit instead of a few: each
// insert is a transaction, and they were a tenth of the CPU of a read. A
// request pays no round trip for its audit record; when idle a record is
// written about activityLinger after its request. Records of writes stay
// synchronous and durable (RecordActivity).
//
// What could be lost, and why that is acceptable:
//   - A crash of this process (not a graceful stop: Close writes everything
//     queued) loses the records still queued: the reads of the last
//     moments (activityLinger and one insert), at most one batch being
//     written plus what queued behind it
//     (the queue holds at most maxQueuedActivity records; a request waits
//     for room rather than drop its record).
//   - A PostgreSQL crash loses the last relaxed commits as relaxed.go says.
//
// Only read records (GET) take this path: nothing is charged, granted or
// changed by the operation they record, and the feed's reads stay exact for
// this process: ListActivity first waits until every record queued here
// before it was called is written. A record queued on another replica
// becomes visible there once its batch commits (normally within
// activityLinger and a few milliseconds).

const (
	// maxActivityBatch bounds one insert.
	maxActivityBatch = 500
	// maxQueuedActivity bounds the queue; QueueReadActivity waits for room.
	maxQueuedActivity = 8192
	// activityWriteTimeout bounds one batch's insert.
	activityWriteTimeout = 30 * time.Second
	// activityLinger is how long a batch of fewer than activityLingerBatch
	// records waits for more before it is inserted.
	activityLinger      = 5 * time.Millisecond
	activityLingerBatch = 64
)

// queuedActivity is one record waiting for the writer.
type queuedActivity struct {
	account, integration uuid.UUID
	a                    Activity
}

// activityQueue feeds the read-record writer. Safe for concurrent use.
type activityQueue struct {
	// wake nudges the writer (capacity 1: a pending nudge is enough).
	wake chan struct{}
	// done closes when the writer has exited.
	done chan struct{}
	// linger is Options.ActivityLinger.
	linger time.Duration
	mu     struct {
		sync.Mutex
		pending []queuedActivity
		// queued counts records ever queued; written counts those the
		// writer has finished with (inserted, or logged as lost).
		queued, written uint64
		// progress closes (and is replaced) whenever written advances.
		progress chan struct{}
		// flushing counts FlushActivity calls waiting: no batch lingers.
		flushing int
		closed   bool
	}
}

// startActivityWriter starts the writer of queued read records; Close
// stops it after writing everything queued.
func (l *Ledger) startActivityWriter() {
	q := &l.activity
	q.wake = make(chan struct{}, 1)
	q.done = make(chan struct{})
	q.mu.progress = make(chan struct{})
	go l.writeActivity()
}

// QueueReadActivity queues the audit record of a read for the writer (see
// above) and returns without a round trip, unless maxQueuedActivity records
// are already waiting: then it waits for room, or for ctx. The record is
// stamped now, with the ledger clock. After Close it writes the record
// itself.
func (l *Ledger) QueueReadActivity(ctx context.Context, account, integration uuid.UUID, a Activity) error {
	if a.ID == uuid.Nil {
		a.ID = newID()
	}
	if a.CreatedAt.IsZero() {
		a.CreatedAt = l.now()
	}
	q := &l.activity
	for {
		q.mu.Lock()
		if q.mu.closed {
			q.mu.Unlock()
			return l.recordActivity(ctx, account, integration, a, true)
		}
		if len(q.mu.pending) < maxQueuedActivity {
			q.mu.pending = append(q.mu.pending, queuedActivity{account, integration, a})
			q.mu.queued++
			q.mu.Unlock()
			select {
			case q.wake <- struct{}{}:
			default:
			}
			return nil
		}
		progress := q.mu.progress
		q.mu.Unlock()
		select {
		case <-progress:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// FlushActivity waits until every read record queued in this process
// before the call is written (or reported lost), or ctx ends.
func (l *Ledger) FlushActivity(ctx context.Context) error {
	q := &l.activity
	q.mu.Lock()
	target := q.mu.queued
	q.mu.flushing++
	q.mu.Unlock()
	defer func() {
		q.mu.Lock()
		q.mu.flushing--
		q.mu.Unlock()
	}()
	for {
		q.mu.Lock()
		if q.mu.written >= target {
			q.mu.Unlock()
			return nil
		}
		progress := q.mu.progress
		q.mu.Unlock()
		select {
		case q.wake <- struct{}{}:
		default:
		}
		select {
		case <-progress:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// stopActivityWriter writes what is queued and stops the writer; later
// records are written synchronously by QueueReadActivity.
func (l *Ledger) stopActivityWriter() {
	q := &l.activity
	if q.done == nil {
		return
	}
	q.mu.Lock()
	already := q.mu.closed
	q.mu.closed = true
	q.mu.Unlock()
	if !already {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
	<-q.done
}

// writeActivity is the writer: it inserts queued records a batch at a time
// until the queue is closed and empty.
func (l *Ledger) writeActivity() {
	q := &l.activity
	defer close(q.done)
	for {
		q.mu.Lock()
		n := min(len(q.mu.pending), maxActivityBatch)
		closed, flushing := q.mu.closed, q.mu.flushing > 0
		q.mu.Unlock()
		if n == 0 {
			if closed {
				return
			}
			<-q.wake
			continue
		}
		if n < activityLingerBatch && !closed && !flushing {
			q.waitForMore()
		}
		q.mu.Lock()
		n = min(len(q.mu.pending), maxActivityBatch)
		batch := q.mu.pending[:n:n]
		q.mu.Unlock()
		l.insertActivity(batch)
		q.mu.Lock()
		// Records queued during the insert were appended after batch (its
		// capacity is n, so they never overwrote it).
		rest := q.mu.pending[n:]
		if len(rest) == 0 {
			q.mu.pending = q.mu.pending[:0]
		} else {
			q.mu.pending = append(make([]queuedActivity, 0, max(len(rest), 64)), rest...)
		}
		q.mu.written += uint64(n)
		close(q.mu.progress)
		q.mu.progress = make(chan struct{})
		q.mu.Unlock()
	}
}

// waitForMore returns after q.linger, or sooner once
// activityLingerBatch records are queued, the queue closes or a
// FlushActivity waits.
func (q *activityQueue) waitForMore() {
	t := time.NewTimer(q.linger)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return
		case <-q.wake:
		}
		q.mu.Lock()
		enough := len(q.mu.pending) >= activityLingerBatch || q.mu.closed || q.mu.flushing > 0
		q.mu.Unlock()
		if enough {
			return
		}
	}
}

// insertActivityBatchSQL inserts a batch of records from parallel arrays.
const insertActivityBatchSQL = `INSERT INTO activity (activity_id, account_id, integration_id, operation, outcome, request_id,
		http_status, error_code, resource_type, resource_id, created_at)
	SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::uuid[],
		$7::int[], $8::text[], $9::text[], $10::text[], $11::timestamptz[])`

// insertActivity writes a batch in one relaxed statement; if that fails it
// writes the records one by one, so one bad record loses only itself. A
// record that cannot be written is logged (never silently dropped).
func (l *Ledger) insertActivity(batch []queuedActivity) {
	ctx, cancel := context.WithTimeout(context.Background(), activityWriteTimeout)
	defer cancel()
	n := len(batch)
	var (
		ids, accounts, integrations, requests = make([]uuid.UUID, n), make([]uuid.UUID, n), make([]uuid.UUID, n), make([]uuid.UUID, n)
		ops, outcomes                         = make([]string, n), make([]string, n)
		statuses                              = make([]int32, n)
		codes, rtypes, rids                   = make([]*string, n), make([]*string, n), make([]*string, n)
		created                               = make([]time.Time, n)
	)
	for i, r := range batch {
		ids[i], accounts[i], integrations[i], requests[i] = r.a.ID, r.account, r.integration, r.a.RequestID
		ops[i], outcomes[i], statuses[i] = r.a.Operation, r.a.Outcome, int32(r.a.HTTPStatus)
		codes[i], rtypes[i], rids[i], created[i] = r.a.ErrorCode, r.a.ResourceType, r.a.ResourceID, r.a.CreatedAt
	}
	_, err := l.execRelaxed(ctx, insertActivityBatchSQL, ids, accounts, integrations, ops, outcomes, requests, statuses, codes, rtypes, rids, created)
	if err == nil {
		return
	}
	if n > 1 {
		l.log.Warn("audit batch refused; writing its records one by one", "records", n, "err", err)
	}
	for _, r := range batch {
		if err := l.recordActivity(ctx, r.account, r.integration, r.a, true); err != nil {
			l.log.Error("audit record lost", "request_id", r.a.RequestID, "operation", r.a.Operation, "err", err)
		}
	}
}
