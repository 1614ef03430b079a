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
	"github.com/paulmach/orb/geojson"

	"siteenv/artifacts"
	"siteenv/engine"
	"siteenv/engine/geo"
	"siteenv/ledger"
	"siteenv/report"
	"siteenv/tiles"
)

const (
	// ReportRadiusCapM caps the distance a report searches a layer to. A
	// report has no client to choose a radius, so each layer is searched to
	// its own radius_max_m (the widest distance its publisher deems
	// relevant), capped at 10 km: engine.MaxRadiusM, the farthest any query
	// may reach, so a report never states more than a query could check.
	ReportRadiusCapM = engine.MaxRadiusM
	// ReportNearest is how many features a report lists per layer, nearest
	// first (the PDF's table and the evidence's features).
	ReportNearest = 10
	// reportKeyFields is how many of a listed feature's fields are printed.
	reportKeyFields = 3
	// reportFieldChars bounds one printed field value, in characters.
	reportFieldChars = 80
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
	g, err := geojson.UnmarshalGeometry(site.Geometry)
	if err != nil {
		return ledger.Revision{}, fmt.Errorf("jobs: report %s site geometry: %w", rep.ID, err)
	}
	siteGeom := g.Geometry()
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
	ev := Evidence{Version: EvidenceVersion, BuiltAt: built,
		Site: EvidenceSite{SiteID: site.ID.String(), Name: site.Name, Fingerprint: site.Fingerprint, AreaM2: site.AreaM2, Jurisdiction: jurisdiction}}
	centre := siteGeom.Bound().Center()
	local := geo.NewLocal(centre)
	for _, l := range layers {
		ev.Layers = append(ev.Layers, evidenceLayer(l, local))
	}
	var changes []report.LayerChange
	if previous != nil {
		pid := previous.ID.String()
		ev.PreviousRevisionID = &pid
		if changes, err = r.compareRevisions(ctx, siteGeom, &ev, prevEv, layers); err != nil {
			return ledger.Revision{}, err
		}
	}
	parcels, err := r.parcelsNear(ctx, siteGeom)
	if err != nil {
		return ledger.Revision{}, err
	}
	siteName := site.ID.String()
	if site.Name != nil && *site.Name != "" {
		siteName = *site.Name
	}
	var refText []string
	for _, ref := range refs {
		refText = append(refText, ref.Namespace+": "+ref.Reference)
	}
	receipt := ""
	if rep.PurchaseID != nil {
		receipt = rep.PurchaseID.String()
	}
	doc := report.Report{ReportID: rep.ID.String(), RevisionID: revID.String(), Revision: number, ReceiptID: receipt, Created: built,
		Site:    report.ReportSite{Name: siteName, Reference: strings.Join(refText, "; "), AreaM2: site.AreaM2, Jurisdiction: jurisdiction},
		Changes: changes}
	cover, label := coverLayers(layers)
	doc.Cover = reportMap(siteName, label, built, siteGeom, cover, parcels)
	for i, sec := range groupSections(layers) {
		rs := report.ReportSection{Key: sec[0].layer.SectionKey, Name: sec[0].sectionName()}
		if i < reportMaxMaps {
			rs.Map = reportMap(siteName, rs.Name, built, siteGeom, sec, parcels)
		}
		for _, l := range sec {
			rs.Layers = append(rs.Layers, pdfLayer(l, evFor(&ev, l.id), local))
		}
		doc.Sections = append(doc.Sections, rs)
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
	limitations := []string{report.Limitations}
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
		Sections: FitSections(reportText(doc))})
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
			if c := b.release.Coverage; len(c) > 0 && string(c) != "null" {
				if g, err := geojson.UnmarshalGeometry(c); err == nil {
					b.coverage = g.Geometry()
				}
			}
		}
		out = append(out, b)
	}
	slices.SortStableFunc(out, func(a, b *builtLayer) int {
		return cmp.Or(cmp.Compare(a.layer.SectionKey, b.layer.SectionKey), cmp.Compare(a.id, b.id))
	})
	return out, nil
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

// parcelsNear reads the cadastral context drawn on the maps.
func (r *Runner) parcelsNear(ctx context.Context, site orb.Geometry) ([]orb.Geometry, error) {
	sb := site.Bound()
	dLat := reportParcelMarginM / 111_320.0
	dLon := dLat / math.Max(math.Cos((sb.Min[1]+sb.Max[1])/2*math.Pi/180), 0.1)
	ps, err := r.led.ParcelsNear(ctx, [4]float64{sb.Min[0] - dLon, sb.Min[1] - dLat, sb.Max[0] + dLon, sb.Max[1] + dLat}, reportMaxParcels)
	if err != nil {
		return nil, fmt.Errorf("jobs: parcels near the site: %w", err)
	}
	var out []orb.Geometry
	for _, p := range ps {
		if g, err := geojson.UnmarshalGeometry(p.Geometry); err == nil {
			out = append(out, g.Geometry())
		}
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

// evidenceLayer freezes one layer's outcome.
func evidenceLayer(l *builtLayer, local geo.Local) EvidenceLayer {
	status, reason, coverage, count := layerStatus(l)
	e := EvidenceLayer{LayerID: l.id, Name: l.name(), SectionKey: l.layer.SectionKey, SectionName: l.sectionName(),
		RadiusM: l.radiusM, DataStatus: status, Coverage: coverage, MatchedCount: count,
		Provenance: []EvidenceProvenance{}, Features: []EvidenceFeature{}}
	if reason != "" {
		e.Reason = &reason
	}
	if l.release != nil {
		rel, schema := l.release.ReleaseID, l.release.SchemaVersion
		e.ReleaseID, e.SchemaVersion = &rel, &schema
		for _, s := range l.sources {
			e.Provenance = append(e.Provenance, EvidenceProvenance{ReleaseID: rel, Source: s})
		}
	}
	for i := range nearest(l) {
		f := &l.res.Features[i]
		ef := EvidenceFeature{FeatureID: f.ID, DistanceM: f.DistanceM}
		if b := bearing(local, f); !math.IsNaN(b) {
			ef.BearingDeg = &b
		}
		e.Features = append(e.Features, ef)
	}
	return e
}

// nearest is how many of the layer's features are listed.
func nearest(l *builtLayer) int {
	if l.res.Status != engine.StatusDataPresent {
		return 0
	}
	return min(len(l.res.Features), ReportNearest)
}

// bearing is the direction from the site's centre (local's origin) to the
// feature's point nearest that centre, clockwise from north in degrees,
// rounded to a tenth; NaN when the feature touches or lies inside the site
// (distance 0), where a direction means nothing.
func bearing(local geo.Local, f *engine.Feature) float64 {
	if f.DistanceM == 0 || f.Geometry == nil {
		return math.NaN()
	}
	x, y, ok := closestXY(local, f.Geometry)
	if !ok || (x == 0 && y == 0) {
		return math.NaN()
	}
	deg := math.Mod(math.Atan2(x, y)*180/math.Pi+360, 360)
	deg = math.Round(deg*10) / 10
	if deg >= 360 {
		deg = 0
	}
	return deg
}

// closestXY is the point of g nearest the origin of local's plane.
func closestXY(local geo.Local, g orb.Geometry) (x, y float64, ok bool) {
	best := math.Inf(1)
	consider := func(px, py float64) {
		if d := px*px + py*py; d < best {
			best, x, y, ok = d, px, py, true
		}
	}
	segment := func(ls []orb.Point) {
		if len(ls) == 1 {
			consider(local.Forward(ls[0]))
			return
		}
		for i := 1; i < len(ls); i++ {
			ax, ay := local.Forward(ls[i-1])
			bx, by := local.Forward(ls[i])
			dx, dy := bx-ax, by-ay
			t := 0.0
			if l2 := dx*dx + dy*dy; l2 > 0 {
				t = math.Max(0, math.Min(1, -(ax*dx+ay*dy)/l2))
			}
			consider(ax+t*dx, ay+t*dy)
		}
	}
	switch g := g.(type) {
	case orb.Point:
		consider(local.Forward(g))
	case orb.MultiPoint:
		for _, p := range g {
			consider(local.Forward(p))
		}
	case orb.LineString:
		segment(g)
	case orb.MultiLineString:
		for _, ls := range g {
			segment(ls)
		}
	case orb.Polygon:
		for _, ring := range g {
			segment(ring)
		}
	case orb.MultiPolygon:
		for _, p := range g {
			for _, ring := range p {
				segment(ring)
			}
		}
	}
	return x, y, ok
}

// keyFields picks a listed feature's few most telling fields: names first,
// then statuses, classes and kinds, then other text, numbers and flags,
// each group by field name; null values are skipped.
func keyFields(props map[string]any) []report.Field {
	rank := func(k string) int {
		switch {
		case strings.Contains(k, "name"):
			return 0
		case strings.Contains(k, "status"), strings.Contains(k, "class"), strings.Contains(k, "type"),
			strings.Contains(k, "category"), strings.Contains(k, "activity"):
			return 1
		}
		switch props[k].(type) {
		case string:
			return 2
		case bool:
			return 4
		}
		return 3
	}
	keys := make([]string, 0, len(props))
	for k, v := range props {
		if v != nil {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a, b)) })
	var out []report.Field
	for _, k := range keys[:min(len(keys), reportKeyFields)] {
		out = append(out, report.Field{Name: k, Value: fieldValue(props[k])})
	}
	return out
}

func fieldValue(v any) string {
	var s string
	switch v := v.(type) {
	case string:
		s = v
	case float64:
		s = strconv.FormatFloat(v, 'f', -1, 64)
	case float32:
		s = strconv.FormatFloat(float64(v), 'f', -1, 32)
	case time.Time:
		s = v.UTC().Format(time.RFC3339)
	default:
		s = fmt.Sprint(v)
	}
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > reportFieldChars {
		r := []rune(s)
		s = string(r[:reportFieldChars-1]) + "…"
	}
	return s
}

// pdfLayer is one layer as the PDF prints it, from its frozen evidence.
func pdfLayer(l *builtLayer, e *EvidenceLayer, local geo.Local) report.ReportLayer {
	out := report.ReportLayer{ID: l.id, Name: l.name(), RadiusM: l.radiusM, Status: e.DataStatus, Coverage: e.Coverage}
	if e.Reason != nil {
		out.Reason = *e.Reason
	}
	if e.ReleaseID != nil {
		out.ReleaseID, out.SchemaVersion = *e.ReleaseID, *e.SchemaVersion
	}
	if e.MatchedCount != nil {
		n := int(*e.MatchedCount)
		out.Count = &n
	}
	for i := range nearest(l) {
		f := &l.res.Features[i]
		out.Nearest = append(out.Nearest, report.NearFeature{ID: f.ID, DistanceM: f.DistanceM, BearingDeg: bearing(local, f),
			Fields: keyFields(f.Properties())})
	}
	for _, s := range l.sources {
		out.Sources = append(out.Sources, report.ReportSource{Provider: s.Provider, Licence: s.Licence, Attribution: s.Attribution,
			URL: deref(s.SourceURL), Published: deref(s.SourcePublishedAt), Effective: deref(s.SourceEffectiveAt), Retrieved: deref(s.RetrievedAt)})
	}
	return out
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

// groupSections splits layers (sorted by section) into sections.
func groupSections(layers []*builtLayer) [][]*builtLayer {
	var out [][]*builtLayer
	for i, l := range layers {
		if i == 0 || l.layer.SectionKey != layers[i-1].layer.SectionKey {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], l)
	}
	return out
}

// coverLayers are the layers the cover map draws: those with features to
// draw, so the overview stays legible (the overview table and the section
// pages state every layer); all of them when none has any. label names
// what the map shows.
func coverLayers(layers []*builtLayer) (cover []*builtLayer, label string) {
	var out []*builtLayer
	for _, l := range layers {
		if l.release != nil && l.res.Status == engine.StatusDataPresent && len(l.res.Features) > 0 &&
			l.res.Features[0].DistanceM <= report.MaxRenderRadiusM {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return layers, "All sections"
	}
	return out, "All sections: layers with records within " + distanceText(report.MaxRenderRadiusM)
}

// reportMap draws layers around the site: each layer's features within its
// radius, up to report.MaxRenderRadiusM (the map says how far it draws).
func reportMap(title, section string, date time.Time, site orb.Geometry, layers []*builtLayer, parcels []orb.Geometry) report.Map {
	m := report.Map{Title: title, Section: section, Date: date, Site: site, Parcels: parcels}
	for _, l := range layers {
		ml := report.Layer{ID: l.id, Name: l.name(), RadiusM: l.radiusM, Coverage: "unknown"}
		for _, s := range l.sources {
			a := cmp.Or(s.Attribution, s.Provider)
			if s.Licence != "" {
				a += " (" + s.Licence + ")"
			}
			if !slices.Contains(ml.Attribution, a) {
				ml.Attribution = append(ml.Attribution, a)
			}
		}
		switch {
		case l.release == nil:
			ml.Outcome = report.NoRelease
		case l.res.Reason == engine.ReasonOutsideCoverage:
			ml.Outcome, ml.Coverage = report.OutsideCoverage, l.res.Coverage
		case l.res.Status == engine.StatusUnavailable:
			ml.Outcome, ml.Coverage = report.TooMany, l.res.Coverage
		default:
			ml.Coverage = l.res.Coverage
			limit := math.Min(l.radiusM, report.MaxRenderRadiusM)
			for i := range l.res.Features {
				f := &l.res.Features[i]
				if f.DistanceM <= limit && f.Geometry != nil {
					ml.Features = append(ml.Features, f.Geometry)
				}
			}
		}
		m.Layers = append(m.Layers, ml)
	}
	return m
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
		e.Changes = ch
		changed := p == nil || ch.ReleaseChanged || ch.PreviousStatus != e.DataStatus || ch.AddedCount > 0 || ch.RemovedCount > 0 ||
			!sameCount(ch.PreviousCount, e.MatchedCount)
		if !changed {
			continue
		}
		lc := report.LayerChange{LayerID: l.id, OldRelease: deref(ch.PreviousReleaseID), NewRelease: deref(e.ReleaseID),
			Added: ch.Added, Removed: ch.Removed, AddedCount: int(ch.AddedCount), RemovedCount: int(ch.RemovedCount),
			OldStatus: ch.PreviousStatus, NewStatus: e.DataStatus, OldCount: intPtr(ch.PreviousCount), NewCount: intPtr(e.MatchedCount)}
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
		if c := rel.Coverage; len(c) > 0 && string(c) != "null" {
			if g, err := geojson.UnmarshalGeometry(c); err == nil {
				cov = g.Geometry()
			}
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

// reportText is a revision's retained text: a summary, one section per
// report section (each layer's outcome, count and nearest features), the
// changes since the previous revision, the sources and the limitations.
func reportText(doc report.Report) []ledger.ReportSection {
	var out []ledger.ReportSection
	add := func(heading, body string) {
		h := heading
		out = append(out, ledger.ReportSection{Index: len(out), Heading: &h, Text: body})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Site: %s\n", doc.Site.Name)
	if doc.Site.Reference != "" {
		fmt.Fprintf(&b, "Reference: %s\n", doc.Site.Reference)
	}
	fmt.Fprintf(&b, "Area: %s m²\nJurisdiction: %s\nReport: %s, revision %d (%s)\nBuilt: %s\n",
		strconv.FormatFloat(math.Round(doc.Site.AreaM2), 'f', -1, 64), cmp.Or(doc.Site.Jurisdiction, "unknown"),
		doc.ReportID, doc.Revision, doc.RevisionID, doc.Created.UTC().Format(time.RFC3339))
	if doc.ReceiptID != "" {
		fmt.Fprintf(&b, "Receipt: %s\n", doc.ReceiptID)
	}
	add("Summary", b.String())
	for _, s := range doc.Sections {
		b.Reset()
		for _, l := range s.Layers {
			fmt.Fprintf(&b, "%s (%s)\n", l.Name, l.ID)
			fmt.Fprintf(&b, "Outcome: %s", l.Status)
			if l.Reason != "" {
				fmt.Fprintf(&b, " (%s)", l.Reason)
			}
			count := "unknown"
			if l.Count != nil {
				count = strconv.Itoa(*l.Count)
			}
			fmt.Fprintf(&b, "; matched: %s within %s; coverage: %s.\n", count, distanceText(l.RadiusM), l.Coverage)
			if l.ReleaseID != "" {
				fmt.Fprintf(&b, "Release %s, schema %s.\n", l.ReleaseID, l.SchemaVersion)
			}
			for _, f := range l.Nearest {
				dir := "on or touching the site"
				if !math.IsNaN(f.BearingDeg) {
					dir = fmt.Sprintf("bearing %s°", strconv.FormatFloat(f.BearingDeg, 'f', -1, 64))
				}
				fmt.Fprintf(&b, "- %s: %s, %s", f.ID, distanceText(f.DistanceM), dir)
				for _, fl := range f.Fields {
					fmt.Fprintf(&b, "; %s: %s", fl.Name, fl.Value)
				}
				b.WriteString("\n")
			}
			b.WriteString("\n")
		}
		add(s.Name, strings.TrimRight(b.String(), "\n"))
	}
	if doc.Changes != nil {
		b.Reset()
		if len(doc.Changes) == 0 {
			b.WriteString("Nothing changed: every layer used the same release and found the same features.")
		}
		for _, c := range doc.Changes {
			fmt.Fprintf(&b, "%s: ", c.LayerID)
			var parts []string
			if c.OldRelease != c.NewRelease {
				parts = append(parts, "release "+cmp.Or(c.OldRelease, "none")+" -> "+cmp.Or(c.NewRelease, "none"))
			}
			if c.OldStatus != c.NewStatus {
				parts = append(parts, "outcome "+cmp.Or(c.OldStatus, "none")+" -> "+c.NewStatus)
			}
			if !sameInt(c.OldCount, c.NewCount) {
				parts = append(parts, "matched "+countText(c.OldCount)+" -> "+countText(c.NewCount))
			}
			parts = append(parts, fmt.Sprintf("%d added, %d removed", c.AddedCount, c.RemovedCount))
			if len(c.Added) > 0 {
				parts = append(parts, "added "+strings.Join(c.Added, ", "))
			}
			if len(c.Removed) > 0 {
				parts = append(parts, "removed "+strings.Join(c.Removed, ", "))
			}
			b.WriteString(strings.Join(parts, "; ") + ".\n")
		}
		add(fmt.Sprintf("Changes since revision %d", doc.Revision-1), strings.TrimRight(b.String(), "\n"))
	}
	b.Reset()
	for _, s := range doc.Sections {
		for _, l := range s.Layers {
			fmt.Fprintf(&b, "%s (%s): release %s.\n", l.Name, l.ID, cmp.Or(l.ReleaseID, "none"))
			for _, src := range l.Sources {
				fmt.Fprintf(&b, "- %s. Licence: %s. Attribution: %s.", src.Provider, src.Licence, src.Attribution)
				if src.URL != "" {
					fmt.Fprintf(&b, " %s", src.URL)
				}
				b.WriteString("\n")
			}
		}
	}
	add("Sources", strings.TrimRight(b.String(), "\n"))
	add("Limitations", report.Limitations)
	return out
}

func sameInt(a, b *int) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func countText(n *int) string {
	if n == nil {
		return "unknown"
	}
	return strconv.Itoa(*n)
}

func distanceText(m float64) string {
	if m >= 1000 {
		return strconv.FormatFloat(math.Round(m/100)/10, 'f', -1, 64) + " km"
	}
	return strconv.FormatFloat(math.Round(m), 'f', -1, 64) + " m"
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
