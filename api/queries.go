package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"siteenv/engine"
	"siteenv/internal/memo"
	"siteenv/internal/phase"
	"siteenv/jobs"
	"siteenv/ledger"
	"siteenv/queries"
	"siteenv/store"
	"siteenv/tiles"
)

var preferWaitRE = regexp.MustCompile(fmt.Sprintf(`^wait=([0-%d])$`, maxPreferWaitSeconds)) // one digit

type provenanceItem struct {
	ReleaseID string `json:"release_id"`
	tiles.Source
}

type queryLayerBody struct {
	LayerID             string           `json:"layer_id"`
	SchemaVersion       string           `json:"schema_version"`
	DataStatus          string           `json:"data_status"`
	Reason              *string          `json:"reason"`
	Coverage            string           `json:"coverage"`
	MatchedFeatureCount *int64           `json:"matched_feature_count"`
	Provenance          []provenanceItem `json:"provenance"`
	SchemaURL           string           `json:"schema_url"`
}

type queryBody struct {
	APIVersion  string            `json:"api_version"`
	QueryID     string            `json:"query_id"`
	Status      string            `json:"status"`
	SiteID      string            `json:"site_id"`
	RadiusM     float64           `json:"radius_m"`
	CRS         string            `json:"crs"`
	AxisOrder   []string          `json:"axis_order"`
	CreatedAt   time.Time         `json:"created_at"`
	ComputedAt  *time.Time        `json:"computed_at"`
	ExpiresAt   *time.Time        `json:"expires_at"`
	Layers      []queryLayerBody  `json:"layers"`
	QueryURL    string            `json:"query_url"`
	ResultsURL  *string           `json:"results_url"`
	ResultCount *int64            `json:"result_count"`
	Features    []json.RawMessage `json:"features"`
	Page        page              `json:"page"`
	// records is a results page's features as stored (fillPage): spliced
	// into the features array by writeQuery, not re-encoded.
	records pageRecords
}

// pageRecords are stored feature records joined by commas, as they appear
// in the features array.
type pageRecords struct {
	joined []byte
	n      int
}

func finished(status string) bool {
	switch status {
	case ledger.QuerySucceeded, ledger.QueryPartial, ledger.QueryFailed:
		return true
	}
	return false
}

// releaseSources are the releases' provenance sources as parsed, by
// release id: a query's view renders every layer's, from its frozen JSON,
// on every read (a pure function of the release's immutable bytes).
var releaseSources = memo.New[string, []tiles.Source](1024)

func parseSources(b []byte) ([]tiles.Source, error) {
	var sources []tiles.Source
	err := json.Unmarshal(b, &sources)
	return sources, err
}

// queryView renders a query's state and per-layer outcome (features are added by the caller).
func queryView(q ledger.Query) queryBody {
	b := queryBody{APIVersion: "1", QueryID: q.ID.String(), Status: q.Status, SiteID: q.SiteID.String(), RadiusM: q.RadiusM,
		CRS: "OGC:CRS84", AxisOrder: []string{"longitude", "latitude"}, CreatedAt: q.CreatedAt.UTC(), ComputedAt: utc(q.ComputedAt),
		QueryURL: BasePath + "/queries/" + q.ID.String(), Layers: []queryLayerBody{}, Features: []json.RawMessage{}}
	if q.ResultKey != nil {
		b.ExpiresAt = utc(q.ExpiresAt)
		b.ResultsURL = ptr(b.QueryURL + "/results")
		b.ResultCount = q.ResultCount
	}
	outcome := map[string]ledger.LayerOutcome{}
	for _, o := range q.Outcome {
		outcome[o.LayerID] = o
	}
	for _, f := range q.Frozen {
		l := queryLayerBody{LayerID: f.LayerID, SchemaVersion: f.SchemaVersion, Coverage: "unknown", Provenance: []provenanceItem{},
			SchemaURL: b.QueryURL + "/layers/" + f.LayerID + "/schema"}
		if f.ReleaseID != nil {
			sources, _ := releaseSources.Get(*f.ReleaseID, f.Sources, parseSources)
			for _, s := range sources {
				l.Provenance = append(l.Provenance, provenanceItem{ReleaseID: *f.ReleaseID, Source: s})
			}
		}
		switch o, ok := outcome[f.LayerID]; {
		case ok:
			l.DataStatus, l.Coverage, l.MatchedFeatureCount = o.DataStatus, o.Coverage, o.Count
			if o.Reason != "" {
				l.Reason = ptr(o.Reason)
			}
		case q.Status == ledger.QueryCancelled:
			l.DataStatus = "unavailable"
		default:
			l.DataStatus, l.Reason = "unavailable", ptr("result_not_ready")
		}
		b.Layers = append(b.Layers, l)
	}
	return b
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

type createQueryRequest struct {
	Site            json.RawMessage `json:"site"`
	LayerIDs        []string        `json:"layer_ids"`
	RadiusM         *float64        `json:"radius_m"`
	PageSize        *int            `json:"page_size"`
	IncludeGeometry *bool           `json:"include_geometry"`
}

// preferWait reads the Prefer header (nil: absent) as the initial wait in
// seconds, 0 to maxPreferWaitSeconds.
func preferWait(h []byte) (int, error) {
	if h == nil {
		return 0, nil
	}
	m := preferWaitRE.FindSubmatch(h)
	if m == nil {
		return 0, invalid(fmt.Sprintf("The Prefer header must be wait=0 to wait=%d.", maxPreferWaitSeconds),
			FieldError{Field: "Prefer", Message: fmt.Sprintf("must match ^wait=[0-%d]$", maxPreferWaitSeconds)})
	}
	return int(m[1][0] - '0'), nil
}

func (s *Server) createQuery(r *request) error {
	var req createQueryRequest
	if err := decodeBody(string(r.http.Request.Header.ContentType()), r.http.Request.Body(), &req); err != nil {
		return err
	}
	wait, err := preferWait(r.http.Request.Header.Peek("Prefer"))
	if err != nil {
		return err
	}
	sel, err := decodeSelector(req.Site, "site", false)
	if err != nil {
		return err
	}
	var fe []FieldError
	switch {
	case req.LayerIDs == nil:
		fe = append(fe, FieldError{Field: "layer_ids", Message: fmt.Sprintf("required: 1 to %d layer ids", maxLayersPerQuery)})
	case len(req.LayerIDs) < 1 || len(req.LayerIDs) > maxLayersPerQuery:
		fe = append(fe, FieldError{Field: "layer_ids", Message: fmt.Sprintf("must hold 1 to %d layer ids", maxLayersPerQuery)})
	}
	seen := map[string]bool{}
	for i, id := range req.LayerIDs {
		switch {
		case !layerIDRE.MatchString(id):
			fe = append(fe, FieldError{Field: fmt.Sprintf("layer_ids[%d]", i), Message: "must match ^[a-z0-9][a-z0-9._:-]*$"})
		case seen[id]:
			fe = append(fe, FieldError{Field: fmt.Sprintf("layer_ids[%d]", i), Message: "duplicate layer"})
		}
		seen[id] = true
	}
	if req.RadiusM == nil {
		fe = append(fe, FieldError{Field: "radius_m", Message: fmt.Sprintf("required: 0 to %d metres", engine.MaxRadiusM)})
	} else if *req.RadiusM < 0 || *req.RadiusM > engine.MaxRadiusM {
		fe = append(fe, FieldError{Field: "radius_m", Message: fmt.Sprintf("must be 0 to %d metres", engine.MaxRadiusM)})
	}
	pageSize := listPageDefault
	if req.PageSize != nil {
		if *req.PageSize < 1 || *req.PageSize > listPageMax {
			fe = append(fe, FieldError{Field: "page_size", Message: fmt.Sprintf("must be 1 to %d", listPageMax)})
		}
		pageSize = *req.PageSize
	}
	if len(fe) > 0 {
		return invalid("The query request is invalid.", fe...)
	}
	includeGeometry := req.IncludeGeometry == nil || *req.IncludeGeometry
	ask := queries.Ask{LayerIDs: req.LayerIDs, RadiusM: *req.RadiusM, IncludeGeometry: includeGeometry, Wait: wait, PageSize: pageSize}
	fp, err := queryFingerprint(r.op.ID, req.Site, req.LayerIDs, *req.RadiusM, includeGeometry)
	if err != nil {
		return err
	}
	// The use case, once: it answers through the request (queryCall).
	return s.queries.Admit(queryCall{call{s, r}, sel}, fp, ask, &r.pending)
}

// answerQuery answers POST /queries for the admitted q: 200 with the
// first page when it finished within the wait (done: the finished row the
// run handed over, or zero), else 202.
func (s *Server) answerQuery(r *request, q, done ledger.Query, ask queries.Ask) error {
	r.resourceType, r.resourceID = "query", q.ID.String()
	var err error
	if done.ID == q.ID && done.AccountID == r.principal.AccountID && finished(done.Status) {
		q = done
		if r.pending.Finish == nil { // else cached once stored (queries.Service.Settle)
			s.finished.put(q)
		}
	} else if q, err = s.query(r, q.ID); err != nil {
		return err
	}
	body := queryView(q)
	s.applyPreference(r, ask)
	if !finished(q.Status) {
		r.http.Response.Header.Set("Location", body.QueryURL)
		r.http.Response.Header.Set("Retry-After", "1")
		return r.writeJSON(202, body)
	}
	if err := s.firstPage(r, q, &body, ask); err != nil {
		return err
	}
	return r.writeQuery(200, &body)
}

// applyPreference says that the request's Prefer: wait was honoured: it is
// when this process ran the query (another replica's runner cannot be
// waited on here), and wait=0 always is.
func (s *Server) applyPreference(r *request, ask queries.Ask) {
	if r.http.Request.Header.Peek("Prefer") != nil && (s.runner != nil || ask.Wait == 0) {
		r.http.Response.Header.Set("Preference-Applied", "wait="+strconv.Itoa(ask.Wait))
	}
}

// firstPage fills body, a finished query's view, with the first page POST
// /queries answers.
func (s *Server) firstPage(r *request, q ledger.Query, body *queryBody, ask queries.Ask) error {
	return s.fillPage(r, q, body, 0, 0, ask.PageSize, ask.IncludeGeometry, binding(strconv.FormatBool(ask.IncludeGeometry)))
}

// siteForQuery resolves the selector to an active, eligible site of the account.
func (s *Server) siteForQuery(r *request, sel selector) (ledger.Site, error) {
	g, existing, err := s.boundary(r, sel, "site")
	if err != nil {
		return ledger.Site{}, err
	}
	site := ledger.Site{}
	if existing != nil {
		site = *existing
	} else {
		site, err = s.newSite(r, g)
		if err != nil {
			return ledger.Site{}, err
		}
		saved, _, err := s.led.SaveSite(r.ctx, site, nil, r.principal.HasScope(ledger.ScopeSitesWrite))
		if err != nil {
			return ledger.Site{}, at(err, atQuerySite, "")
		}
		site = saved
	}
	if site.AreaM2 > maxSiteAreaM2 {
		return ledger.Site{}, &Problem{Code: CodeSiteIneligible, Detail: fmt.Sprintf("The site covers %.1f ha; queries are limited to sites of %d ha before buffering.", site.AreaM2/10_000, maxSiteAreaHa),
			FieldErrors: []FieldError{{Field: "site", Message: fmt.Sprintf("larger than %d hectares", maxSiteAreaHa)}}}
	}
	return site, nil
}

// resultPosition is where the next page starts in the retained result.
type resultPosition struct {
	Offset  int64 `json:"o"`
	Ordinal int64 `json:"n"`
}

// fillPage reads up to limit feature records from the retained result,
// starting at byte offset, bounded by the 1 MiB response limit.
func (s *Server) fillPage(r *request, q ledger.Query, body *queryBody, offset, ordinal int64, limit int, includeGeometry bool, bind string) error {
	if q.ResultKey == nil || q.ResultBytes == 0 {
		return nil // nothing retained, or nothing to read (the runner stores no empty file)
	}
	defer r.phases.Done(phase.PageRead, r.phases.Start())
	obj, err := s.openResult(r, q)
	if errors.Is(err, store.ErrNotExist) {
		// Swept at its expiry or released between the ledger read and this
		// one.
		return newProblem(CodeResultExpired, "This query's results expired 24 hours after completion; submit a new query.")
	}
	if errors.Is(err, jobs.ErrResultDiffers) {
		// Its file was lost and computing it again did not give the bytes
		// answered (the runner logged it): the pages already read cannot
		// be continued, so the result is gone, as if expired; never a
		// different answer under the same cursor.
		return newProblem(CodeResultExpired, "This query's results are no longer available; submit a new query.")
	}
	if err != nil {
		return err
	}
	defer obj.Close()
	br := pageReaders.Get().(*bufio.Reader)
	br.Reset(io.NewSectionReader(obj, offset, obj.Size()-offset))
	defer func() {
		br.Reset(nil)
		pageReaders.Put(br)
	}()
	budget := maxResponseBytes - 64<<10 // room for the rest of the body
	used := 0
	// The runner writes records of a query without geometry with geometry
	// null already; only a query with geometry read without it is cut.
	strip := !includeGeometry && q.IncludeGeometry
	recs := &body.records
	if recs.joined == nil {
		recs.joined = (*pageBufs.Get().(*[]byte))[:0]
	}
	var line []byte
	for recs.n < limit {
		line, err = readLine(br, line)
		if errors.Is(err, io.EOF) && len(line) == 0 {
			break
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		mark := len(recs.joined)
		if recs.n > 0 {
			recs.joined = append(recs.joined, ',')
		}
		rec := bytes.TrimSuffix(line, []byte("\n"))
		if strip {
			if recs.joined, err = appendWithoutGeometry(recs.joined, rec); err != nil {
				return err
			}
		} else {
			recs.joined = append(recs.joined, rec...)
		}
		size := len(recs.joined) - mark
		if recs.n > 0 {
			size-- // the comma
		}
		if used+size > budget && recs.n > 0 {
			recs.joined = recs.joined[:mark]
			break
		}
		used += size
		recs.n++
		offset += int64(len(line))
		ordinal++
	}
	if offset < obj.Size() {
		// The query's account, not the request's principal: a query
		// answered before its admission authenticated the key (answer
		// first) renders its page while the principal is provisional.
		// Both name the same account whenever the principal is known.
		pg, err := list{s: s, account: q.AccountID, resource: "query:" + q.ID.String(), bind: bind}.next(resultPosition{Offset: offset, Ordinal: ordinal})
		if err != nil {
			return err
		}
		body.Page = pg
	}
	return nil
}

// geometryMember is how the runner writes a record's last member.
var geometryMember = []byte(`,"geometry":`)

// withoutGeometry replaces a result record's geometry with null. The runner
// writes geometry as the record's last member, so the common case cuts the
// record there (no decoding of the properties); the cut is taken only when
// what follows is exactly one JSON value and the closing brace. A literal
// `,"geometry":` cannot occur inside a JSON string (its quote would be
// escaped), so the last one is the top-level member when that check holds.
// Anything else goes through a full decode.
func withoutGeometry(rec []byte) ([]byte, error) { return appendWithoutGeometry(nil, rec) }

// appendWithoutGeometry appends withoutGeometry(rec) to dst.
func appendWithoutGeometry(dst, rec []byte) ([]byte, error) {
	if i := bytes.LastIndex(rec, geometryMember); i > 0 && len(rec) > 0 && rec[len(rec)-1] == '}' {
		if v := rec[i+len(geometryMember) : len(rec)-1]; json.Valid(v) {
			dst = append(dst, rec[:i+len(geometryMember)]...)
			return append(dst, "null}"...), nil
		}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(rec, &m); err != nil {
		return dst, err
	}
	m["geometry"] = json.RawMessage("null")
	b, err := json.Marshal(m)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// pageBufs hold pages' joined records between fillPage and writeQuery;
// buffers over maxPooledPage (a page is at most about 1 MiB) are left to
// the collector.
var pageBufs = sync.Pool{New: func() any { b := make([]byte, 0, 128<<10); return &b }}

const maxPooledPage = 2 << 20

// pageReaders are fillPage's buffered readers (256 KiB: a 500-record page
// in one read), reused across requests.
var pageReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 256<<10) }}

// readLine reads through the next newline (or to the end) into buf[:0],
// however long the line; buf is reused across calls.
func readLine(br *bufio.Reader, buf []byte) ([]byte, error) {
	buf = buf[:0]
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return buf, err
		}
	}
}

// featuresMember is where writeQuery splices a page's records: the
// encoding of an empty features array followed by the page, the last two
// members of queryBody (page holds no string that could contain it).
var featuresMember = []byte(`,"features":[],"page":`)

// writeQuery writes a query body as writeJSON does, with the page's stored
// records spliced into the features array as they are. They are the
// runner's own json.Encoder output (compact, one record per line, stored
// whole: the store writes an object or nothing), so encoding/json's
// validate-and-copy of every json.RawMessage, the largest part of a
// 500-record page's encoding, is skipped.
func (r *request) writeQuery(status int, body *queryBody) error {
	if body.records.n == 0 {
		return r.writeJSON(status, body)
	}
	return r.encodeJSON(func() error {
		body.Features = []json.RawMessage{}
		head, err := marshalNoEscape(body)
		if err != nil {
			return err
		}
		i := bytes.LastIndex(head, featuresMember)
		if i < 0 {
			return errors.New("api: encode response: no features member")
		}
		r.http.SetStatusCode(status)
		r.http.SetContentType("application/json")
		// Into the response's own (pooled) body buffer.
		resp := &r.http.Response
		resp.ResetBody()
		resp.AppendBody(head[:i])
		resp.AppendBodyString(`,"features":[`)
		resp.AppendBody(body.records.joined)
		resp.AppendBody(head[i+len(`,"features":[`):])
		if cap(body.records.joined) <= maxPooledPage {
			joined := body.records.joined[:0]
			pageBufs.Put(&joined)
		}
		body.records = pageRecords{}
		return nil
	})
}

// readQuery loads the path's query if this key may see it: another account's
// query, or one outside the key's dataset restriction, is not_found.
func (s *Server) readQuery(r *request) (ledger.Query, error) {
	id, err := r.pathUUID("query_id")
	if err != nil {
		return ledger.Query{}, err
	}
	r.resourceType, r.resourceID = "query", id.String()
	q, err := s.query(r, id)
	if err != nil {
		return ledger.Query{}, err
	}
	for _, l := range q.LayerIDs {
		if !r.principal.PermitsDataset(l) {
			return ledger.Query{}, ledger.ErrNotFound
		}
	}
	return q, nil
}

func (s *Server) getQuery(r *request) error { return s.queryPage(r, false) }

func (s *Server) getQueryResults(r *request) error { return s.queryPage(r, true) }

func (s *Server) queryPage(r *request, resultsOnly bool) error {
	qp := r.query("cursor", "limit", "include_geometry")
	limit := qp.limit(listPageDefault, listPageMax)
	includeGeometry := qp.boolean("include_geometry", true)
	cur := qp.cursor()
	if err := qp.err(); err != nil {
		return err
	}
	q, err := s.readQuery(r)
	if err != nil {
		return err
	}
	body := queryView(q)
	switch {
	case q.ReleasedAt != nil:
		return newProblem(CodeResultReleased, "This query's results were released with DELETE; submit a new query.")
	case q.ResultKey == nil && q.ExpiresAt != nil && !s.clock.Now().Before(*q.ExpiresAt):
		return newProblem(CodeResultExpired, "This query's results expired 24 hours after completion; submit a new query.")
	case q.ResultKey != nil && q.ExpiresAt != nil && !s.clock.Now().Before(*q.ExpiresAt):
		return newProblem(CodeResultExpired, "This query's results expired 24 hours after completion; submit a new query.")
	case resultsOnly && !finished(q.Status):
		if q.Status == ledger.QueryCancelled {
			return newProblem(CodeResultReleased, "This query was cancelled; it has no results.")
		}
		return &Problem{Code: CodeResultNotReady, RetryAfter: 1, Detail: "The query is still " + q.Status + "; poll " + body.QueryURL + "."}
	}
	bind := binding(strconv.FormatBool(includeGeometry))
	var pos resultPosition
	if err := s.list(r, "query:"+q.ID.String(), bind).resume(cur, &pos); err != nil {
		return err
	}
	if err := s.fillPage(r, q, &body, pos.Offset, pos.Ordinal, limit, includeGeometry && q.IncludeGeometry, bind); err != nil {
		return err
	}
	return r.writeQuery(200, &body)
}

func (s *Server) deleteQuery(r *request) error {
	if err := r.query().err(); err != nil {
		return err
	}
	q, err := s.readQuery(r)
	if err != nil {
		return err
	}
	key, err := s.led.CancelOrRelease(r.ctx, r.principal.AccountID, q.ID)
	if err != nil {
		return err
	}
	if key != "" {
		s.dropResult(key)
		if err := s.store.Delete(r.ctx, key); err != nil && !errors.Is(err, store.ErrNotExist) {
			return err
		}
	}
	r.http.SetStatusCode(204)
	return nil
}

type querySummary struct {
	QueryID       string     `json:"query_id"`
	Status        string     `json:"status"`
	SiteID        string     `json:"site_id"`
	LayerIDs      []string   `json:"layer_ids"`
	RadiusM       float64    `json:"radius_m"`
	CreatedAt     time.Time  `json:"created_at"`
	ComputedAt    *time.Time `json:"computed_at"`
	ExpiresAt     *time.Time `json:"expires_at"`
	ResultsStatus string     `json:"results_status"`
	ResultsURL    *string    `json:"results_url"`
	ResultCount   *int64     `json:"result_count"`
	QueryURL      string     `json:"query_url"`
}

// historyPosition continues a traversal; Snapshot excludes newer queries.
type historyPosition struct {
	Snapshot time.Time `json:"s"`
	T        time.Time `json:"t"`
	ID       uuid.UUID `json:"i"`
}

func (s *Server) listQueries(r *request) error {
	q := r.query("cursor", "limit", "site_id", "status", "created_from", "created_before")
	f := ledger.QueryFilter{
		SiteID:        q.uuid("site_id"),
		Status:        q.enum("status", "queued", "running", "succeeded", "partial", "failed", "cancelled"),
		CreatedFrom:   q.time("created_from"),
		CreatedBefore: q.time("created_before"),
		DatasetIDs:    r.principal.DatasetIDs(),
		Snapshot:      s.clock.Now(),
		Limit:         q.limit(historyPageDefault, historyPageMax),
	}
	cur := q.cursor()
	if err := q.err(); err != nil {
		return err
	}
	l := s.list(r, "queries", binding(fmtUUID(f.SiteID), f.Status, fmtTime(f.CreatedFrom), fmtTime(f.CreatedBefore)))
	pos := historyPosition{Snapshot: f.Snapshot}
	if err := l.resume(cur, &pos); err != nil {
		return err
	}
	if f.Snapshot = pos.Snapshot; pos.ID != uuid.Nil {
		f.AfterTime, f.AfterID = &pos.T, pos.ID
	}
	rows, err := s.led.ListQueries(r.ctx, r.principal.AccountID, f)
	if err != nil {
		return err
	}
	rows, pg, err := pageOf(l, rows, f.Limit, func(qq *ledger.Query) historyPosition {
		return historyPosition{Snapshot: f.Snapshot, T: qq.CreatedAt, ID: qq.ID}
	})
	if err != nil {
		return err
	}
	now := s.clock.Now()
	body := struct {
		APIVersion string         `json:"api_version"`
		Queries    []querySummary `json:"queries"`
		Page       page           `json:"page"`
	}{APIVersion: "1", Queries: []querySummary{}, Page: pg}
	for _, qq := range rows {
		v := queryView(qq)
		sum := querySummary{QueryID: v.QueryID, Status: qq.Status, SiteID: v.SiteID, LayerIDs: qq.LayerIDs, RadiusM: qq.RadiusM,
			CreatedAt: v.CreatedAt, ComputedAt: v.ComputedAt, ExpiresAt: utc(qq.ExpiresAt), QueryURL: v.QueryURL}
		switch {
		case qq.ReleasedAt != nil:
			sum.ResultsStatus = "released"
		case qq.ExpiresAt != nil && !now.Before(*qq.ExpiresAt):
			sum.ResultsStatus = "expired"
		case qq.ResultKey != nil:
			sum.ResultsStatus, sum.ResultsURL, sum.ResultCount = "available", v.ResultsURL, qq.ResultCount
		case qq.Status == ledger.QueryQueued || qq.Status == ledger.QueryRunning:
			sum.ResultsStatus = "pending"
		default:
			sum.ResultsStatus = "unavailable"
		}
		body.Queries = append(body.Queries, sum)
	}
	return r.writeJSON(200, body)
}

func (s *Server) getQueryLayerSchema(r *request) error {
	if err := r.query().err(); err != nil {
		return err
	}
	q, err := s.readQuery(r)
	if err != nil {
		return err
	}
	id := r.params["layer_id"]
	for _, f := range q.Frozen {
		if f.LayerID != id {
			continue
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(f.FieldSchema, &raw); err != nil {
			return err
		}
		fs, err := tiles.ParseFieldSchema(raw)
		if err != nil {
			return err
		}
		schema := fs.JSONSchema()
		schema["$id"] = BasePath + "/queries/" + q.ID.String() + "/layers/" + id + "/schema"
		schema["title"] = id
		schema["description"] = "Fields of layer " + id + " as captured by query " + q.ID.String() + " (schema_version " + f.SchemaVersion + ")."
		schema["x-schema-version"] = f.SchemaVersion
		return r.writeJSON(200, schema)
	}
	return &Problem{Code: CodeNotFound, Detail: "The query did not select layer " + strings.TrimSpace(id) + "."}
}

// logicalQuery is what identifies a query under its Idempotency-Key: page
// size is a presentation option, not identity.
type logicalQuery struct {
	Site     json.RawMessage
	Layers   []string
	Radius   float64
	Geometry bool
}

// queryFingerprint is queries.Fingerprint of the logical query.
func queryFingerprint(op string, site json.RawMessage, layers []string, radius float64, geometry bool) ([]byte, error) {
	return siteFingerprint(op, logicalQuery{site, layers, radius, geometry}, site, struct {
		Layers   []string
		Radius   float64
		Geometry bool
	}{layers, radius, geometry})
}

// siteFingerprint is queries.Fingerprint(op, logical) of a logical request
// whose first field is Site, the body's site selector, and whose other
// fields are rest's, in order. The site is most of its bytes (240 KB for
// 10,000 positions), which json.Marshal validates and compacts again
// (1.7 ms there). A body already checked (decodeBody) whose site holds
// none of the characters json.Marshal escapes (<, > and &, U+2028 and
// U+2029) compacts by dropping the white space outside its strings, so
// the encoding is written around it (TestSiteFingerprintAsMarshalled).
func siteFingerprint(op string, logical any, site json.RawMessage, rest any) ([]byte, error) {
	if len(site) == 0 || bytes.ContainsAny(site, "<>&\u2028\u2029") {
		return queries.Fingerprint(op, logical)
	}
	enc, err := json.Marshal(rest)
	if err != nil {
		return nil, err
	}
	// {"Site":<site>,...}: rest's members after its opening brace.
	return queries.FingerprintEncoded(op, []byte(`{"Site":`), compactValid(site), []byte(","), enc[1:]), nil
}

// compactValid drops the white space outside the strings of b, valid
// JSON; b itself when it has none.
func compactValid(b []byte) []byte {
	if !bytes.ContainsAny(b, " \t\r\n") {
		return b
	}
	out := make([]byte, 0, len(b))
	in, esc := false, false
	for _, c := range b {
		switch {
		case esc:
			esc = false
		case in && c == '\\':
			esc = true
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\t' || c == '\r' || c == '\n'):
			continue
		}
		out = append(out, c)
	}
	return out
}
