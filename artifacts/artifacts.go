// Package artifacts stores immutable files (report PDFs, map images) for an
// account: the bytes go to the object store under
// artifacts/<account_id>/<artifact_id>/<filename>, then the ledger records
// them with their size and SHA-256. Report builds (package jobs) and the
// report import command call Put; the API only reads what Put recorded.
package artifacts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"

	"github.com/google/uuid"

	"siteenv/ledger"
	"siteenv/store"
)

// MaxSize is the largest artifact (contract: Limits, downloaded artifact 100 MiB).
const MaxSize = 100 << 20

// ErrTooLarge reports content over MaxSize; nothing is recorded.
var ErrTooLarge = errors.New("artifacts: file larger than 100 MiB")

// Params describe a new artifact. The ledger fields mirror ledger.ArtifactParams.
type Params struct {
	Account    uuid.UUID
	ReportID   *uuid.UUID
	RevisionID *uuid.UUID
	Revision   *int
	// Filename is 1..128 of [A-Za-z0-9._-] (ledger.ValidArtifactFilename).
	Filename string
	// MediaType is ledger.MediaPDF or ledger.MediaJPEG.
	MediaType string
	// DatasetIDs: the layers whose data the file holds; nil = unknown scope.
	DatasetIDs []string
}

// Key is the object key of an artifact.
func Key(account, id uuid.UUID, filename string) string {
	return "artifacts/" + account.String() + "/" + id.String() + "/" + filename
}

// Put streams content (size bytes, or -1 when unknown) to st and records it in
// led, computing the SHA-256 on the way. The object is written once under a
// fresh artifact id and never overwritten; if recording fails the object is
// removed so no unrecorded file stays behind. Safe for concurrent use.
func Put(ctx context.Context, st store.Store, led *ledger.Ledger, p Params, content io.Reader, size int64) (ledger.Artifact, error) {
	if !ledger.ValidArtifactFilename(p.Filename) {
		return ledger.Artifact{}, fmt.Errorf("%w: artifact filename %q", ledger.ErrInvalid, p.Filename)
	}
	if p.MediaType != ledger.MediaPDF && p.MediaType != ledger.MediaJPEG {
		return ledger.Artifact{}, fmt.Errorf("%w: artifact media type %q", ledger.ErrInvalid, p.MediaType)
	}
	if size > MaxSize {
		return ledger.Artifact{}, ErrTooLarge
	}
	id, err := uuid.NewV7()
	if err != nil {
		return ledger.Artifact{}, err
	}
	key := Key(p.Account, id, p.Filename)
	h := sha256.New()
	cr := &countingHash{r: io.LimitReader(content, MaxSize+1), h: h}
	if err := st.Put(ctx, key, cr, size); err != nil {
		return ledger.Artifact{}, fmt.Errorf("artifacts: store %s: %w", key, err)
	}
	if cr.n > MaxSize {
		_ = st.Delete(context.WithoutCancel(ctx), key)
		return ledger.Artifact{}, ErrTooLarge
	}
	a, err := led.CreateArtifact(ctx, ledger.ArtifactParams{
		ID: id, Account: p.Account, ReportID: p.ReportID, RevisionID: p.RevisionID, Revision: p.Revision,
		Filename: p.Filename, MediaType: p.MediaType, Size: cr.n, SHA256: hex.EncodeToString(h.Sum(nil)),
		StorageKey: key, DatasetIDs: p.DatasetIDs,
	})
	if err != nil {
		_ = st.Delete(context.WithoutCancel(ctx), key)
		return ledger.Artifact{}, err
	}
	return a, nil
}

type countingHash struct {
	r io.Reader
	h hash.Hash
	n int64
}

func (c *countingHash) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.h.Write(p[:n])
	c.n += int64(n)
	return n, err
}
