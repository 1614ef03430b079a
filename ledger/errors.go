package ledger

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"
)

// Errors returned by the ledger. Match them with errors.Is.
var (
	ErrNotFound = newError("ledger: not found")
	// ErrConflict: the write collides with existing data (an integrity
	// violation the calling path did not turn into a more specific error).
	ErrConflict = newError("ledger: conflict")
	// ErrInvalid: an argument was refused. Values PostgreSQL refuses (a NUL
	// in text, a malformed uuid, ...) come as an *InputError, which wraps it.
	ErrInvalid      = newError("ledger: invalid argument")
	ErrSchemaTooNew = newError("ledger: database schema is newer than this binary")
	ErrKeyRevoked   = newError("ledger: api key revoked")
	// ErrUnavailable: the database cannot be reached, the connection was lost
	// or shut down, or the transaction lost a serialization race or deadlock.
	// It is the only class a caller should retry.
	ErrUnavailable         = newError("ledger: database unavailable")
	ErrIdempotencyMismatch = newError("ledger: idempotency key reused for a different request")
	// ErrInternal: any other database failure. It is a bug (of a query or of
	// the schema), not an outage; the detail is in the error for the log.
	ErrInternal = newError("ledger: internal database error")
)

// domainError is the type of every sentinel above (and of the other
// packages' files' sentinels), so translate can tell the ledger's own errors,
// which pass through unchanged, from the driver's, which it classifies.
type domainError struct{ msg string }

func newError(msg string) error      { return &domainError{msg} }
func (e *domainError) Error() string { return e.msg }

// InputError is a value the database refused (SQLSTATE class 22, data
// exception): a NUL or invalid UTF-8 in text, a string too long, a malformed
// number or uuid. It wraps ErrInvalid. Message is the database's own and
// belongs in the server log only.
type InputError struct {
	// Field names the refused argument when the query path knows it (see
	// nameParams), else "".
	Field string
	// Param is the 1-based query parameter PostgreSQL named, 0 if none.
	Param int
	// Column is the column PostgreSQL named, if any.
	Column   string
	SQLState string
	Message  string
}

func (e *InputError) Error() string {
	var b strings.Builder
	b.WriteString("ledger: invalid argument")
	if e.Field != "" {
		b.WriteString(" " + e.Field)
	} else if e.Param > 0 {
		b.WriteString(" $" + strconv.Itoa(e.Param))
	}
	fmt.Fprintf(&b, ": sqlstate %s: %s", e.SQLState, e.Message)
	return b.String()
}

func (e *InputError) Unwrap() error { return ErrInvalid }

// DBError is a classified database failure: Class is ErrUnavailable,
// ErrConflict, ErrInternal or (a foreign key or check violation) ErrInvalid. Its text carries the database's
// message for the server log; it never reaches a client.
type DBError struct {
	Class      error
	SQLState   string // "" when the failure is not the server's (connection)
	Constraint string
	Message    string
	// ctx is the context error when the failure was a deadline.
	ctx error
}

func (e *DBError) Error() string {
	s := e.Class.Error()
	if e.SQLState != "" {
		s += ": sqlstate " + e.SQLState
	}
	if e.Constraint != "" {
		s += " (" + e.Constraint + ")"
	}
	return s + ": " + e.Message
}

func (e *DBError) Unwrap() []error {
	if e.ctx != nil {
		return []error{e.Class, e.ctx}
	}
	return []error{e.Class}
}

// translate is the one place the ledger classifies errors: every query path
// returns its error through it. The ledger's own errors pass through; driver
// errors become ErrNotFound, an *InputError (ErrInvalid), or a *DBError of
// class ErrConflict, ErrUnavailable or ErrInternal. Only ErrUnavailable means
// "retry later": calling bad input or a bug an outage makes clients retry a
// request that can never succeed.
func translate(err error) error {
	if err == nil {
		return nil
	}
	var de *domainError
	var ie *InputError
	var dbe *DBError
	if errors.As(err, &de) || errors.As(err, &ie) || errors.As(err, &dbe) {
		return err
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	// The caller went away: not a database failure at all.
	if errors.Is(err, context.Canceled) {
		return err
	}
	// A connection that cannot be made is an outage whatever the server said
	// (too many connections, database starting up or shutting down, ...).
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return &DBError{Class: ErrUnavailable, Message: err.Error()}
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return classifyPg(pe)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		// Typically waiting for a pooled connection or a lock under load.
		return &DBError{Class: ErrUnavailable, Message: err.Error(), ctx: context.DeadlineExceeded}
	}
	if isConnectionFailure(err) {
		return &DBError{Class: ErrUnavailable, Message: err.Error()}
	}
	// Encoding or scanning failures and the like: a bug in this package.
	return &DBError{Class: ErrInternal, Message: err.Error()}
}

// classifyPg classifies an error the server reported, by SQLSTATE
// (https://www.postgresql.org/docs/current/errcodes-appendix.html).
func classifyPg(pe *pgconn.PgError) error {
	d := &DBError{SQLState: pe.Code, Constraint: pe.ConstraintName, Message: pe.Message}
	class := pe.Code[:min(2, len(pe.Code))]
	switch {
	case class == "22": // data exception: the value is at fault
		return &InputError{Param: paramOf(pe.Where), Column: pe.ColumnName, SQLState: pe.Code, Message: pe.Message}
	case pe.Code == "23503", pe.Code == "23514": // foreign key, check: the argument names or holds what cannot be
		d.Class = ErrInvalid
	case class == "23": // other integrity violations (unique, exclusion, not null)
		d.Class = ErrConflict
	case class == "08", // connection exception
		pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03", // admin shutdown, crash shutdown, cannot connect now
		pe.Code == "53300",                     // too many connections
		pe.Code == "40001", pe.Code == "40P01": // serialization failure, deadlock: the transaction may simply be retried
		d.Class = ErrUnavailable
	default:
		d.Class = ErrInternal
	}
	return d
}

// paramOf reads the query parameter number from an error context such as
// "unnamed portal parameter $2 = '...'", which PostgreSQL adds when a bound
// value is refused. It only names the argument; classification never
// depends on it.
func paramOf(where string) int {
	i := strings.Index(where, "$")
	if i < 0 {
		return 0
	}
	j := i + 1
	for j < len(where) && where[j] >= '0' && where[j] <= '9' {
		j++
	}
	n, err := strconv.Atoi(where[i+1 : j])
	if err != nil {
		return 0
	}
	return n
}

// isConnectionFailure reports driver errors that mean the connection, not
// the statement, failed: closed pool or connection, network errors, EOF from
// a server that went away, timeouts, or anything the driver says happened
// before the statement was sent.
func isConnectionFailure(err error) bool {
	var ne net.Error
	return errors.Is(err, puddle.ErrClosedPool) || errors.Is(err, pgconn.ErrConnClosed) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ne) ||
		pgconn.Timeout(err) || pgconn.SafeToRetry(err)
}

// nameParams names the parameters of the query that failed with err
// (names[i] is parameter $i+1), so that an *InputError says which argument
// the database refused. Other errors are returned unchanged.
func nameParams(err error, names ...string) error {
	err = translate(err)
	var ie *InputError
	if errors.As(err, &ie) && ie.Field == "" && ie.Param > 0 && ie.Param <= len(names) {
		ie.Field = names[ie.Param-1]
	}
	return err
}

// unavailable wraps a failure that can only mean the database is out of
// reach (Open, Ping).
func unavailable(err error) error {
	return &DBError{Class: ErrUnavailable, Message: err.Error()}
}
