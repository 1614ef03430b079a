package ingest

import (
	"context"
	"testing"
)

// Re-ingesting the same file reads its bytes, finds the digest of the
// earlier run and publishes that release again without parsing a row;
// another byte, or another option, is a new run.
func TestSameInputIsANoOp(t *testing.T) {
	t.Parallel()
	b := setup(t)
	in := b.write("sites.ndjson", bowtieNDJSON)
	opt := b.opts()
	opt.Repair = true
	first, err := Run(context.Background(), opt, in)
	if err != nil || first.SameInput {
		t.Fatalf("first run %+v %v", first, err)
	}
	again, err := Run(context.Background(), opt, in)
	if err != nil {
		t.Fatal(err)
	}
	if !again.SameInput || !again.AlreadyPublished || again.ReleaseID != first.ReleaseID || again.Features != 2 || again.Repaired != 1 || b.pub.count() != 2 {
		t.Fatalf("again %+v (publish calls %d), want the same release from the digest", again, b.pub.count())
	}
	// Without --repair the same bytes are another ingest (and fail: the
	// bowtie is rejected).
	opt.Repair = false
	if sum, err := Run(context.Background(), opt, in); err == nil || sum.SameInput {
		t.Fatalf("without repair: %+v %v", sum, err)
	}
	opt.Repair = true
	in2 := b.write("sites.ndjson", bowtieNDJSON+"\n")
	if sum, err := Run(context.Background(), opt, in2); err != nil || sum.SameInput || sum.ReleaseID != first.ReleaseID {
		t.Fatalf("a blank line more: %+v %v, want a full run giving the same release", sum, err)
	}
}
