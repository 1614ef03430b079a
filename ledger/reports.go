package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Report statuses (contract: Report status).
const (
	ReportQueued    = "queued"
	ReportRunning   = "running"
	ReportCompleted = "completed"
	ReportFailed    = "failed"
)

// Report origins.
const (
	OriginAPI     = "api"
	OriginWebsite = "website"
)

// Report text limits (contract: Limits, "Report text").
const (
	MaxSectionBytes = 8 << 10
	MaxSections     = 200
	MaxContentBytes = 1 << 20
)

// ErrReportFinal: the report already failed (and was refunded), so a late
// build may not complete it; or a revision with that number exists.
var ErrReportFinal = newError("ledger: report is final")

// Report is a site report: its order, its build state and its revisions.
type Report struct {
	ID        uuid.UUID
	AccountID uuid.UUID
	// IntegrationID, PurchaseID and IdemKey are nil/"" for an imported
	// (website) report.
	IntegrationID *uuid.UUID
	PurchaseID    *uuid.UUID
	SiteID        *uuid.UUID
	Origin        string
	Jurisdiction  *string
	Status        string
	ReasonCode    *string
	// DatasetIDs are the layers in the report's scope, fixed when ordered;
	// nil: unknown (an imported report), readable only by unrestricted keys.
	DatasetIDs  []string
	Attempts    int
	CreatedAt   time.Time
	CompletedAt *time.Time
	// RevisionCount counts the revisions; Latest is the newest (nil before
	// the first), with its artifacts.
	RevisionCount int
	Latest        *Revision
}

// Revision is one immutable build of a report.
type Revision struct {
	ID               uuid.UUID
	ReportID         uuid.UUID
	Number           int
	CreatedAt        time.Time
	ContentStatus    string // available, unavailable
	ProvenanceStatus string // captured, partial, unknown
	Limitations      []string
	// Evidence is the frozen evidence as the builder wrote it; nil: unknown.
	Evidence  json.RawMessage
	Artifacts []Artifact
}

// ReportSection is one retained text page of a revision.
type ReportSection struct {
	Index   int
	Heading *string
	Text    string
}

// OrderReportParams describe a report order.
type OrderReportParams struct {
	Account     uuid.UUID
	Integration uuid.UUID
	// IdemKey is the request's Idempotency-Key: an order already made with
	// it is returned instead of charging again.
	IdemKey      string
	SiteID       uuid.UUID
	Jurisdiction string
	// DatasetIDs are the report-approved layers in scope (at least one).
	DatasetIDs []string
	// Price is the configured report price, in credits.
	Price int64
	// MaxSiteAreaM2 makes larger sites ineligible.
	MaxSiteAreaM2 float64
}

const reportColumns = `rp.report_id, rp.account_id, rp.integration_id, rp.purchase_id, rp.site_id, rp.origin, rp.jurisdiction, rp.status,
	rp.reason_code, rp.dataset_ids, rp.attempts, rp.created_at, rp.completed_at,
	(SELECT count(*) FROM report_revisions v WHERE v.report_id = rp.report_id)`

func scanReport(row pgx.Row) (Report, error) {
	var r Report
	err := row.Scan(&r.ID, &r.AccountID, &r.IntegrationID, &r.PurchaseID, &r.SiteID, &r.Origin, &r.Jurisdiction, &r.Status,
		&r.ReasonCode, &r.DatasetIDs, &r.Attempts, &r.CreatedAt, &r.CompletedAt, &r.RevisionCount)
	return r, err
}

const insertReportSQL = `INSERT INTO reports (report_id, account_id, integration_id, idem_key, site_id, purchase_id, origin, jurisdiction,
				status, dataset_ids, created_at)
			VALUES ($1, $2, $3, nullif($4, ''), $5, $6, 'api', $7, 'queued', $8, $9)`

// OrderReport charges for a report and queues its build in one transaction:
// it locks the account and integration, checks the site (active, the
// account's, within MaxSiteAreaM2), the balance and the integration's cap,
// and writes the purchase (kind report), its receipt, the debit entry and
// the queued report, or nothing. A retry with the same IdemKey returns the
// first order and charges nothing.
func (l *Ledger) OrderReport(ctx context.Context, p OrderReportParams) (Report, Purchase, error) {
	if len(p.DatasetIDs) == 0 || p.Price < 0 {
		return Report{}, Purchase{}, fmt.Errorf("%w: a report order needs datasets and a price >= 0", ErrInvalid)
	}
	var rep Report
	var pur Purchase
	err := l.tx(ctx, func(tx pgx.Tx) error {
		pay, err := lockPayer(ctx, tx, p.Account, p.Integration)
		if err != nil {
			return err
		}
		var replayed bool
		pur, replayed, err = replayOrCheckSite(ctx, tx, pay, p.SiteID, p.MaxSiteAreaM2, p.IdemKey, func() (uuid.UUID, error) {
			r, err := scanReport(tx.QueryRow(ctx, reportByIdemKeySQL, p.Integration, p.IdemKey))
			if err != nil {
				return uuid.Nil, err
			}
			rep = r
			return *r.PurchaseID, nil
		})
		if err != nil || replayed {
			return err
		}
		id := newID()
		pur, err = l.charge(ctx, tx, pay, debit{kind: "report", site: p.SiteID, report: &id,
			lines: []ReceiptLine{{Description: "Site report (" + p.Jurisdiction + ")", Credits: p.Price}}}, "report")
		if err != nil {
			return err
		}
		site := p.SiteID
		rep = Report{ID: id, AccountID: p.Account, IntegrationID: &p.Integration, SiteID: &site, Origin: OriginAPI,
			Jurisdiction: &p.Jurisdiction, Status: ReportQueued, DatasetIDs: p.DatasetIDs, CreatedAt: *pur.CreatedAt, PurchaseID: &pur.ID}
		_, err = tx.Exec(ctx, insertReportSQL,
			rep.ID, p.Account, p.Integration, p.IdemKey, p.SiteID, pur.ID, p.Jurisdiction, p.DatasetIDs, rep.CreatedAt)
		return err
	})
	if err != nil {
		return Report{}, Purchase{}, chargeError(err)
	}
	return rep, pur, nil
}

const claimReportSQL = `WITH next AS (
			SELECT report_id FROM reports WHERE status = 'queued' ORDER BY created_at, report_id FOR UPDATE SKIP LOCKED LIMIT 1)
		UPDATE reports rp SET status = 'running', attempts = attempts + 1, claimed_until = $1
		FROM next WHERE rp.report_id = next.report_id
		RETURNING ` + reportColumns

// ClaimReport hands the oldest queued report to a builder for attempt (after
// which any replica may reclaim it). Replicas share the queue: FOR UPDATE
// SKIP LOCKED. ErrNotFound: nothing to build.
func (l *Ledger) ClaimReport(ctx context.Context, attempt time.Duration) (Report, error) {
	now := l.now()
	r, err := scanReport(l.pool.QueryRow(ctx, claimReportSQL, now.Add(attempt)))
	return r, translate(err)
}

const requeueReportSQL = `UPDATE reports SET status = 'queued', claimed_until = NULL,
			attempts = CASE WHEN $2 THEN attempts ELSE greatest(attempts - 1, 0) END
		WHERE report_id = $1 AND status = 'running'`

// RequeueReport hands a build back to the queue: an interrupted one
// (counted false: the attempt does not count) or one that failed and may be
// tried again (counted true). False when the report was no longer running.
func (l *Ledger) RequeueReport(ctx context.Context, id uuid.UUID, counted bool) (bool, error) {
	tag, err := l.pool.Exec(ctx, requeueReportSQL, id, counted)
	if err != nil {
		return false, translate(err)
	}
	return tag.RowsAffected() == 1, nil
}

// FailReport marks a queued or running report failed with reasonCode and
// refunds its purchase exactly once, in one transaction: a refund entry,
// the balance and the integration's used credits given back, the purchase's
// credits_refunded and refund_status set (its debit and balance_after are
// never rewritten). False when the report was already final (nothing done).
func (l *Ledger) FailReport(ctx context.Context, id uuid.UUID, reasonCode string) (bool, error) {
	if reasonCode == "" {
		return false, fmt.Errorf("%w: a failed report needs a reason code", ErrInvalid)
	}
	failed := false
	err := l.tx(ctx, func(tx pgx.Tx) error {
		var err error
		failed, _, err = l.failReport(ctx, tx, id, reasonCode)
		return err
	})
	return failed, translate(err)
}

const (
	failReportSQL = `UPDATE reports SET status = 'failed', reason_code = $2, completed_at = $3, claimed_until = NULL
		WHERE report_id = $1 AND status IN ('queued', 'running') RETURNING account_id, purchase_id, integration_id`
	refundPurchaseSQL = `UPDATE purchases SET credits_refunded = credits_charged,
			refund_status = CASE WHEN credits_charged > 0 THEN 'full' ELSE 'none' END
		WHERE purchase_id = $1 AND refund_status = 'none' RETURNING credits_charged`
	insertRefundSQL = `INSERT INTO credit_entries (entry_id, account_id, kind, amount, balance_after, purchase_id, created_at)
		VALUES ($1, $2, 'refund', $3, $4, $5, $6)`
	subtractCreditsUsedSQL = `UPDATE integrations SET credits_used = credits_used - $2 WHERE integration_id = $1`
)

// failReport is FailReport inside tx.
func (l *Ledger) failReport(ctx context.Context, tx pgx.Tx, id uuid.UUID, reasonCode string) (failed, refunded bool, err error) {
	var account uuid.UUID
	var purchase, integration *uuid.UUID
	err = tx.QueryRow(ctx, failReportSQL,
		id, reasonCode, l.now()).Scan(&account, &purchase, &integration)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, false, nil
	}
	if err != nil || purchase == nil {
		return err == nil, false, err
	}
	// Lock order as in purchases: the account row first.
	var balance int64
	if err := tx.QueryRow(ctx, lockBalanceSQL, account).Scan(&balance); err != nil {
		return false, false, err
	}
	var charged int64
	err = tx.QueryRow(ctx, refundPurchaseSQL, *purchase).Scan(&charged)
	if errors.Is(err, pgx.ErrNoRows) {
		return true, false, nil // refunded before: never twice
	}
	if err != nil || charged == 0 {
		return err == nil, false, err
	}
	after := balance + charged
	now := l.now()
	if _, err := tx.Exec(ctx, insertRefundSQL, newID(), account, charged, after, *purchase, now); err != nil {
		return false, false, err
	}
	if _, err := tx.Exec(ctx, setBalanceSQL, account, after); err != nil {
		return false, false, err
	}
	if integration != nil {
		if _, err := tx.Exec(ctx, subtractCreditsUsedSQL, *integration, charged); err != nil {
			return false, false, err
		}
		if err := buildActivity(ctx, tx, account, *integration, id, reasonCode, now); err != nil {
			return false, false, err
		}
	}
	return true, true, nil
}

const insertBuildActivitySQL = `INSERT INTO activity (activity_id, account_id, integration_id, operation, outcome, request_id,
			http_status, error_code, resource_type, resource_id, created_at)
		VALUES ($1, $2, $3, 'build_report', $4, $5, $6, $7, 'report', $8, $9)`

// buildActivity appends the audit record of a build's end to the ordering
// integration's feed: outcome completed (reasonCode "") or failed. A build
// has no request of its own, so it gets a fresh request id, and the HTTP
// status a client polling the failure would associate with its code.
func buildActivity(ctx context.Context, tx pgx.Tx, account, integration, report uuid.UUID, reasonCode string, now time.Time) error {
	outcome, status, code := "completed", 200, (*string)(nil)
	if reasonCode != "" {
		outcome, status, code = "failed", 500, &reasonCode
		switch reasonCode {
		case "source_unavailable":
			status = 503
		case "output_too_large", "result_limit_exceeded", "feature_too_large":
			status = 422
		}
	}
	_, err := tx.Exec(ctx, insertBuildActivitySQL,
		newID(), account, integration, outcome, newID(), status, code, report.String(), now)
	return err
}

const (
	staleReportsSQL = `SELECT report_id FROM reports WHERE status = 'running' AND claimed_until <= $1 AND attempts >= $2
			ORDER BY report_id FOR UPDATE SKIP LOCKED`
	requeueStaleReportsSQL = `UPDATE reports SET status = 'queued', claimed_until = NULL
			WHERE status = 'running' AND claimed_until <= $1 AND attempts < $2`
)

// FailStaleReports requeues reports whose build attempt expired (a crashed
// builder) and fails, with a refund each, those that have used maxAttempts
// attempts. It returns the ids it failed.
func (l *Ledger) FailStaleReports(ctx context.Context, maxAttempts int) ([]uuid.UUID, error) {
	var failed []uuid.UUID
	err := l.tx(ctx, func(tx pgx.Tx) error {
		now := l.now()
		rows, err := tx.Query(ctx, staleReportsSQL, now, maxAttempts)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		if err != nil {
			return err
		}
		for _, id := range ids {
			ok, _, err := l.failReport(ctx, tx, id, "internal_error")
			if err != nil {
				return err
			}
			if ok {
				failed = append(failed, id)
			}
		}
		_, err = tx.Exec(ctx, requeueStaleReportsSQL, now, maxAttempts)
		return err
	})
	if err != nil {
		return nil, translate(err)
	}
	return failed, nil
}

// RevisionParams describe a new revision. Its artifacts were stored before
// (artifacts.Put with this revision's id), so a crash between the two
// leaves an unreferenced file, never a revision without its file.
type RevisionParams struct {
	ID       uuid.UUID // chosen before the artifact upload
	ReportID uuid.UUID
	// Number is the previous revision's number + 1 (1 for the first): two
	// builds of the same revision cannot both land.
	Number           int
	ContentStatus    string
	ProvenanceStatus string
	Limitations      []string
	Evidence         json.RawMessage
	Sections         []ReportSection
}

// ValidateSections checks retained text against the contract's limits:
// at most MaxSections sections of at most MaxSectionBytes valid UTF-8 each,
// MaxContentBytes in all, indexes 0..n-1 in order.
func ValidateSections(sections []ReportSection) error {
	if len(sections) > MaxSections {
		return fmt.Errorf("%w: %d report sections, at most %d", ErrInvalid, len(sections), MaxSections)
	}
	total := 0
	for i, s := range sections {
		if s.Index != i {
			return fmt.Errorf("%w: report section %d has index %d", ErrInvalid, i, s.Index)
		}
		if len(s.Text) > MaxSectionBytes || !utf8.ValidString(s.Text) || (s.Heading != nil && !utf8.ValidString(*s.Heading)) {
			return fmt.Errorf("%w: report section %d is over %d bytes or not UTF-8", ErrInvalid, i, MaxSectionBytes)
		}
		total += len(s.Text)
	}
	if total > MaxContentBytes {
		return fmt.Errorf("%w: report text is %d bytes, at most %d", ErrInvalid, total, MaxContentBytes)
	}
	return nil
}

const (
	reportForRevisionSQL = `SELECT status, (SELECT count(*) FROM report_revisions WHERE report_id = $1), account_id, integration_id
			FROM reports WHERE report_id = $1 FOR UPDATE`
	insertRevisionSQL = `INSERT INTO report_revisions (revision_id, report_id, revision, content_status, provenance_status, limitations, evidence, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`
	completeReportSQL = `UPDATE reports SET status = 'completed', completed_at = $2, claimed_until = NULL WHERE report_id = $1`
)

// AddRevision records a built revision and its text in one transaction and
// completes the report if it was being built. ErrReportFinal when the report
// failed meanwhile (it was refunded: a late build never completes it) or a
// revision with that number exists (another build landed first).
func (l *Ledger) AddRevision(ctx context.Context, p RevisionParams) (Revision, error) {
	if err := ValidateSections(p.Sections); err != nil {
		return Revision{}, err
	}
	if p.Limitations == nil {
		p.Limitations = []string{}
	}
	rev := Revision{ID: p.ID, ReportID: p.ReportID, Number: p.Number, ContentStatus: p.ContentStatus,
		ProvenanceStatus: p.ProvenanceStatus, Limitations: p.Limitations, Evidence: p.Evidence}
	err := l.tx(ctx, func(tx pgx.Tx) error {
		var status string
		var count int
		var account uuid.UUID
		var integration *uuid.UUID
		if err := tx.QueryRow(ctx, reportForRevisionSQL, p.ReportID).Scan(&status, &count, &account, &integration); err != nil {
			return err
		}
		if status == ReportFailed || count+1 != p.Number {
			return ErrReportFinal
		}
		rev.CreatedAt = l.now()
		if _, err := tx.Exec(ctx, insertRevisionSQL, p.ID, p.ReportID, p.Number, p.ContentStatus, p.ProvenanceStatus, p.Limitations,
			nullJSON(p.Evidence), rev.CreatedAt); err != nil {
			return err
		}
		if len(p.Sections) > 0 {
			rows := make([][]any, len(p.Sections))
			for i, s := range p.Sections {
				rows[i] = []any{p.ID, s.Index, s.Heading, s.Text}
			}
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"report_sections"}, []string{"revision_id", "idx", "heading", "body"}, pgx.CopyFromRows(rows)); err != nil {
				return err
			}
		}
		if status != ReportCompleted {
			if _, err := tx.Exec(ctx, completeReportSQL,
				p.ReportID, rev.CreatedAt); err != nil {
				return err
			}
			if integration != nil {
				if err := buildActivity(ctx, tx, account, *integration, p.ReportID, "", rev.CreatedAt); err != nil {
					return err
				}
			}
		}
		var err error
		rev.Artifacts, err = revisionArtifacts(ctx, tx, p.ID)
		return err
	})
	if errors.Is(err, ErrReportFinal) {
		return Revision{}, err
	}
	return rev, translate(err)
}

// ImportReportParams describe a historical website report (PDF only).
type ImportReportParams struct {
	ID, RevisionID uuid.UUID // chosen before the PDF is stored
	Account        uuid.UUID
	SiteID         uuid.UUID
	CreatedAt      time.Time
	Limitations    []string
}

const (
	accountSiteExistsSQL    = `SELECT 1 FROM sites WHERE site_id = $1 AND account_id = $2`
	insertImportedReportSQL = `INSERT INTO reports (report_id, account_id, site_id, origin, status, created_at, completed_at)
			VALUES ($1, $2, $3, 'website', 'completed', $4, $4)`
	insertImportedRevisionSQL = `INSERT INTO report_revisions (revision_id, report_id, revision, content_status, provenance_status, limitations, created_at)
			VALUES ($1, $2, 1, 'unavailable', 'unknown', $3, $4)`
)

// ImportReport records a historical website report: completed, one revision
// whose content is unavailable and whose provenance and dataset scope are
// unknown (readable only by keys without a dataset restriction). The site
// must be the account's (archived sites too: history stays readable).
func (l *Ledger) ImportReport(ctx context.Context, p ImportReportParams) (Report, error) {
	var rep Report
	err := l.tx(ctx, func(tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, accountSiteExistsSQL, p.SiteID, p.Account).Scan(&one); err != nil {
			return err
		}
		created := p.CreatedAt.UTC().Truncate(time.Microsecond)
		if _, err := tx.Exec(ctx, insertImportedReportSQL, p.ID, p.Account, p.SiteID, created); err != nil {
			return err
		}
		lim := p.Limitations
		if lim == nil {
			lim = []string{}
		}
		if _, err := tx.Exec(ctx, insertImportedRevisionSQL, p.RevisionID, p.ID, lim, created); err != nil {
			return err
		}
		var err error
		rep, err = readReport(ctx, tx, p.Account, p.ID)
		return err
	})
	return rep, translate(err)
}

type querier interface {
	QueryRow(context.Context, string, ...any) pgx.Row
	Query(context.Context, string, ...any) (pgx.Rows, error)
}

const revisionColumns = `revision_id, report_id, revision, content_status, provenance_status, limitations, evidence, created_at`

func scanRevision(row pgx.Row) (Revision, error) {
	var v Revision
	err := row.Scan(&v.ID, &v.ReportID, &v.Number, &v.ContentStatus, &v.ProvenanceStatus, &v.Limitations, &v.Evidence, &v.CreatedAt)
	return v, err
}

const revisionArtifactsSQL = `SELECT ` + artifactColumns + ` FROM artifacts WHERE revision_id = $1 ORDER BY created_at, artifact_id`

func revisionArtifacts(ctx context.Context, q querier, revision uuid.UUID) ([]Artifact, error) {
	rows, err := q.Query(ctx, revisionArtifactsSQL, revision)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Artifact{}
	for rows.Next() {
		var a Artifact
		if err := scanArtifact(rows, &a); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

const reportSQL = `SELECT ` + reportColumns + ` FROM reports rp WHERE rp.report_id = $1 AND rp.account_id = $2`

func readReport(ctx context.Context, q querier, account, id uuid.UUID) (Report, error) {
	r, err := scanReport(q.QueryRow(ctx, reportSQL, id, account))
	if err != nil {
		return r, err
	}
	return r, fillLatest(ctx, q, &r)
}

const latestRevisionSQL = `SELECT ` + revisionColumns + ` FROM report_revisions WHERE report_id = $1 ORDER BY revision DESC LIMIT 1`

func fillLatest(ctx context.Context, q querier, r *Report) error {
	if r.RevisionCount == 0 {
		return nil
	}
	v, err := scanRevision(q.QueryRow(ctx, latestRevisionSQL, r.ID))
	if err != nil {
		return err
	}
	if v.Artifacts, err = revisionArtifacts(ctx, q, v.ID); err != nil {
		return err
	}
	r.Latest = &v
	return nil
}

// Report reads one of an account's reports with its latest revision
// (another account's is ErrNotFound).
func (l *Ledger) Report(ctx context.Context, account, id uuid.UUID) (Report, error) {
	r, err := readReport(ctx, l.pool, account, id)
	return r, translate(err)
}

const reportByIDSQL = `SELECT ` + reportColumns + ` FROM reports rp WHERE rp.report_id = $1`

// ReportByID reads a report of any account (builders and operator commands).
func (l *Ledger) ReportByID(ctx context.Context, id uuid.UUID) (Report, error) {
	r, err := scanReport(l.pool.QueryRow(ctx, reportByIDSQL, id))
	if err == nil {
		err = fillLatest(ctx, l.pool, &r)
	}
	return r, translate(err)
}

const reportRevisionSQL = `SELECT ` + revisionColumns + ` FROM report_revisions v
		WHERE v.revision_id = $1 AND v.report_id = $2 AND EXISTS (SELECT 1 FROM reports WHERE report_id = $2 AND account_id = $3)`

// ReportRevision reads one revision of an account's report, with its
// artifacts; ErrNotFound when either is not there.
func (l *Ledger) ReportRevision(ctx context.Context, account, report, revision uuid.UUID) (Revision, error) {
	v, err := scanRevision(l.pool.QueryRow(ctx, reportRevisionSQL,
		revision, report, account))
	if err == nil {
		v.Artifacts, err = revisionArtifacts(ctx, l.pool, v.ID)
	}
	return v, translate(err)
}

// ReportFilter narrows ListReports. Zero fields do not filter.
type ReportFilter struct {
	SiteID        *uuid.UUID
	Status        string
	CreatedFrom   *time.Time // inclusive
	CreatedBefore *time.Time // exclusive
	// After continues oldest first after (created_at, id).
	AfterTime *time.Time
	AfterID   uuid.UUID
	Limit     int
}

const listReportsSQL = `SELECT ` + reportColumns + ` FROM reports rp
		WHERE rp.account_id = $1
		  AND ($2::uuid IS NULL OR rp.site_id = $2)
		  AND ($3 = '' OR rp.status = $3)
		  AND ($4::timestamptz IS NULL OR rp.created_at >= $4)
		  AND ($5::timestamptz IS NULL OR rp.created_at < $5)
		  AND ($6::timestamptz IS NULL OR (rp.created_at, rp.report_id) > ($6, $7))
		ORDER BY rp.created_at, rp.report_id LIMIT $8`

// ListReports returns an account's reports oldest first, each with its
// latest revision, at most f.Limit+1 so the caller can tell whether more exist.
func (l *Ledger) ListReports(ctx context.Context, account uuid.UUID, f ReportFilter) ([]Report, error) {
	rows, err := l.pool.Query(ctx, listReportsSQL,
		account, f.SiteID, f.Status, f.CreatedFrom, f.CreatedBefore, f.AfterTime, f.AfterID, f.Limit+1)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Report, error) { return scanReport(row) })
	if err != nil {
		return nil, translate(err)
	}
	for i := range out {
		if err := fillLatest(ctx, l.pool, &out[i]); err != nil {
			return nil, translate(err)
		}
	}
	return out, nil
}

const listRevisionsSQL = `SELECT ` + revisionColumns + ` FROM report_revisions
		WHERE report_id = $1 AND revision > $2 AND EXISTS (SELECT 1 FROM reports WHERE report_id = $1 AND account_id = $3)
		ORDER BY revision LIMIT $4`

// ListRevisions returns a report's revisions in order after revision number
// after, with their artifacts, at most limit+1. The report must be the
// account's (else ErrNotFound).
func (l *Ledger) ListRevisions(ctx context.Context, account, report uuid.UUID, after, limit int) ([]Revision, error) {
	rows, err := l.pool.Query(ctx, listRevisionsSQL, report, after, account, limit+1)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Revision, error) { return scanRevision(row) })
	if err != nil {
		return nil, translate(err)
	}
	for i := range out {
		if out[i].Artifacts, err = revisionArtifacts(ctx, l.pool, out[i].ID); err != nil {
			return nil, translate(err)
		}
	}
	return out, nil
}

const reportSectionsSQL = `SELECT idx, heading, body FROM report_sections WHERE revision_id = $1 AND idx > $2 ORDER BY idx LIMIT $3`

// ReportSections returns a revision's retained text after section index
// after (-1 for the start), at most limit+1.
func (l *Ledger) ReportSections(ctx context.Context, revision uuid.UUID, after, limit int) ([]ReportSection, error) {
	rows, err := l.pool.Query(ctx, reportSectionsSQL,
		revision, after, limit+1)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ReportSection, error) {
		var s ReportSection
		err := row.Scan(&s.Index, &s.Heading, &s.Text)
		return s, err
	})
	return out, translate(err)
}
