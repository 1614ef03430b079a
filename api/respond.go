package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/klauspost/compress/gzip"
	"github.com/valyala/fasthttp"

	"siteenv/api/openapi"
	"siteenv/ledger"
)

// finishResponse applies what every response shares once the handler has
// answered: the rate-limit headers, validators and conditional GET, and
// compression.
func (s *Server) finishResponse(r *request) {
	s.rateHeaders(r)
	resp := &r.http.Response
	eligible := compressible(resp)
	if eligible {
		// Caches must keep the two encodings apart.
		resp.Header.Add("Vary", "Accept-Encoding")
	}
	gz := eligible && acceptsGzip(r.http.Request.Header.Peek("Accept-Encoding"))
	if s.conditional(r, gz) {
		return
	}
	if gz {
		var z []byte
		if r.op != nil && r.op.ID == "get_openapi" {
			z = documentGzip()
		} else {
			z = gzipBytes(resp.Body(), gzip.BestSpeed)
		}
		resp.SetBodyRaw(z)
		resp.Header.SetContentEncoding("gzip")
	}
}

// rateState is the window of the limit a request was counted against.
type rateState struct {
	set   bool
	limit int
	w     ledger.RateWindow
}

// rateHeaders sets RateLimit-Policy and RateLimit (draft-ietf-httpapi-
// ratelimit-headers) on every authenticated response, from the counters that
// enforce the limit: the window this request was counted in, else (a write,
// or a request refused before counting) the window the request's kind is
// counted in, read without counting.
func (s *Server) rateHeaders(r *request) {
	p := r.principal
	if p.AccountID == uuid.Nil || p.Revoked || r.op == nil || r.op.Public {
		return
	}
	st := r.rate
	if !st.set {
		bucket, limit := ledger.BucketReads, s.cfg.ReadsPerMinute
		if r.op.ID == "create_query" {
			bucket, limit = ledger.BucketQueryAdmissions, queryAdmissionsPerMinute
		}
		if r.ctx.Err() != nil {
			return
		}
		w, err := s.led.Peek(r.ctx, p.AccountID, bucket, time.Minute)
		if err != nil {
			return // the headers are advisory; the response stands
		}
		st = rateState{set: true, limit: limit, w: w}
	}
	reset := int64((st.w.Reset + time.Second - 1) / time.Second)
	var buf [64]byte
	b := strconv.AppendInt(buf[:0], int64(st.limit), 10)
	b = append(b, ";w=60"...)
	r.http.Response.Header.SetBytesV("RateLimit-Policy", b)
	b = append(buf[:0], "limit="...)
	b = strconv.AppendInt(b, int64(st.limit), 10)
	b = append(b, ", remaining="...)
	b = strconv.AppendInt(b, int64(max(0, st.limit-st.w.Hits)), 10)
	b = append(b, ", reset="...)
	b = strconv.AppendInt(b, reset, 10)
	r.http.Response.Header.SetBytesV("RateLimit", b)
}

// etagOps answer with a strong ETag over their body and honour If-None-Match.
var etagOps = map[string]bool{
	"get_openapi": true, "list_layers": true, "get_layer": true, "get_layer_schema": true, "get_query_layer_schema": true,
}

// documentETag is the OpenAPI document's, computed once.
var documentETag = sync.OnceValue(func() string { return etagOf(openapi.Document) })

// etagOf is a strong validator of body: 128 bits of its SHA-256.
func etagOf(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`
}

// conditional sets the ETag of a 200 from an etagOps operation (the gzip
// representation's when gz: a strong validator names one representation)
// and answers 304 without the body when If-None-Match holds either.
func (s *Server) conditional(r *request, gz bool) bool {
	if r.op == nil || !etagOps[r.op.ID] || r.http.Response.StatusCode() != 200 {
		return false
	}
	tag := r.etag
	if tag == "" {
		tag = etagOf(r.http.Response.Body())
	}
	gzTag := tag[:len(tag)-1] + gzipETagSuffix + `"`
	if gz {
		r.http.Response.Header.Set("ETag", gzTag)
	} else {
		r.http.Response.Header.Set("ETag", tag)
	}
	inm := string(r.http.Request.Header.Peek("If-None-Match"))
	if !etagMatches(inm, tag) && !etagMatches(inm, gzTag) {
		return false
	}
	r.http.Response.ResetBody()
	r.http.Response.Header.Del("Content-Type")
	r.http.SetStatusCode(304)
	return true
}

// Compression: JSON and text bodies over 1 KiB, when the client accepts gzip.
const (
	minGzipBytes   = 1 << 10
	gzipETagSuffix = "-gzip"
)

// documentGzip is the OpenAPI document compressed once.
var documentGzip = sync.OnceValue(func() []byte { return gzipBytes(openapi.Document, gzip.BestCompression) })

// gzipWriters are reused: a gzip.Writer's state is large to allocate.
var gzipWriters [gzip.BestCompression + 1]sync.Pool

// gzipBytes compresses b into a new slice (the response keeps it until
// sent). level is gzip.BestSpeed or gzip.BestCompression.
func gzipBytes(b []byte, level int) []byte {
	out := bytes.NewBuffer(make([]byte, 0, len(b)/4+64))
	zw, _ := gzipWriters[level].Get().(*gzip.Writer)
	if zw == nil {
		zw, _ = gzip.NewWriterLevel(out, level) // level is valid: no error
	} else {
		zw.Reset(out)
	}
	_, _ = zw.Write(b) // writes to a bytes.Buffer do not fail
	_ = zw.Close()
	gzipWriters[level].Put(zw)
	return out.Bytes()
}

// compressible: a complete (not ranged, not yet encoded) JSON, NDJSON or
// text body over 1 KiB. Images and PDFs are never compressed.
func compressible(resp *fasthttp.Response) bool {
	switch resp.StatusCode() {
	case 204, 206, 304:
		return false
	}
	if len(resp.Body()) <= minGzipBytes || len(resp.Header.ContentEncoding()) > 0 {
		return false
	}
	ct := resp.Header.ContentType()
	if i := bytes.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	ct = bytes.TrimSpace(ct)
	return bytes.HasPrefix(ct, []byte("text/")) || bytes.Equal(ct, []byte("application/json")) ||
		bytes.HasSuffix(ct, []byte("+json")) || bytes.Equal(ct, []byte("application/x-ndjson"))
}

// acceptsGzip reads Accept-Encoding: gzip (or x-gzip, or *) listed without q=0.
func acceptsGzip(ae []byte) bool {
	for len(ae) > 0 {
		var item []byte
		item, ae, _ = bytes.Cut(ae, []byte(","))
		coding, params, _ := bytes.Cut(item, []byte(";"))
		coding = bytes.TrimSpace(coding)
		if !bytes.EqualFold(coding, []byte("gzip")) && !bytes.EqualFold(coding, []byte("x-gzip")) && string(coding) != "*" {
			continue
		}
		q := bytes.TrimSpace(params)
		if v, ok := bytes.CutPrefix(bytes.ToLower(q), []byte("q=")); ok {
			if f, err := strconv.ParseFloat(string(bytes.TrimSpace(v)), 64); err == nil && f == 0 {
				return false
			}
		}
		return true
	}
	return false
}

// observe counts the request and writes its access-log line: method, route
// template, status, duration, bytes, request and account ids. It never logs
// the raw path or query string (cursors, capabilities), nor any header
// (keys, Idempotency-Keys). Probes log at debug, everything else at info.
func (s *Server) observe(r *request, start time.Time) {
	d := time.Since(start)
	status := r.http.Response.StatusCode()
	s.inFlight.Add(-1)
	op, route := opUnmatched, "(unmatched)"
	switch {
	case r.op != nil:
		op, route = r.op.ID, BasePath+r.op.Path
	case r.probe != "":
		op, route = r.probe, "/"+r.probe
	}
	s.metrics.observeRequest(op, status, d)
	level := slog.LevelInfo
	if r.probe != "" {
		level = slog.LevelDebug
	}
	ctx := context.Background()
	if !s.log.Enabled(ctx, level) {
		return
	}
	var buf [11]slog.Attr // LogAttrs copies them: no allocation for the slice
	attrs := append(buf[:0],
		slog.String("method", string(r.http.Method())),
		slog.String("route", route),
		slog.String("operation", op),
		slog.Int("status", status),
		slog.Float64("duration_ms", float64(d.Microseconds())/1000),
		slog.Int("bytes", len(r.http.Response.Body())),
		slog.String("request_id", r.id),
	)
	if r.principal.AccountID != uuid.Nil {
		attrs = append(attrs, slog.String("account_id", r.principal.AccountID.String()))
	}
	if r.resourceType != "" {
		attrs = append(attrs, slog.String("resource_type", r.resourceType), slog.String("resource_id", r.resourceID))
	}
	if r.problemCode != "" {
		attrs = append(attrs, slog.String("code", r.problemCode))
	}
	s.log.LogAttrs(ctx, level, "request", attrs...)
}
