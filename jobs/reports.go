package jobs

// Report builds (contract: Report status; issue 12 "Generation").
//
// A queued report is claimed by a report worker of any replica
// (ledger.ClaimReport: FOR UPDATE SKIP LOCKED), built from the current
// releases of the layers in its scope, printed to a PDF that is stored as an
// immutable artifact, and recorded as a revision (ledger.AddRevision), which
// completes the report. A build that fails for a reason a retry may cure is
// handed back to the queue until MaxAttempts attempts were used; then, or at
// once for a reason no retry cures, the report fails with a reason code and
// its purchase is refunded exactly once (ledger.FailReport). A builder that
// crashes leaves its claim to expire: the janitor (Sweep) requeues it, or
// fails and refunds it once its attempts are used (ledger.FailStaleReports).
// A build interrupted by Stop is requeued without counting the attempt.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/paulmach/orb"

	"siteenv/artifacts"
	"siteenv/engine"
	"siteenv/geo"
	"siteenv/ledger"
	"siteenv/report"
	"siteenv/report/content"
	"siteenv/tiles"
)

const (
	// ReportRadiusCapM caps the distance a report searches a layer to. A
	// report has no client to choose a radius, so each layer is searched to
	// its own radius_max_m (the widest distance its publisher deems
	// relevant), capped at 10 km: engine.MaxRadiusM, the farthest any query
	// may reach, so a report never states more than a query could check.
	ReportRadiusCapM = engine.MaxRadiusM
	// MaxPDFBytes is the largest report PDF: the contract's 100 MiB
	// artifact limit. A larger one fails the report output_too_large.
	MaxPDFBytes = artifacts.MaxSize

	// Engine limits per layer of a report: the queries' feature limit, and
	// byte limits that allow the large polygons the maps draw (as the map
	// image's).
	reportMaxBytes        = 128 << 20
	reportMaxFeatureBytes = 64 << 20
	// reportParcelMarginM and reportMaxParcels: cadastral context on the maps.
	reportParcelMarginM = 300
	reportMaxParcels    = 2000
	// reportMaxMaps bounds the section maps of one PDF (report.RenderPDF
	// places at most 48 maps, the cover among them).
	reportMaxMaps = 40
)

// Report failure reason codes (contract: error codes; a report's reason_code).
const (
	ReasonSourceUnavailable = "source_unavailable"
	ReasonOutputTooLarge    = "output_too_large"
	ReasonInternalError     = "internal_error"
)

// truncatedMarker ends retained text that had to be cut to the contract's
// limits: text is never cut silently.
const truncatedMarker = "\n[truncated]"

// ErrNotRevisable: the report cannot be revised (not completed, or an
// imported report whose dataset scope and site evidence are unknown).
var ErrNotRevisable = errors.New("jobs: report cannot be revised")

// buildError is a build failure with the reason code the report fails
// with; retry says whether another attempt may succeed.
type buildError struct {
	reason string
	retry  bool
	err    error
}

func (e *buildError) Error() string { return e.err.Error() }
func (e *buildError) Unwrap() error { return e.err }

// classify gives a failed build's reason code and whether to retry it.
// Anything not classified where it happened is an internal error, which
// another attempt (on this or another replica) may not repeat.
func classify(err error) (reason string, retry bool) {
	var be *buildError
	if errors.As(err, &be) {
		return be.reason, be.retry
	}
	return ReasonInternalError, true
}

// reportWork is a report worker's loop: like work, for reports.
func (r *Runner) reportWork(claimCtx, execCtx context.Context) {
	t := time.NewTicker(r.cfg.Poll)
	defer t.Stop()
	for {
		for claimCtx.Err() == nil {
			ran, err := r.runReportOnce(claimCtx, execCtx)
			if err != nil && claimCtx.Err() == nil {
				r.cfg.Logger.Error("report worker", "err", err)
			}
			if !ran {
				break
			}
		}
		select {
		case <-claimCtx.Done():
			return
		case <-r.reportWake:
		case <-t.C:
		}
	}
}

// RunReportOnce claims and builds one queued report; false when none was
// queued. If ctx ends while the report builds, the build stops and the
// report is requeued (the attempt not counted).
func (r *Runner) RunReportOnce(ctx context.Context) (bool, error) {
	return r.runReportOnce(ctx, ctx)
}

// runReportOnce claims under claimCtx and builds under execCtx.
func (r *Runner) runReportOnce(claimCtx, execCtx context.Context) (bool, error) {
	rep, err := r.led.ClaimReport(claimCtx, r.cfg.Lease)
	if errors.Is(err, ledger.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer r.claims.hold(reportClaim, ledger.JobClaim{ID: rep.ID, Attempt: rep.Attempts})()
	log := r.cfg.Logger.With("report_id", rep.ID, "attempt", rep.Attempts)
	began := time.Now()
	actx, cancel := context.WithTimeoutCause(execCtx, r.cfg.ReportAttempt, errAttemptTimeout)
	defer cancel()
	rev, err := r.buildRevision(actx, rep, rep.Latest)
	if err == nil {
		log.Info("report built", "revision_id", rev.ID, "revision", rev.Number, "duration", time.Since(began))
		return true, nil
	}
	if errors.Is(err, ledger.ErrReportFinal) {
		// Failed meanwhile (and refunded), or another build landed first:
		// this build's PDF stays an unreferenced file.
		log.Warn("report build discarded: the report was failed or completed by another build", "err", err)
		return true, nil
	}
	// Hand back or fail even when the attempt's own context has ended.
	rctx, cancelSettle := context.WithTimeout(context.WithoutCancel(execCtx), requeueTimeout)
	defer cancelSettle()
	if interrupted(actx) {
		requeued, rerr := r.led.RequeueReport(rctx, rep.ID, false)
		if rerr != nil {
			rerr = fmt.Errorf("jobs: requeue interrupted report %s: %w", rep.ID, rerr)
			r.mu.Lock()
			r.mu.requeueErrs = append(r.mu.requeueErrs, rerr)
			r.mu.Unlock()
			return true, rerr
		}
		if requeued {
			log.Info("report build interrupted; requeued")
		}
		return true, nil
	}
	reason, retry := classify(err)
	if errors.Is(context.Cause(actx), errAttemptTimeout) {
		reason, retry = ReasonInternalError, true
	}
	if retry && rep.Attempts < r.cfg.MaxAttempts {
		log.Warn("report build failed; requeued for another attempt", "reason_code", reason, "max_attempts", r.cfg.MaxAttempts, "err", err)
		_, rerr := r.led.RequeueReport(rctx, rep.ID, true)
		return true, rerr
	}
	log.Error("report build failed", "reason_code", reason, "attempts", rep.Attempts, "err", err)
	if _, ferr := r.led.FailReport(rctx, rep.ID, reason); ferr != nil {
		return true, fmt.Errorf("jobs: fail report %s: %w", rep.ID, ferr)
	}
	return true, nil
}

// ReviseReport builds revision N+1 of a completed report from the current
// releases of the layers in its scope, at no charge; earlier revisions are
// kept, and the new one states what changed since revision N. Two revisions
// racing for the same number: one lands, the other is ledger.ErrReportFinal.
func (r *Runner) ReviseReport(ctx context.Context, reportID uuid.UUID) (ledger.Revision, error) {
	rep, err := r.led.ReportByID(ctx, reportID)
	if err != nil {
		return ledger.Revision{}, err
	}
	switch {
	case rep.Status != ledger.ReportCompleted || rep.Latest == nil:
		return ledger.Revision{}, fmt.Errorf("%w: report %s is %s", ErrNotRevisable, rep.ID, rep.Status)
	case rep.DatasetIDs == nil || rep.SiteID == nil:
		return ledger.Revision{}, fmt.Errorf("%w: report %s was imported; its dataset scope is unknown", ErrNotRevisable, rep.ID)
	}
	return r.buildRevision(ctx, rep, rep.Latest)
}

// builtLayer is one layer of a build: its catalogue entry, its current
// release and what the engine found.
type builtLayer struct {
	id       string
	layer    ledger.Layer // zero (but id) when not in the catalogue
	known    bool
	release  *ledger.Release
	sources  []tiles.Source
	radiusM  float64
	coverage orb.Geometry
	res      engine.LayerResult
}

// sectionName is the layer's section's display name.
func (b *builtLayer) sectionName() string {
	if b.layer.SectionName != "" {
		return b.layer.SectionName
	}
	if b.layer.SectionKey != "" {
		return b.layer.SectionKey
	}
	return "Other"
}

func (b *builtLayer) name() string {
	if b.layer.Name != "" {
		return b.layer.Name
	}
	return b.id
}

// buildRevision builds the report's next revision: previous is the latest
// revision (nil for the first) that the new one states its changes against.
func (r *Runner) buildRevision(ctx context.Context, rep ledger.Report, previous *ledger.Revision) (ledger.Revision, error) {
	number := rep.RevisionCount + 1
	if rep.SiteID == nil || rep.DatasetIDs == nil {
		return ledger.Revision{}, &buildError{reason: ReasonInternalError, err: fmt.Errorf("jobs: report %s has no site or dataset scope to build", rep.ID)}
	}
	built := r.led.Clock().Now().UTC().Truncate(time.Second)
	site, refs, err := r.led.ReportSite(ctx, rep.AccountID, *rep.SiteID)
	if err != nil {
		return ledger.Revision{}, fmt.Errorf("jobs: report %s site: %w", rep.ID, err)
	}
	siteGeom, err := geo.DecodeStored("boundary of site "+site.ID.String(), site.Geometry)
	if err != nil {
		return ledger.Revision{}, fmt.Errorf("jobs: report %s: %w", rep.ID, err)
	}
	layers, err := r.reportLayers(ctx, rep.DatasetIDs)
	if err != nil {
		return ledger.Revision{}, err
	}
	if err := r.searchLayers(ctx, siteGeom, layers); err != nil {
		return ledger.Revision{}, err
	}
	var prevEv *Evidence
	if previous != nil && len(previous.Evidence) > 0 {
		prevEv = &Evidence{}
		if err := json.Unmarshal(previous.Evidence, prevEv); err != nil {
			return ledger.Revision{}, fmt.Errorf("jobs: report %s revision %d evidence: %w", rep.ID, previous.Number, err)
		}
	}
	revID, err := uuid.NewV7()
	if err != nil {
		return ledger.Revision{}, err
	}
	jurisdiction := ""
	if rep.Jurisdiction != nil {
		jurisdiction = *rep.Jurisdiction
	}
	parcels, err := r.parcelsNear(ctx, siteGeom)
	if err != nil {
		return ledger.Revision{}, err
	}
	held, err := r.heldRegisters(ctx)
	if err != nil {
		return ledger.Revision{}, err
	}
	in := assembleInput(rep, revID, number, built, site, refs, jurisdiction, siteGeom, layers, parcels)
	in.Held = held
	in.Basemap = r.cfg.Basemap
	out := content.Build(in)
	ev := evidence(in, out, site, built)
	attachProvenance(&ev, layers)
	doc := out.Doc
	if len(doc.Sections) > reportMaxMaps {
		for i := reportMaxMaps; i < len(doc.Sections); i++ {
			doc.Sections[i].Map = report.Map{}
		}
	}
	if previous != nil {
		pid := previous.ID.String()
		ev.PreviousRevisionID = &pid
		if doc.Changes, err = r.compareRevisions(ctx, siteGeom, &ev, prevEv, layers); err != nil {
			return ledger.Revision{}, err
		}
	}
	pdf, err := report.RenderPDF(doc)
	if err != nil {
		return ledger.Revision{}, fmt.Errorf("jobs: render report %s: %w", rep.ID, err)
	}
	if len(pdf) > r.cfg.MaxReportBytes {
		return ledger.Revision{}, &buildError{reason: ReasonOutputTooLarge,
			err: fmt.Errorf("jobs: report %s PDF is %d bytes, over the %d byte limit", rep.ID, len(pdf), r.cfg.MaxReportBytes)}
	}
	evJSON, err := json.Marshal(ev)
	if err != nil {
		return ledger.Revision{}, err
	}
	// The PDF is stored (and recorded as an artifact of this revision id)
	// before the revision: a crash between the two leaves only a file no
	// revision references, never a revision without its file.
	if _, err := artifacts.Put(ctx, r.store, r.led, artifacts.Params{Account: rep.AccountID, ReportID: &rep.ID, RevisionID: &revID,
		Revision: &number, Filename: PDFFilename(rep.ID, number), MediaType: ledger.MediaPDF, DatasetIDs: rep.DatasetIDs},
		bytes.NewReader(pdf), int64(len(pdf))); err != nil {
		if errors.Is(err, artifacts.ErrTooLarge) {
			return ledger.Revision{}, &buildError{reason: ReasonOutputTooLarge, err: err}
		}
		return ledger.Revision{}, fmt.Errorf("jobs: store report %s PDF: %w", rep.ID, err)
	}
	provenance := "captured"
	limitations := []string{content.Disclaimer}
	for _, l := range layers {
		switch {
		case l.release == nil:
			provenance = "partial"
			limitations = append(limitations, fmt.Sprintf("Layer %s had no published release when this revision was built: its outcome is unknown.", l.id))
		case l.res.Status == engine.StatusUnavailable:
			limitations = append(limitations, fmt.Sprintf("Layer %s could not be listed (%s): its count is unknown, not zero.", l.id, l.res.Reason))
		}
	}
	// Once the PDF is stored the revision is recorded even if the attempt
	// is being stopped: the work is done, and AddRevision settles a race
	// with a failure or another build (ErrReportFinal).
	rev, err := r.led.AddRevision(context.WithoutCancel(ctx), ledger.RevisionParams{ID: revID, ReportID: rep.ID, Number: number,
		ContentStatus: "available", ProvenanceStatus: provenance, Limitations: limitations, Evidence: evJSON,
		Sections: FitSections(retainedText(doc))})
	if err != nil {
		return ledger.Revision{}, err
	}
	return rev, nil
}

// PDFFilename names a revision's PDF artifact.
func PDFFilename(reportID uuid.UUID, revision int) string {
	return "site-report-" + reportID.String() + "-r" + strconv.Itoa(revision) + ".pdf"
}

// reportLayers reads the layers in scope and their current releases,
// ordered by section, then layer id.
func (r *Runner) reportLayers(ctx context.Context, ids []string) ([]*builtLayer, error) {
	cat, err := r.led.LayersForQuery(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("jobs: report layers: %w", err)
	}
	out := make([]*builtLayer, 0, len(ids))
	for _, id := range ids {
		b := &builtLayer{id: id}
		lr, ok := cat[id]
		if ok {
			b.layer, b.known, b.release = lr.Layer, true, lr.Release
			b.radiusM = math.Min(lr.Layer.RadiusMaxM, ReportRadiusCapM)
		}
		if b.release != nil {
			if err := json.Unmarshal(b.release.Sources, &b.sources); err != nil {
				return nil, fmt.Errorf("jobs: layer %s release %s sources: %w", id, b.release.ReleaseID, err)
			}
			var err error
			if b.coverage, err = geo.DecodeCoverage(geo.CoverageKey{Layer: id, Release: b.release.ReleaseID}, b.release.Coverage); err != nil {
				return nil, err
			}
		}
		out = append(out, b)
	}
	slices.SortStableFunc(out, func(a, b *builtLayer) int {
		return cmp.Or(cmp.Compare(a.layer.SectionKey, b.layer.SectionKey), cmp.Compare(a.id, b.id))
	})
	return out, nil
}

// heldRegisters lists every layer of the catalogue with a current release,
// whatever the order's scope: what the service holds for any jurisdiction,
// from which the report names the kinds of register it holds none of for
// the site's.
func (r *Runner) heldRegisters(ctx context.Context) ([]content.Held, error) {
	var out []content.Held
	after := ""
	for {
		page, err := r.led.ListLayers(ctx, ledger.LayerFilter{WithoutCoverage: true, AfterID: after, Limit: 500})
		if err != nil {
			return nil, fmt.Errorf("jobs: catalogue: %w", err)
		}
		for i, l := range page {
			if i == 500 {
				break
			}
			if l.CurrentReleaseID != nil {
				out = append(out, content.Held{SectionKey: l.SectionKey, SectionName: cmp.Or(l.SectionName, l.SectionKey), Jurisdictions: l.Jurisdictions})
			}
		}
		if len(page) <= 500 {
			return out, nil
		}
		after = page[499].ID
	}
}

// searchLayers runs the engine for every layer with a release, grouped by
// radius, through the same code path and exact membership as a query. A
// layer whose release cannot be read fails the build source_unavailable
// (a store fault is usually transient: the build is retried rather than
// delivering a paid report with a layer missing).
func (r *Runner) searchLayers(ctx context.Context, site orb.Geometry, layers []*builtLayer) error {
	var radii []float64
	for _, l := range layers {
		if l.release != nil && !slices.Contains(radii, l.radiusM) {
			radii = append(radii, l.radiusM)
		}
	}
	slices.Sort(radii)
	for _, radius := range radii {
		req := engine.Request{Site: site, RadiusM: radius}
		var idx []*builtLayer
		for _, l := range layers {
			if l.release == nil || l.radiusM != radius {
				continue
			}
			req.Layers = append(req.Layers, engine.LayerRequest{LayerID: l.id, ReleaseID: l.release.ReleaseID, Coverage: l.coverage,
				IncludeGeometry: true, MaxBytes: reportMaxBytes, MaxFeatureBytes: reportMaxFeatureBytes})
			idx = append(idx, l)
		}
		res, err := r.eng.Query(ctx, req)
		if err != nil {
			return fmt.Errorf("jobs: report search at %v m: %w", radius, err)
		}
		for i, lr := range res {
			if lr.Reason == engine.ReasonSourceUnavailable {
				return &buildError{reason: ReasonSourceUnavailable, retry: true,
					err: fmt.Errorf("jobs: layer %s release %s cannot be read from the store", lr.LayerID, lr.ReleaseID)}
			}
			idx[i].res = lr
		}
	}
	return nil
}

// parcelsNear reads the cadastral context drawn on the maps (and the
// parcels that make up the site: its lot/plan and address).
func (r *Runner) parcelsNear(ctx context.Context, site orb.Geometry) ([]content.Parcel, error) {
	sb := site.Bound()
	dLat := reportParcelMarginM / 111_320.0
	dLon := dLat / math.Max(math.Cos((sb.Min[1]+sb.Max[1])/2*math.Pi/180), 0.1)
	ps, err := r.led.ParcelsNear(ctx, [4]float64{sb.Min[0] - dLon, sb.Min[1] - dLat, sb.Max[0] + dLon, sb.Max[1] + dLat}, reportMaxParcels)
	if err != nil {
		return nil, fmt.Errorf("jobs: parcels near the site: %w", err)
	}
	var out []content.Parcel
	for _, p := range ps {
		g, err := geo.DecodeStored("parcel "+p.Jurisdiction+" "+p.CadastreID, p.Geometry)
		if err != nil {
			return nil, err
		}
		out = append(out, content.Parcel{Jurisdiction: p.Jurisdiction, CadastreID: p.CadastreID, Address: deref(p.Address),
			Postcode: deref(p.Postcode), LGA: deref(p.LGA), Geometry: g})
	}
	return out, nil
}

// layerStatus is a layer's data status and reason, its coverage and count
// (nil: unknown).
func layerStatus(l *builtLayer) (status, reason, coverage string, count *int64) {
	if l.release == nil {
		// As a query answers a layer without a release.
		return engine.StatusUnavailable, ReasonSourceUnavailable, "unknown", nil
	}
	if l.res.Count != nil {
		n := int64(*l.res.Count)
		count = &n
	}
	return l.res.Status, l.res.Reason, l.res.Coverage, count
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func evFor(ev *Evidence, id string) *EvidenceLayer {
	for i := range ev.Layers {
		if ev.Layers[i].LayerID == id {
			return &ev.Layers[i]
		}
	}
	return nil
}

// compareRevisions states, per layer, what changed since the previous
// revision: its release, its outcome, and the matched features that
// appeared and disappeared. The previous revision's evidence lists only
// its nearest features, so its full matched set is recomputed by searching
// its own (immutable) release again at its own radius; when release and
// radius are the same, the sets are the same. It fills ev's Changes and
// returns the changes the PDF prints (layers where something changed).
func (r *Runner) compareRevisions(ctx context.Context, site orb.Geometry, ev *Evidence, prev *Evidence, layers []*builtLayer) ([]report.LayerChange, error) {
	out := []report.LayerChange{}
	prevBy := map[string]*EvidenceLayer{}
	if prev != nil {
		for i := range prev.Layers {
			prevBy[prev.Layers[i].LayerID] = &prev.Layers[i]
		}
	}
	for _, l := range layers {
		e := evFor(ev, l.id)
		p := prevBy[l.id]
		ch := &EvidenceChanges{Added: []string{}, Removed: []string{}}
		if p != nil {
			ch.PreviousReleaseID, ch.PreviousStatus, ch.PreviousCount = p.ReleaseID, p.DataStatus, p.MatchedCount
		}
		ch.ReleaseChanged = deref(ch.PreviousReleaseID) != deref(e.ReleaseID)
		if p != nil && p.DataStatus != engine.StatusUnavailable && e.DataStatus != engine.StatusUnavailable {
			now := make([]string, 0, len(l.res.Features))
			for i := range l.res.Features {
				now = append(now, l.res.Features[i].ID)
			}
			before := now
			if ch.ReleaseChanged || p.RadiusM != e.RadiusM {
				var err error
				if before, err = r.previousMatches(ctx, site, l, p); err != nil {
					return nil, err
				}
			}
			added, removed := diffIDs(before, now)
			ch.AddedCount, ch.RemovedCount = int64(len(added)), int64(len(removed))
			ch.Added, ch.Removed = added[:min(len(added), MaxChangeIDs)], removed[:min(len(removed), MaxChangeIDs)]
		}
		var bandWords []string
		if p != nil {
			ch.BandChanges, bandWords = bandChanges(p.Bands, e.Bands)
			var movedWords []string
			ch.Moved, movedWords = movedFeatures(p.Features, e.Features)
			bandWords = append(bandWords, movedWords...)
		}
		e.Changes = ch
		changed := p == nil || ch.ReleaseChanged || ch.PreviousStatus != e.DataStatus || ch.AddedCount > 0 || ch.RemovedCount > 0 ||
			!sameCount(ch.PreviousCount, e.MatchedCount) || len(ch.BandChanges) > 0 || len(ch.Moved) > 0
		if !changed {
			continue
		}
		lc := report.LayerChange{LayerID: l.id, OldRelease: deref(ch.PreviousReleaseID), NewRelease: deref(e.ReleaseID),
			Added: ch.Added, Removed: ch.Removed, AddedCount: int(ch.AddedCount), RemovedCount: int(ch.RemovedCount),
			OldStatus: ch.PreviousStatus, NewStatus: e.DataStatus, OldCount: intPtr(ch.PreviousCount), NewCount: intPtr(e.MatchedCount),
			Bands: bandWords}
		if p == nil {
			lc.OldStatus = "not in the previous revision"
		}
		out = append(out, lc)
	}
	return out, nil
}

// previousMatches searches the previous revision's release of a layer at
// its radius again: every feature id it matched.
func (r *Runner) previousMatches(ctx context.Context, site orb.Geometry, l *builtLayer, p *EvidenceLayer) ([]string, error) {
	if p.ReleaseID == nil {
		return nil, nil
	}
	var cov orb.Geometry
	if rel, err := r.led.Release(ctx, l.id, *p.ReleaseID); err == nil {
		if cov, err = geo.DecodeCoverage(geo.CoverageKey{Layer: l.id, Release: rel.ReleaseID}, rel.Coverage); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, ledger.ErrNotFound) {
		return nil, err
	}
	res, err := r.eng.Query(ctx, engine.Request{Site: site, RadiusM: p.RadiusM,
		Layers: []engine.LayerRequest{{LayerID: l.id, ReleaseID: *p.ReleaseID, Coverage: cov, MaxBytes: reportMaxBytes, MaxFeatureBytes: reportMaxFeatureBytes}}})
	if err != nil {
		return nil, err
	}
	if res[0].Reason == engine.ReasonSourceUnavailable {
		return nil, &buildError{reason: ReasonSourceUnavailable, retry: true,
			err: fmt.Errorf("jobs: layer %s previous release %s cannot be read from the store", l.id, *p.ReleaseID)}
	}
	ids := make([]string, 0, len(res[0].Features))
	for _, f := range res[0].Features {
		ids = append(ids, f.ID)
	}
	return ids, nil
}

// diffIDs returns the ids in now but not before, and in before but not
// now, each sorted.
func diffIDs(before, now []string) (added, removed []string) {
	b := make(map[string]bool, len(before))
	for _, id := range before {
		b[id] = true
	}
	n := make(map[string]bool, len(now))
	for _, id := range now {
		n[id] = true
		if !b[id] {
			added = append(added, id)
		}
	}
	for _, id := range before {
		if !n[id] {
			removed = append(removed, id)
		}
	}
	slices.Sort(added)
	slices.Sort(removed)
	return slices.Compact(added), slices.Compact(removed)
}

func sameCount(a, b *int64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func intPtr(n *int64) *int {
	if n == nil {
		return nil
	}
	v := int(*n)
	return &v
}

// FitSections makes retained text fit the contract's limits
// (ledger.ValidateSections): each section cut to MaxSectionBytes, the whole
// to MaxContentBytes and MaxSections sections. Text is cut on a UTF-8
// boundary and what was cut always ends with "[truncated]"; when sections
// are left out, the last one kept ends with it too.
func FitSections(in []ledger.ReportSection) []ledger.ReportSection {
	// reserve keeps room, while more sections follow, to mark a cut.
	const reserve = 64
	dropped := len(in) > ledger.MaxSections
	if dropped {
		in = in[:ledger.MaxSections]
	}
	out := make([]ledger.ReportSection, 0, len(in))
	budget := ledger.MaxContentBytes
	for i, s := range in {
		text := strings.ToValidUTF8(s.Text, "\uFFFD")
		if s.Heading != nil {
			h := strings.ToValidUTF8(*s.Heading, "\uFFFD")
			s.Heading = &h
		}
		text = cutText(text, ledger.MaxSectionBytes)
		s.Index = len(out)
		more := i < len(in)-1
		switch {
		case !more && dropped:
			s.Text = markCut(text, min(ledger.MaxSectionBytes, budget))
			return append(out, s)
		case more && len(text)+reserve > budget, !more && len(text) > budget:
			// The budget ends inside this section: the text stops here.
			s.Text = markCut(text, budget)
			return append(out, s)
		}
		s.Text = text
		out = append(out, s)
		budget -= len(text)
	}
	return out
}

// cutText shortens s to at most n bytes, cut on a rune boundary and ending
// with truncatedMarker, when it is longer than n; else returns s.
// n must be at least len(truncatedMarker).
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return markCut(s, n)
}

// markCut ends s with truncatedMarker (once) within n bytes, cutting on a
// rune boundary. n must be at least len(truncatedMarker).
func markCut(s string, n int) string {
	if strings.HasSuffix(s, truncatedMarker) && len(s) <= n {
		return s
	}
	keep := min(len(s), n-len(truncatedMarker))
	for keep > 0 && keep < len(s) && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + truncatedMarker
}
