package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"siteenv/artifacts"
	"siteenv/engine"
	"siteenv/jobs"
	"siteenv/ledger"
	"siteenv/report"
)

// reviseReport builds the next revision of a completed report from the
// current releases, at no charge (`admin report revise`).
func reviseReport(ctx context.Context, e *env, id uuid.UUID) (any, error) {
	st, err := e.openStore(ctx)
	if err != nil {
		return nil, err
	}
	eng, err := engine.New(st, engine.Options{MemoryBudget: e.set.EngineMemory, Logger: e.log})
	if err != nil {
		return nil, err
	}
	bm, bmClose, err := openBasemap(ctx, e.set, st, e.log)
	if err != nil {
		return nil, err
	}
	defer bmClose.Close()
	runner, err := jobs.New(jobs.Config{Logger: e.log, Basemap: bm}, e.led, eng, st)
	if err != nil {
		return nil, err
	}
	rev, err := runner.ReviseReport(ctx, id)
	if err != nil {
		return nil, err
	}
	return map[string]any{"report_id": id, "revision_id": rev.ID, "revision": rev.Number}, nil
}

// importLimitations are an imported website report's limitations: nothing
// but the PDF is known about it.
var importLimitations = []string{
	"This report was created on the website and imported as a PDF: the datasets it covers (its dataset scope), " +
		"the source releases and provenance it rests on, and its text are unknown; only the PDF is available.",
	report.Limitations,
}

// importReport stores a historical website report's PDF as an artifact,
// then records the report (`admin report import`). The site is checked
// first; should recording the report still fail, the artifact stays as an
// unreferenced file.
func importReport(ctx context.Context, e *env, account, site uuid.UUID, path string, created time.Time) (any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(data, []byte("%PDF-")) {
		return nil, fmt.Errorf("%s is not a PDF (it does not start with %%PDF-)", path)
	}
	if len(data) > artifacts.MaxSize {
		return nil, fmt.Errorf("%s: %w", path, artifacts.ErrTooLarge)
	}
	if _, _, err := e.led.ReportSite(ctx, account, site); err != nil {
		return nil, fmt.Errorf("site %s of account %s: %w", site, account, err)
	}
	st, err := e.openStore(ctx)
	if err != nil {
		return nil, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	revID, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	one := 1
	a, err := artifacts.Put(ctx, st, e.led, artifacts.Params{Account: account, ReportID: &id, RevisionID: &revID, Revision: &one,
		Filename: importFilename(path, id), MediaType: ledger.MediaPDF, DatasetIDs: nil}, bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, err
	}
	rep, err := e.led.ImportReport(ctx, ledger.ImportReportParams{ID: id, RevisionID: revID, Account: account, SiteID: site,
		CreatedAt: created, Limitations: importLimitations})
	if err != nil {
		return nil, err
	}
	return map[string]any{"report_id": rep.ID, "revision_id": revID, "artifact_id": a.ID, "sha256": a.SHA256, "size": a.Size}, nil
}

// importFilename is the file's own name in the characters an artifact
// name allows (ledger.ValidArtifactFilename), or report-<id>.pdf.
func importFilename(path string, id uuid.UUID) string {
	var b strings.Builder
	for _, c := range strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)) {
		switch {
		case c < 0x80 && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'):
			b.WriteRune(c)
		default:
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-._")
	if len(name) > 120 {
		name = name[:120]
	}
	name += ".pdf"
	if !ledger.ValidArtifactFilename(name) || name == ".pdf" {
		return "report-" + id.String() + ".pdf"
	}
	return name
}
