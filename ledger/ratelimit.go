package ledger

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// Rate windows are fixed windows per account and bucket, counted in an
// unlogged sequence per account and bucket (migration 0012, rate_count):
// shared by every replica, so limits are exact across replicas, and
// counted without a write transaction, so a counted read stays a read-only
// statement. A crash of PostgreSQL restarts the current windows from zero.

// The buckets counted per account.
const (
	BucketReads           = "reads"
	BucketQueryAdmissions = "query_admissions"
)

// rateBuckets get their counters when an account is created, so that no
// request waits for one to be created (rate_count creates one it finds
// missing: an account older than migration 0012, a bucket added later).
var rateBuckets = []string{BucketReads, BucketQueryAdmissions}

// RateWindow is an account's count in the current fixed window of a bucket.
type RateWindow struct {
	// Hits counted in the window (including the one just counted, for Count).
	Hits int
	// Reset is the time left in the window.
	Reset time.Duration
}

// windowIndex is the index of the fixed window of length d (at least a
// second, so the index fits the counter's upper 31 bits) holding t: its
// start as a multiple of d since the Unix epoch, which is how rate_count
// labels a window.
func windowIndex(t time.Time, d time.Duration) int64 {
	return t.UnixNano() / int64(d)
}

// windowBegun reports whether counter value v is in window cur or a later
// one: rate_count's test for a count that needs no beginning of a window.
func windowBegun(v, cur int64) bool { return v>>32 >= cur }

// rateWindow reads a counter's value v = (window << 32) | hits, as of now
// in window cur. A counter still in a finished window (Peek) has no hits
// in cur; one in a later window (a replica whose clock leads began it) is
// that window's.
func rateWindow(v int64, now time.Time, d time.Duration, cur int64) RateWindow {
	w, hits := v>>32, int(v&(1<<32-1))
	if !windowBegun(v, cur) {
		w, hits = cur, 0
	}
	return RateWindow{Hits: hits, Reset: time.Unix(0, (w+1)*int64(d)).Sub(now)}
}

// Hit counts one event for account in bucket's current fixed window and reports
// whether the count is within limit. Counting happens in PostgreSQL so the limit
// holds across every key of the account and every server replica. retryAfter is
// the time left in the window when the limit is exceeded.
func (l *Ledger) Hit(ctx context.Context, account uuid.UUID, bucket string, limit int, window time.Duration) (ok bool, retryAfter time.Duration, err error) {
	w, err := l.Count(ctx, account, bucket, window)
	if err != nil {
		return false, 0, err
	}
	if w.Hits <= limit {
		return true, 0, nil
	}
	return false, w.Reset, nil
}

// Count counts one event for account in bucket's current fixed window and
// returns the window after counting; Hit compares it with a limit.
func (l *Ledger) Count(ctx context.Context, account uuid.UUID, bucket string, window time.Duration) (RateWindow, error) {
	now := l.now()
	cur := windowIndex(now, window)
	v, err := l.rateCount(ctx, account, bucket, cur)
	if err != nil {
		return RateWindow{}, err
	}
	return rateWindow(v, now, window, cur), nil
}

const rateCountSQL = `SELECT rate_count($1, $2, $3)`

// rateCount counts one hit of account in bucket's window cur (rate_count)
// and returns the counter's value.
func (l *Ledger) rateCount(ctx context.Context, account uuid.UUID, bucket string, cur int64) (int64, error) {
	var v int64
	err := l.pool.QueryRow(ctx, rateCountSQL, account, bucket, cur).Scan(&v)
	return v, translate(err)
}

const rateCounterValueSQL = `SELECT pg_sequence_last_value(rate_counter($1, $2))`

// Peek reads account's count in bucket's current window without counting.
func (l *Ledger) Peek(ctx context.Context, account uuid.UUID, bucket string, window time.Duration) (RateWindow, error) {
	now := l.now()
	cur := windowIndex(now, window)
	var v *int64 // NULL: never counted
	if err := l.pool.QueryRow(ctx, rateCounterValueSQL, account, bucket).Scan(&v); err != nil {
		return RateWindow{}, translate(err)
	}
	if v == nil {
		return rateWindow(0, now, window, cur), nil
	}
	return rateWindow(*v, now, window, cur), nil
}
