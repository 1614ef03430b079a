package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"siteenv/jobs"
	"siteenv/ledger"
	"siteenv/queries"
)

// reportPollAfter is the Retry-After of an accepted order: a build renders
// maps and a PDF, so polling sooner than this mostly finds it queued.
const reportPollAfter = "2"

type reportAcquisitionBody struct {
	APIVersion                  string       `json:"api_version"`
	ReportID                    string       `json:"report_id"`
	AcquisitionID               string       `json:"acquisition_id"`
	PurchaseID                  string       `json:"purchase_id"`
	SiteID                      string       `json:"site_id"`
	Status                      string       `json:"status"`
	Jurisdiction                string       `json:"jurisdiction"`
	DatasetIDs                  []string     `json:"dataset_ids"`
	CreditsCharged              int64        `json:"credits_charged"`
	CreditBalance               int64        `json:"credit_balance"`
	IntegrationCreditsRemaining int64        `json:"integration_credits_remaining"`
	Receipt                     *receiptBody `json:"receipt"`
	ReportURL                   string       `json:"report_url"`
	CreatedAt                   time.Time    `json:"created_at"`
}

func reportURL(id uuid.UUID) string { return BasePath + "/reports/" + id.String() }

// createReport orders a report: args -> the configured price -> (once per
// Idempotency-Key) the site, its jurisdiction and the layers in scope ->
// the charge and the queued build, in one ledger transaction -> 202.
func (s *Server) createReport(r *request) error {
	// The price is the operator's switch: unset, the operation is not
	// offered (as GET /context says), whatever the request. This answer is
	// not stored under the Idempotency-Key, so the same request succeeds
	// once a price is set.
	price, err := s.led.Setting(r.ctx, ledger.SettingReportPrice)
	if errors.Is(err, ledger.ErrNotFound) {
		return newProblem(CodeFeatureDisabled, "Report ordering is not enabled on this server: no report price is configured.")
	}
	if err != nil {
		return err
	}
	var req struct {
		SiteID       *string         `json:"site_id"`
		Jurisdiction json.RawMessage `json:"jurisdiction"`
	}
	if err := decodeBody(string(r.http.Request.Header.ContentType()), r.http.Request.Body(), &req); err != nil {
		return err
	}
	var fe []FieldError
	var siteID uuid.UUID
	if req.SiteID == nil {
		fe = append(fe, FieldError{Field: "site_id", Message: "required"})
	} else if id, err := parseUUID(*req.SiteID); err != nil {
		fe = append(fe, FieldError{Field: "site_id", Message: "must be a UUID"})
	} else {
		siteID = id
	}
	given := ""
	if req.Jurisdiction != nil {
		if err := json.Unmarshal(req.Jurisdiction, &given); err != nil || !slices.Contains(jurisdictions, given) {
			given = ""
			fe = append(fe, FieldError{Field: "jurisdiction", Message: "must be one of " + strings.Join(jurisdictions, ", ") + " (omit it when the site's jurisdiction is known)"})
		}
	}
	if len(fe) > 0 {
		return invalid("The report order is invalid.", fe...)
	}
	logical := struct {
		Site         uuid.UUID
		Jurisdiction string
	}{siteID, given}
	key, _ := r.idempotencyKey()
	return s.idempotent(r, logical, s.reportReplayCheck(r, siteID, given), func() error {
		r.resourceType, r.resourceID = "site", siteID.String()
		p := ledger.OrderReportParams{Account: r.principal.AccountID, Integration: r.principal.IntegrationID, IdemKey: key,
			SiteID: siteID, Price: price, MaxSiteAreaM2: maxSiteAreaM2}
		// A retry of an order that committed though its answer was lost
		// (a 5xx is not stored for replay) finds that order before checking
		// a site or a catalogue that may have changed since.
		prev, err := s.led.ReportByOrderKey(r.ctx, r.principal.IntegrationID, key)
		switch {
		case err == nil:
			if prev.SiteID == nil || *prev.SiteID != siteID || prev.Jurisdiction == nil || (given != "" && given != *prev.Jurisdiction) {
				return newProblem(CodeIdempotencyConflict, "This Idempotency-Key was already used for a different request; use a new key for a new request.")
			}
			if !r.principal.PermitsScope(prev.DatasetIDs) {
				// Another key of the integration ordered it: checked as
				// its replay would be, and not stored (its orderer's retry
				// still finds its order).
				return &queries.CallerRefusal{Err: s.hiddenReport(r, siteID, given)}
			}
			p.Jurisdiction, p.DatasetIDs = *prev.Jurisdiction, prev.DatasetIDs
			return s.orderReport(r, p)
		case !errors.Is(err, ledger.ErrNotFound):
			return err
		}
		if p.Jurisdiction, p.DatasetIDs, err = s.reportOrderChecks(r, siteID, given); err != nil {
			return err
		}
		return s.orderReport(r, p)
	})
}

// reportOrderChecks are an order's checks before its charge: the site
// (another account's site, or none, is not_found, as for section access:
// existence never leaks across accounts; the account's own archived site
// is site_ineligible), its jurisdiction and the datasets of the report's
// scope that the key may use.
func (s *Server) reportOrderChecks(r *request, siteID uuid.UUID, given string) (jurisdiction string, datasets []string, _ error) {
	site, _, err := s.led.ReportSite(r.ctx, r.principal.AccountID, siteID)
	if err != nil {
		return "", nil, &placedError{err: err, place: atReportOrder, field: "site_id"}
	}
	if site.ArchivedAt != nil {
		return "", nil, &placedError{err: errSiteArchived, place: atReportOrder, field: "site_id"}
	}
	if site.AreaM2 > maxSiteAreaM2 {
		return "", nil, &placedError{err: ledger.ErrSiteIneligible, place: atReportOrder, field: "site_id"}
	}
	if jurisdiction, err = reportJurisdiction(site.Geometry, given); err != nil {
		return "", nil, err
	}
	if datasets, err = s.led.ReportScope(r.ctx, jurisdiction, r.principal.DatasetIDs()); err != nil {
		return "", nil, err
	}
	if len(datasets) == 0 {
		return "", nil, newProblem(CodeReportUnavailable, "No report can be built for this site: no dataset of %s or of Australia-wide scope with a current release approved for reports is available to this key. Nothing was charged.", jurisdiction)
	}
	return jurisdiction, datasets, nil
}

// reportReplayCheck refuses the replay of an order of a report the key
// may not read (a dataset of its scope outside the key's restriction, as
// GET /reports/{id} refuses it): hiddenReport.
func (s *Server) reportReplayCheck(r *request, siteID uuid.UUID, given string) func(ledger.IdemResponse) error {
	return func(rec ledger.IdemResponse) error {
		if ds := storedDatasets(rec); ds == nil || r.principal.PermitsScope(ds) {
			return nil
		}
		return s.hiddenReport(r, siteID, given)
	}
}

// hiddenReport answers a key that repeats, with another key's
// Idempotency-Key, an order of a report it may not read. A fresh order by
// this key would be refused by the order's checks, or be another order, of
// this key's narrower scope, charged again: a different logical request,
// so the key used for it is idempotency_conflict.
func (s *Server) hiddenReport(r *request, siteID uuid.UUID, given string) error {
	if _, _, err := s.reportOrderChecks(r, siteID, given); err != nil {
		return err
	}
	return newProblem(CodeIdempotencyConflict, "This Idempotency-Key was used for an order of a report this key may not read; use a new key for a new order.")
}

// orderReport charges and queues the order, answers 202 and wakes a builder.
func (s *Server) orderReport(r *request, p ledger.OrderReportParams) error {
	rep, pur, err := s.led.OrderReport(r.ctx, p)
	if err != nil {
		return &placedError{err: err, place: atReportOrder, field: "site_id"}
	}
	r.resourceType, r.resourceID = "report", rep.ID.String()
	body := reportAcquisitionBody{APIVersion: "1", ReportID: rep.ID.String(), AcquisitionID: pur.ID.String(), PurchaseID: pur.ID.String(),
		SiteID: p.SiteID.String(), Status: rep.Status, Jurisdiction: p.Jurisdiction, DatasetIDs: rep.DatasetIDs,
		CreditsCharged: pur.CreditsCharged, IntegrationCreditsRemaining: max(0, pur.IntegrationCreditsRemaining),
		Receipt: receiptView(pur.Receipt), ReportURL: reportURL(rep.ID), CreatedAt: rep.CreatedAt.UTC()}
	if pur.BalanceAfter != nil {
		body.CreditBalance = *pur.BalanceAfter
	}
	r.http.Response.Header.Set("Location", body.ReportURL)
	r.http.Response.Header.Set("Retry-After", reportPollAfter)
	if err := r.writeJSON(202, body); err != nil {
		return err
	}
	if s.runner != nil {
		s.runner.Notify()
	}
	return nil
}

// errSiteArchived: a report was ordered for the account's archived site.
var errSiteArchived = errors.New("api: site archived")

var errReportHidden = newProblem(CodeNotFound, "The report does not exist or is not accessible to this key.")

// readableReport loads the path's report if this key may see it: another
// account's, or one whose datasets the key's restriction does not all
// permit (a historical report of unknown scope: any restriction), is
// not_found, exactly like a missing one. Artifacts apply the same rule.
func (s *Server) readableReport(r *request) (ledger.Report, error) {
	id, err := r.pathUUID("report_id")
	if err != nil {
		return ledger.Report{}, err
	}
	r.resourceType, r.resourceID = "report", id.String()
	rep, err := s.led.Report(r.ctx, r.principal.AccountID, id)
	if errors.Is(err, ledger.ErrNotFound) {
		return ledger.Report{}, errReportHidden
	}
	if err != nil {
		return ledger.Report{}, err
	}
	if !r.principal.PermitsScope(rep.DatasetIDs) {
		return ledger.Report{}, errReportHidden
	}
	return rep, nil
}

type reportSummary struct {
	ReportID      string     `json:"report_id"`
	SiteID        *string    `json:"site_id"`
	Status        string     `json:"status"`
	ReasonCode    *string    `json:"reason_code"`
	Jurisdiction  *string    `json:"jurisdiction"`
	Origin        string     `json:"origin"`
	DatasetIDs    []string   `json:"dataset_ids"`
	CreatedAt     time.Time  `json:"created_at"`
	CompletedAt   *time.Time `json:"completed_at"`
	RevisionID    *string    `json:"revision_id"`
	Revision      *int       `json:"revision"`
	ContentStatus string     `json:"content_status"`
	ReportURL     string     `json:"report_url"`
}

// reportSummaryView renders a report at revision rev (nil: before the first).
func reportSummaryView(rep ledger.Report, rev *ledger.Revision) reportSummary {
	v := reportSummary{ReportID: rep.ID.String(), Status: rep.Status, ReasonCode: rep.ReasonCode, Jurisdiction: rep.Jurisdiction,
		Origin: rep.Origin, DatasetIDs: rep.DatasetIDs, CreatedAt: rep.CreatedAt.UTC(), CompletedAt: utc(rep.CompletedAt),
		ContentStatus: "pending", ReportURL: reportURL(rep.ID)}
	if rep.SiteID != nil {
		v.SiteID = ptr(rep.SiteID.String())
	}
	if rev != nil {
		v.RevisionID, v.Revision, v.ContentStatus = ptr(rev.ID.String()), ptr(rev.Number), rev.ContentStatus
	}
	return v
}

type artifactEntry struct {
	ArtifactID string `json:"artifact_id"`
	Revision   int    `json:"revision"`
	RevisionID string `json:"revision_id"`
	Filename   string `json:"filename"`
	MediaType  string `json:"media_type"`
	Size       int64  `json:"size"`
	SHA256     string `json:"sha256"`
}

func artifactEntries(rev *ledger.Revision) []artifactEntry {
	out := []artifactEntry{}
	if rev == nil {
		return out
	}
	for _, a := range rev.Artifacts {
		out = append(out, artifactEntry{ArtifactID: a.ID.String(), Revision: rev.Number, RevisionID: rev.ID.String(),
			Filename: a.Filename, MediaType: a.MediaType, Size: a.Size, SHA256: a.SHA256})
	}
	return out
}

type revisionsRef struct {
	Count            int     `json:"count"`
	LatestRevisionID *string `json:"latest_revision_id"`
	RevisionsURL     string  `json:"revisions_url"`
}

type reportBody struct {
	reportSummary
	PurchaseID       *string         `json:"purchase_id"`
	Receipt          *receiptBody    `json:"receipt"`
	CreditsRefunded  *int64          `json:"credits_refunded"`
	RefundStatus     *string         `json:"refund_status"`
	ProvenanceStatus string          `json:"provenance_status"`
	Limitations      []string        `json:"limitations"`
	Revisions        revisionsRef    `json:"revisions"`
	Artifacts        []artifactEntry `json:"artifacts"`
	Evidence         *evidenceBody   `json:"evidence"`
}

// evidenceBody is jobs.Evidence as served: every field the revision froze,
// mapped one by one so that the document's schema and this shape cannot
// drift apart silently (a field added to jobs.Evidence is not served until
// it is mapped here and documented).
type evidenceBody struct {
	Version            string          `json:"version"`
	BuiltAt            time.Time       `json:"built_at"`
	Site               evidenceSite    `json:"site"`
	PreviousRevisionID *string         `json:"previous_revision_id"`
	Layers             []evidenceLayer `json:"layers"`
	SiteProfile        []evidenceKeyed `json:"site_profile,omitempty"`
}

type evidenceKeyed struct {
	MapKey    int    `json:"map_key"`
	LayerID   string `json:"layer_id"`
	FeatureID string `json:"feature_id"`
}

type evidenceSite struct {
	SiteID       string            `json:"site_id"`
	Name         *string           `json:"name"`
	Fingerprint  string            `json:"fingerprint"`
	AreaM2       float64           `json:"area_m2"`
	Jurisdiction string            `json:"jurisdiction"`
	Location     *evidenceLocation `json:"location,omitempty"`
}

type evidenceLocation struct {
	Longitude float64  `json:"longitude"`
	Latitude  float64  `json:"latitude"`
	MGAZone   *int     `json:"mga_zone"`
	Easting   *float64 `json:"easting"`
	Northing  *float64 `json:"northing"`
	Addresses []string `json:"addresses"`
	LotPlans  []string `json:"lot_plans"`
	// LGAs: absent for evidence stored before evidence-3 (not known then),
	// a list (maybe empty: none held) since.
	LGAs     *[]string `json:"local_government_areas,omitempty"`
	TimeZone string    `json:"time_zone"`
}

type evidenceBand struct {
	Band  string  `json:"band"`
	MinM  float64 `json:"min_m"`
	MaxM  float64 `json:"max_m"`
	Count *int64  `json:"count"`
}

type evidenceBandChange struct {
	Band          string `json:"band"`
	PreviousCount *int64 `json:"previous_count"`
	Count         *int64 `json:"count"`
}

type evidenceLayer struct {
	LayerID             string            `json:"layer_id"`
	Name                string            `json:"name"`
	SectionKey          string            `json:"section_key"`
	SectionName         string            `json:"section_name"`
	ReleaseID           *string           `json:"release_id"`
	SchemaVersion       *string           `json:"schema_version"`
	RadiusM             float64           `json:"radius_m"`
	DataStatus          string            `json:"data_status"`
	Reason              *string           `json:"reason"`
	Coverage            string            `json:"coverage"`
	MatchedFeatureCount *int64            `json:"matched_feature_count"`
	Provenance          []provenanceItem  `json:"provenance"`
	Features            []evidenceFeature `json:"features"`
	Changes             *evidenceChanges  `json:"changes"`
	Bands               []evidenceBand    `json:"bands,omitempty"`
	MapRadiusM          float64           `json:"map_radius_m,omitempty"`
	NotDrawnKeys        []int             `json:"not_drawn_keys,omitempty"`
}

type evidenceFeature struct {
	FeatureID  string   `json:"feature_id"`
	DistanceM  float64  `json:"distance_m"`
	BearingDeg *float64 `json:"bearing_deg"`
	MapKey     int      `json:"map_key,omitempty"`
	OnSite     *bool    `json:"on_site,omitempty"`
	Drawn      *bool    `json:"drawn,omitempty"`
	Band       string   `json:"band,omitempty"`
}

type evidenceChanges struct {
	PreviousReleaseID           *string              `json:"previous_release_id"`
	ReleaseChanged              bool                 `json:"release_changed"`
	PreviousDataStatus          *string              `json:"previous_data_status"`
	PreviousMatchedFeatureCount *int64               `json:"previous_matched_feature_count"`
	AddedCount                  int64                `json:"added_count"`
	RemovedCount                int64                `json:"removed_count"`
	AddedFeatureIDs             []string             `json:"added_feature_ids"`
	RemovedFeatureIDs           []string             `json:"removed_feature_ids"`
	BandChanges                 []evidenceBandChange `json:"band_changes,omitempty"`
	Moved                       []evidenceMove       `json:"moved,omitempty"`
}

type evidenceMove struct {
	FeatureID    string `json:"feature_id"`
	PreviousBand string `json:"previous_band"`
	Band         string `json:"band"`
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// evidenceView decodes a revision's frozen evidence; nil stays nil (unknown:
// an imported report).
func evidenceView(raw json.RawMessage) (*evidenceBody, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var e jobs.Evidence
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, fmt.Errorf("api: a revision's frozen evidence does not decode: %w", err)
	}
	out := &evidenceBody{Version: e.Version, BuiltAt: e.BuiltAt.UTC(), PreviousRevisionID: e.PreviousRevisionID,
		Site: evidenceSite{SiteID: e.Site.SiteID, Name: e.Site.Name, Fingerprint: e.Site.Fingerprint, AreaM2: e.Site.AreaM2,
			Jurisdiction: e.Site.Jurisdiction},
		Layers: make([]evidenceLayer, 0, len(e.Layers))}
	if loc := e.Site.Location; loc != nil {
		out.Site.Location = &evidenceLocation{Longitude: loc.Longitude, Latitude: loc.Latitude, MGAZone: loc.MGAZone, Easting: loc.Easting,
			Northing: loc.Northing, Addresses: nonNilStrings(loc.Addresses), LotPlans: nonNilStrings(loc.LotPlans), TimeZone: loc.TimeZone}
		if loc.LGAs != nil {
			lgas := loc.LGAs
			out.Site.Location.LGAs = &lgas
		}
	}
	for _, k := range e.SiteProfile {
		out.SiteProfile = append(out.SiteProfile, evidenceKeyed{MapKey: k.MapKey, LayerID: k.LayerID, FeatureID: k.FeatureID})
	}
	if e.SiteProfile != nil && out.SiteProfile == nil {
		out.SiteProfile = []evidenceKeyed{}
	}
	for _, l := range e.Layers {
		v := evidenceLayer{LayerID: l.LayerID, Name: l.Name, SectionKey: l.SectionKey, SectionName: l.SectionName,
			ReleaseID: l.ReleaseID, SchemaVersion: l.SchemaVersion, RadiusM: l.RadiusM, DataStatus: l.DataStatus, Reason: l.Reason,
			Coverage: l.Coverage, MatchedFeatureCount: l.MatchedCount,
			Provenance: make([]provenanceItem, 0, len(l.Provenance)), Features: make([]evidenceFeature, 0, len(l.Features)),
			MapRadiusM: l.MapRadiusM, NotDrawnKeys: l.NotDrawn}
		for _, b := range l.Bands {
			v.Bands = append(v.Bands, evidenceBand{Band: b.Band, MinM: b.MinM, MaxM: b.MaxM, Count: b.Count})
		}
		for _, p := range l.Provenance {
			v.Provenance = append(v.Provenance, provenanceItem{ReleaseID: p.ReleaseID, Source: p.Source})
		}
		for _, f := range l.Features {
			ef := evidenceFeature{FeatureID: f.FeatureID, DistanceM: f.DistanceM, BearingDeg: f.BearingDeg, MapKey: f.MapKey, Band: f.Band}
			if f.MapKey > 0 { // evidence-2: every listed feature says where it is drawn
				ef.OnSite, ef.Drawn = ptr(f.OnSite), ptr(f.Drawn)
			}
			v.Features = append(v.Features, ef)
		}
		if c := l.Changes; c != nil {
			v.Changes = &evidenceChanges{PreviousReleaseID: c.PreviousReleaseID, ReleaseChanged: c.ReleaseChanged,
				PreviousMatchedFeatureCount: c.PreviousCount, AddedCount: c.AddedCount, RemovedCount: c.RemovedCount,
				AddedFeatureIDs: nonNilStrings(c.Added), RemovedFeatureIDs: nonNilStrings(c.Removed)}
			for _, b := range c.BandChanges {
				v.Changes.BandChanges = append(v.Changes.BandChanges, evidenceBandChange{Band: b.Band, PreviousCount: b.PreviousCount, Count: b.Count})
			}
			for _, m := range c.Moved {
				v.Changes.Moved = append(v.Changes.Moved, evidenceMove{FeatureID: m.FeatureID, PreviousBand: m.PreviousBand, Band: m.Band})
			}
			if c.PreviousStatus != "" {
				v.Changes.PreviousDataStatus = ptr(c.PreviousStatus)
			}
		}
		out.Layers = append(out.Layers, v)
	}
	return out, nil
}

func (s *Server) getReport(r *request) error {
	q := r.query("revision_id")
	revID := q.uuid("revision_id")
	if err := q.err(); err != nil {
		return err
	}
	rep, err := s.readableReport(r)
	if err != nil {
		return err
	}
	rev := rep.Latest
	if revID != nil {
		v, err := s.led.ReportRevision(r.ctx, r.principal.AccountID, rep.ID, *revID)
		if errors.Is(err, ledger.ErrNotFound) {
			return &Problem{Code: CodeNotFound, Detail: "The report has no revision " + revID.String() + ".",
				FieldErrors: []FieldError{{Field: "revision_id", Message: "not a revision of this report"}}}
		}
		if err != nil {
			return err
		}
		rev = &v
	}
	body := reportBody{reportSummary: reportSummaryView(rep, rev), ProvenanceStatus: "pending", Limitations: []string{},
		Revisions: revisionsRef{Count: rep.RevisionCount, RevisionsURL: reportURL(rep.ID) + "/revisions"}, Artifacts: artifactEntries(rev)}
	if rep.Latest != nil {
		body.Revisions.LatestRevisionID = ptr(rep.Latest.ID.String())
	}
	if rev != nil {
		body.ProvenanceStatus, body.Limitations = rev.ProvenanceStatus, nonNilStrings(rev.Limitations)
		if body.Evidence, err = evidenceView(rev.Evidence); err != nil {
			return err
		}
	}
	if rep.PurchaseID != nil {
		p, err := s.led.Purchase(r.ctx, r.principal.AccountID, *rep.PurchaseID)
		if err != nil {
			return err
		}
		body.PurchaseID = ptr(p.ID.String())
		body.Receipt, body.CreditsRefunded, body.RefundStatus = receiptView(p.Receipt), p.CreditsRefunded, p.RefundStatus
	}
	return r.writeJSON(200, struct {
		APIVersion string     `json:"api_version"`
		Report     reportBody `json:"report"`
	}{"1", body})
}

func (s *Server) listReports(r *request) error {
	q := r.query("cursor", "limit", "site_id", "status", "created_from", "created_before")
	f := ledger.ReportFilter{
		SiteID:        q.uuid("site_id"),
		Status:        q.enum("status", ledger.ReportQueued, ledger.ReportRunning, ledger.ReportCompleted, ledger.ReportFailed),
		CreatedFrom:   q.time("created_from"),
		CreatedBefore: q.time("created_before"),
		Limit:         q.limit(historyPageDefault, historyPageMax),
	}
	if f.CreatedFrom != nil && f.CreatedBefore != nil && !f.CreatedBefore.After(*f.CreatedFrom) {
		q.add("created_before", "must be later than created_from (created_from is inclusive, created_before exclusive)")
	}
	cur := q.cursor()
	if err := q.err(); err != nil {
		return err
	}
	l := s.list(r, "reports", binding(fmtUUID(f.SiteID), f.Status, fmtTime(f.CreatedFrom), fmtTime(f.CreatedBefore)))
	var pos timeIDPosition
	if err := l.resume(cur, &pos); err != nil {
		return err
	}
	f.AfterTime, f.AfterID = pos.after()
	rows, err := s.led.ListReports(r.ctx, r.principal.AccountID, f)
	if err != nil {
		return err
	}
	rows, pg, err := pageOf(l, rows, f.Limit, func(rep *ledger.Report) timeIDPosition { return timeIDPosition{T: rep.CreatedAt, ID: rep.ID} })
	if err != nil {
		return err
	}
	body := struct {
		APIVersion string          `json:"api_version"`
		Reports    []reportSummary `json:"reports"`
		Page       page            `json:"page"`
	}{APIVersion: "1", Reports: []reportSummary{}, Page: pg}
	for _, rep := range rows {
		// Dataset restrictions are rechecked on every page (a page may come
		// out short, even empty: the cursor still moves on).
		if !r.principal.PermitsScope(rep.DatasetIDs) {
			continue
		}
		body.Reports = append(body.Reports, reportSummaryView(rep, rep.Latest))
	}
	return r.writeJSON(200, body)
}

type revisionBody struct {
	RevisionID       string          `json:"revision_id"`
	Revision         int             `json:"revision"`
	CreatedAt        time.Time       `json:"created_at"`
	ContentStatus    string          `json:"content_status"`
	ProvenanceStatus string          `json:"provenance_status"`
	Limitations      []string        `json:"limitations"`
	Artifacts        []artifactEntry `json:"artifacts"`
}

// revisionPosition continues a revision list after revision number N.
type revisionPosition struct {
	N int `json:"n"`
}

func (s *Server) listReportRevisions(r *request) error {
	q := r.query("cursor", "limit")
	limit := q.limit(historyPageDefault, historyPageMax)
	cur := q.cursor()
	if err := q.err(); err != nil {
		return err
	}
	rep, err := s.readableReport(r)
	if err != nil {
		return err
	}
	l := s.list(r, "report-revisions:"+rep.ID.String(), binding())
	var pos revisionPosition
	if err := l.resume(cur, &pos); err != nil {
		return err
	}
	rows, err := s.led.ListRevisions(r.ctx, r.principal.AccountID, rep.ID, pos.N, limit)
	if err != nil {
		return err
	}
	rows, pg, err := pageOf(l, rows, limit, func(v *ledger.Revision) revisionPosition { return revisionPosition{N: v.Number} })
	if err != nil {
		return err
	}
	body := struct {
		APIVersion string         `json:"api_version"`
		ReportID   string         `json:"report_id"`
		Revisions  []revisionBody `json:"revisions"`
		Page       page           `json:"page"`
	}{APIVersion: "1", ReportID: rep.ID.String(), Revisions: []revisionBody{}, Page: pg}
	for i := range rows {
		v := &rows[i]
		body.Revisions = append(body.Revisions, revisionBody{RevisionID: v.ID.String(), Revision: v.Number, CreatedAt: v.CreatedAt.UTC(),
			ContentStatus: v.ContentStatus, ProvenanceStatus: v.ProvenanceStatus, Limitations: nonNilStrings(v.Limitations),
			Artifacts: artifactEntries(v)})
	}
	return r.writeJSON(200, body)
}

// contentPosition pins a text traversal to its revision: the page after
// section index After of revision Revision.
type contentPosition struct {
	Revision uuid.UUID `json:"r"`
	After    int       `json:"a"`
}

type sectionBody struct {
	Index   int     `json:"index"`
	Heading *string `json:"heading"`
	Text    string  `json:"text"`
}

// getReportContent pages a revision's retained text (the latest unless
// revision_id names one). The cursor carries the revision, so a traversal
// started on the latest revision stays on it when a newer one lands.
// Before the first revision the text is not ready yet (result_not_ready,
// retryable); a PDF-only revision, or a failed report that never had one,
// is content_unavailable.
func (s *Server) getReportContent(r *request) error {
	q := r.query("cursor", "limit", "revision_id")
	limit := q.limit(historyPageDefault, historyPageMax)
	revID := q.uuid("revision_id")
	cur := q.cursor()
	if err := q.err(); err != nil {
		return err
	}
	rep, err := s.readableReport(r)
	if err != nil {
		return err
	}
	l := s.list(r, "report-content:"+rep.ID.String(), binding(fmtUUID(revID)))
	pos := contentPosition{After: -1}
	if err := l.resume(cur, &pos); err != nil {
		return err
	}
	switch {
	case cur != "":
	case revID != nil:
		pos.Revision = *revID
	case rep.Latest != nil:
		pos.Revision = rep.Latest.ID
	case rep.Status == ledger.ReportFailed:
		return newProblem(CodeContentUnavailable, "The report failed (%s) before any revision was built; it has no text. Its charge was refunded.", ptrOr(rep.ReasonCode, "unknown reason"))
	default:
		return &Problem{Code: CodeResultNotReady, RetryAfter: 2,
			Detail: "The report is still " + rep.Status + "; its text is retained once it completes. Poll " + reportURL(rep.ID) + "."}
	}
	rev := rep.Latest
	if rev == nil || rev.ID != pos.Revision {
		v, err := s.led.ReportRevision(r.ctx, r.principal.AccountID, rep.ID, pos.Revision)
		if errors.Is(err, ledger.ErrNotFound) {
			return &Problem{Code: CodeNotFound, Detail: "The report has no revision " + pos.Revision.String() + ".",
				FieldErrors: []FieldError{{Field: "revision_id", Message: "not a revision of this report"}}}
		}
		if err != nil {
			return err
		}
		rev = &v
	}
	if rev.ContentStatus != "available" {
		return newProblem(CodeContentUnavailable, "Revision %d of this report is PDF-only: no text was retained. Read its PDF through the artifacts of GET %s.", rev.Number, reportURL(rep.ID))
	}
	rows, err := s.led.ReportSections(r.ctx, rev.ID, pos.After, limit)
	if err != nil {
		return err
	}
	body := struct {
		APIVersion string        `json:"api_version"`
		ReportID   string        `json:"report_id"`
		RevisionID string        `json:"revision_id"`
		Revision   int           `json:"revision"`
		Sections   []sectionBody `json:"sections"`
		Page       page          `json:"page"`
	}{APIVersion: "1", ReportID: rep.ID.String(), RevisionID: rev.ID.String(), Revision: rev.Number, Sections: []sectionBody{}}
	// Sections are at most 8 KiB of text, but JSON escapes can multiply
	// that: a page also stops before the 1 MiB response limit.
	budget, used := maxResponseBytes-64<<10, 0
	more := len(rows) > limit
	for i, sec := range rows {
		if i == limit {
			break
		}
		b := sectionBody{Index: sec.Index, Heading: sec.Heading, Text: sec.Text}
		enc, err := json.Marshal(b)
		if err != nil {
			return err
		}
		if used+len(enc) > budget && len(body.Sections) > 0 {
			more = true
			break
		}
		used += len(enc)
		body.Sections = append(body.Sections, b)
	}
	if more {
		if body.Page, err = l.next(contentPosition{Revision: rev.ID, After: body.Sections[len(body.Sections)-1].Index}); err != nil {
			return err
		}
	}
	return r.writeJSON(200, body)
}

func ptrOr(p *string, def string) string {
	if p == nil {
		return def
	}
	return *p
}
