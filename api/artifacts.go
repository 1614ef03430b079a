package api

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"siteenv/ledger"
)

// deliveryTTL is a download link's life (contract: Limits).
const deliveryTTL = 5 * time.Minute

// streamTimeout bounds how long one download may stream (100 MiB to a slow
// client); the request context ends when the handler returns, so the body
// gets its own.
const streamTimeout = 10 * time.Minute

type artifactBody struct {
	ArtifactID uuid.UUID  `json:"artifact_id"`
	ReportID   *uuid.UUID `json:"report_id"`
	RevisionID *uuid.UUID `json:"revision_id"`
	Revision   *int       `json:"revision"`
	Filename   string     `json:"filename"`
	MediaType  string     `json:"media_type"`
	Size       int64      `json:"size"`
	SHA256     string     `json:"sha256"`
	CreatedAt  time.Time  `json:"created_at"`
}

// artifactView is the client's view: never the storage key.
func artifactView(a ledger.Artifact) artifactBody {
	return artifactBody{ArtifactID: a.ID, ReportID: a.ReportID, RevisionID: a.RevisionID, Revision: a.Revision,
		Filename: a.Filename, MediaType: a.MediaType, Size: a.Size, SHA256: a.SHA256, CreatedAt: a.CreatedAt}
}

var errArtifactHidden = newProblem(CodeNotFound, "The artifact does not exist or is not accessible to this key.")

// readableArtifact reads an artifact of the key's account that the key's
// dataset restriction permits; anything else is not_found.
func (s *Server) readableArtifact(r *request, id uuid.UUID) (ledger.Artifact, error) {
	a, err := s.led.Artifact(r.ctx, r.principal.AccountID, id)
	if errors.Is(err, ledger.ErrNotFound) {
		return ledger.Artifact{}, errArtifactHidden
	}
	if err != nil {
		return ledger.Artifact{}, err
	}
	if !r.principal.PermitsScope(a.DatasetIDs) {
		return ledger.Artifact{}, errArtifactHidden
	}
	return a, nil
}

func (s *Server) getArtifact(r *request) error {
	id, err := r.pathUUID("artifact_id")
	if err != nil {
		return err
	}
	if err := r.query().err(); err != nil {
		return err
	}
	r.resourceType, r.resourceID = "artifact", id.String()
	a, err := s.readableArtifact(r, id)
	if err != nil {
		return err
	}
	return r.writeJSON(200, struct {
		APIVersion string       `json:"api_version"`
		Artifact   artifactBody `json:"artifact"`
	}{"1", artifactView(a)})
}

func (s *Server) createDelivery(r *request) error {
	id, err := r.pathUUID("artifact_id")
	if err != nil {
		return err
	}
	var req struct{}
	if err := decodeBody(string(r.http.Request.Header.ContentType()), r.http.Request.Body(), &req); err != nil {
		return err
	}
	r.resourceType, r.resourceID = "artifact", id.String()
	if _, err := s.readableArtifact(r, id); err != nil {
		return err
	}
	d, err := s.led.MintDelivery(r.ctx, r.principal.AccountID, id, r.principal.KeyID, deliveryTTL)
	if errors.Is(err, ledger.ErrNotFound) {
		return errArtifactHidden
	}
	if err != nil {
		return err
	}
	// The body holds a secret link: no cache may keep it.
	r.http.Response.Header.Set("Cache-Control", "no-store")
	url := BasePath + "/deliveries/" + d.Capability
	r.http.Response.Header.Set("Location", url)
	return r.writeJSON(201, struct {
		APIVersion string    `json:"api_version"`
		DeliveryID uuid.UUID `json:"delivery_id"`
		ArtifactID uuid.UUID `json:"artifact_id"`
		URL        string    `json:"url"`
		ExpiresAt  time.Time `json:"expires_at"`
		SHA256     string    `json:"sha256"`
	}{"1", d.ID, d.ArtifactID, url, d.ExpiresAt.UTC(), d.SHA256})
}

var errDeliveryUnknown = newProblem(CodeNotFound, "This download link is not valid; obtain a fresh one with POST /artifacts/{artifact_id}/deliveries.")

// getDelivery serves a file to whoever holds a live capability. No API key is
// read: the capability alone authorizes, and its minting key's authority is
// rechecked on every request, full or ranged.
func (s *Server) getDelivery(r *request) error {
	h := &r.http.Response.Header
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "private, no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	capability := r.params["capability"]
	if !ledger.ValidCapability(capability) {
		return errDeliveryUnknown
	}
	if err := r.query().err(); err != nil {
		return err
	}
	d, err := s.led.Delivery(r.ctx, capability)
	if errors.Is(err, ledger.ErrNotFound) {
		return errDeliveryUnknown
	}
	if err != nil {
		return err
	}
	a, m := d.Artifact, d.Minter
	switch {
	case !s.clock.Now().Before(d.ExpiresAt):
		return newProblem(CodeDeliveryExpired, "This download link has expired (links last five minutes); obtain a fresh one.")
	case d.Revoked || m.Revoked:
		return newProblem(CodeCredentialRevoked, "This download link was revoked, or the key that created it was.")
	case !m.HasScope(ledger.ScopeArtifactsRead):
		return newProblem(CodeScopeInsufficient, "The key that created this link no longer holds artifacts:read.")
	case m.AccountID != a.AccountID || !m.PermitsScope(a.DatasetIDs):
		return errDeliveryUnknown
	}

	etag := `"` + a.SHA256 + `"`
	sum, err := hex.DecodeString(a.SHA256)
	if err != nil {
		return fmt.Errorf("api: artifact %s: stored sha256: %w", a.ID, err)
	}
	h.Set("Accept-Ranges", "bytes")
	h.Set("ETag", etag)
	h.Set("Repr-Digest", "sha-256=:"+base64.StdEncoding.EncodeToString(sum)+":")
	if etagMatches(string(r.http.Request.Header.Peek("If-None-Match")), etag) {
		// The client holds these bytes already (RFC 9110 13.1.2): no body,
		// and no Range applies.
		r.http.SetStatusCode(304)
		return nil
	}
	off, length, partial, err := parseRange(string(r.http.Request.Header.Peek("Range")), string(r.http.Request.Header.Peek("If-Range")), etag, a.Size)
	if err != nil {
		return err
	}
	c, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), streamTimeout)
	rc, err := s.store.GetRange(c, a.StorageKey, off, length)
	if err != nil {
		cancel()
		return fmt.Errorf("api: artifact %s: %w", a.ID, err)
	}
	h.Set("Content-Disposition", `attachment; filename="`+a.Filename+`"`)
	h.SetContentType(a.MediaType)
	status := 200
	if partial {
		status = 206
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", off, off+length-1, a.Size))
	}
	r.http.SetStatusCode(status)
	r.http.SetBodyStream(&deliveryBody{rc: rc, cancel: cancel}, int(length))
	return nil
}

// parseRange applies Range and If-Range (RFC 9110 14) to a file of size bytes:
// it returns the bytes to send and whether that is a partial (206) answer.
// A Range that If-Range does not validate, or of another unit, is ignored;
// several ranges and unsatisfiable ones are range_not_satisfiable; malformed
// ones invalid_request.
func parseRange(rng, ifRange, etag string, size int64) (off, length int64, partial bool, err error) {
	full := func() (int64, int64, bool, error) { return 0, size, false, nil }
	if rng == "" {
		return full()
	}
	// If-Range: only an exact strong ETag keeps the Range (a date never does:
	// artifacts carry no Last-Modified).
	if ifRange != "" && ifRange != etag {
		return full()
	}
	unit, spec, ok := strings.Cut(rng, "=")
	if !ok {
		return 0, 0, false, badRange("Range must be bytes=FIRST-LAST, bytes=FIRST- or bytes=-SUFFIX.")
	}
	if !strings.EqualFold(strings.TrimSpace(unit), "bytes") {
		return full()
	}
	unsatisfiable := &Problem{Code: CodeRangeNotSatisfiable, ContentRange: "bytes */" + strconv.FormatInt(size, 10)}
	if strings.Contains(spec, ",") {
		unsatisfiable.Detail = "Only a single byte range is served; request the ranges one at a time."
		return 0, 0, false, unsatisfiable
	}
	first, last, _ := strings.Cut(strings.TrimSpace(spec), "-")
	if !strings.Contains(spec, "-") || !rangeNumRE.MatchString(first) || !rangeNumRE.MatchString(last) || (first == "" && last == "") {
		return 0, 0, false, badRange("Range must be bytes=FIRST-LAST, bytes=FIRST- or bytes=-SUFFIX.")
	}
	unsatisfiable.Detail = fmt.Sprintf("The range lies outside the file of %d bytes.", size)
	if first == "" { // suffix: the last N bytes
		n, err := strconv.ParseInt(last, 10, 64)
		if err != nil {
			n = size // more digits than int64 holds: longer than any file
		}
		if n == 0 || size == 0 {
			return 0, 0, false, unsatisfiable
		}
		n = min(n, size)
		return size - n, n, true, nil
	}
	f, err := strconv.ParseInt(first, 10, 64)
	if err != nil {
		return 0, 0, false, unsatisfiable
	}
	l := size - 1
	if last != "" {
		if l, err = strconv.ParseInt(last, 10, 64); err != nil {
			l = size - 1 // beyond any file: to the end
		}
		if l < f {
			return 0, 0, false, badRange("The range's last byte comes before its first.")
		}
		l = min(l, size-1)
	}
	if f >= size {
		return 0, 0, false, unsatisfiable
	}
	return f, l - f + 1, true, nil
}

var rangeNumRE = regexp.MustCompile(`^[0-9]*$`)

func badRange(detail string) *Problem {
	return invalid(detail, FieldError{Field: "Range", Message: "must be a single bytes range"})
}

// deliveryBody streams an artifact; fasthttp closes it when the response is
// written (or abandoned), which ends its context.
type deliveryBody struct {
	rc     io.ReadCloser
	cancel context.CancelFunc
}

func (b *deliveryBody) Read(p []byte) (int, error) { return b.rc.Read(p) }

// copyBufs holds the 256 KiB buffers downloads are copied through: large
// reads from the store and large writes to the connection, no per-request
// allocation.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// WriteTo lets fasthttp copy through a pooled 256 KiB buffer.
func (b *deliveryBody) WriteTo(w io.Writer) (int64, error) {
	buf := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(buf)
	// Hide io.ReaderFrom and io.WriterTo so CopyBuffer uses buf.
	return io.CopyBuffer(struct{ io.Writer }{w}, struct{ io.Reader }{b.rc}, *buf)
}

func (b *deliveryBody) Close() error {
	defer b.cancel()
	return b.rc.Close()
}
