package ingest

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress reports an ingest's progress to a writer: a progress bar on a
// terminal (bytes of input read as the bar, so the ETA comes from bytes;
// features, rate and rejects in the description), else JSON lines about
// every 2 s and a final one. The counters are updated by the pipeline.
type progress struct {
	features atomic.Int64
	rejected atomic.Int64
	bytes    atomic.Int64
	tiles    atomic.Int64
	phase    atomic.Int32

	w     io.Writer
	total int64
	start time.Time
	bar   *progressbar.ProgressBar
	stop  chan struct{}
	wg    sync.WaitGroup
	once  sync.Once
}

const (
	phaseRead int32 = iota
	phaseTiles
)

var phaseNames = [...]string{"read", "tiles"}

// progressInterval is how often plain progress lines are written.
const progressInterval = 2 * time.Second

func startProgress(w io.Writer, total int64, start time.Time) *progress {
	p := &progress{w: w, total: total, start: start, stop: make(chan struct{})}
	if w == nil {
		return p
	}
	interval := progressInterval
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		max := total
		if max <= 0 {
			max = -1 // unknown: a spinner
		}
		p.bar = progressbar.NewOptions64(max,
			progressbar.OptionSetWriter(w),
			progressbar.OptionShowBytes(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetDescription("reading"),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
		)
		interval = 200 * time.Millisecond
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.report(false)
			}
		}
	}()
	return p
}

func (p *progress) setPhase(ph int32) { p.phase.Store(ph) }

// progressLine is one machine-readable progress report.
type progressLine struct {
	Event        string  `json:"event"`
	Phase        string  `json:"phase"`
	Features     int64   `json:"features"`
	Rejected     int64   `json:"rejected"`
	BytesRead    int64   `json:"bytes_read"`
	BytesTotal   int64   `json:"bytes_total,omitempty"`
	Tiles        int64   `json:"tiles"`
	FeaturesPerS float64 `json:"features_per_s"`
	ElapsedS     float64 `json:"elapsed_s"`
	Done         bool    `json:"done,omitempty"`
}

func (p *progress) line(done bool) progressLine {
	el := time.Since(p.start).Seconds()
	l := progressLine{
		Event: "progress", Phase: phaseNames[p.phase.Load()],
		Features: p.features.Load(), Rejected: p.rejected.Load(),
		BytesRead: p.bytes.Load(), Tiles: p.tiles.Load(),
		ElapsedS: round3(el), Done: done,
	}
	if p.total > 0 {
		l.BytesTotal = p.total
	}
	if el > 0 {
		l.FeaturesPerS = round3(float64(l.Features) / el)
	}
	return l
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

func (p *progress) report(done bool) {
	l := p.line(done)
	if p.bar != nil {
		desc := fmt.Sprintf("%d features, %.0f/s, %d rejected", l.Features, l.FeaturesPerS, l.Rejected)
		if l.Phase == "tiles" {
			desc = fmt.Sprintf("%d features, %d rejected, writing tiles: %d", l.Features, l.Rejected, l.Tiles)
		}
		p.bar.Describe(desc)
		if p.total > 0 {
			p.bar.Set64(min(l.BytesRead, p.total))
		} else {
			p.bar.Set64(l.Features)
		}
		if done {
			p.bar.Finish()
		}
		return
	}
	b, _ := json.Marshal(l)
	p.w.Write(append(b, '\n'))
}

// finish stops the reports and writes the final one.
func (p *progress) finish() {
	p.once.Do(func() {
		if p.w == nil {
			return
		}
		close(p.stop)
		p.wg.Wait()
		p.report(true)
	})
}
