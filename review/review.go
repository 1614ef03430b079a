// Package review serves the data team's review of staged releases in a
// browser, on loopback: for each staged release a page with a map of the
// current release and the staged one (added, removed and changed features
// in their own colours), the counts, a table of the changed features with
// their field changes, and promote / discard buttons that do what
// `siteenv release promote` and `siteenv release discard` do. Every asset
// is embedded: the page loads nothing from elsewhere.
package review

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/paulmach/orb"

	"siteenv/ledger"
	"siteenv/store"
)

//go:embed assets
var assets embed.FS

var pages = template.Must(template.ParseFS(assets, "assets/*.html"))

// Basemap renders a raster basemap (PNG bytes) of bbox (CRS84) at w×h
// pixels in Web Mercator, the projection of the review map. The report
// package's PMTiles basemap is meant to serve it; without one the map is
// drawn on a plain background.
type Basemap func(ctx context.Context, bbox orb.Bound, w, h int) ([]byte, error)

// Options configure a Server.
type Options struct {
	Ledger *ledger.Ledger // required
	Store  store.Store    // required
	// Actor is recorded in the release audit for promote and discard.
	// Default "siteenv review".
	Actor string
	// Basemap, when set, draws the map over a basemap. Default nil: none.
	Basemap Basemap
	// BasemapAttribution is printed under the map when Basemap is set.
	BasemapAttribution string
	// MaxFeatures bounds the features the map and table show per page
	// (the counts are always exact). Default 5000.
	MaxFeatures int
	// Tolerance (metres) under which a moved geometry is unchanged.
	// Default 0.001 (ingest.DefaultTolerance).
	Tolerance float64
	// Log receives one line per promote or discard. Default slog.Default().
	Log *slog.Logger
}

// Server is the review site. Safe for concurrent use.
type Server struct {
	opt Options
	// token guards promote and discard: a page of another site open in the
	// same browser could otherwise POST to the loopback listener.
	token string
}

// New returns a Server.
func New(opt Options) (*Server, error) {
	if opt.Ledger == nil || opt.Store == nil {
		return nil, errors.New("review: Ledger and Store are required")
	}
	if opt.Actor == "" {
		opt.Actor = "siteenv review"
	}
	if opt.MaxFeatures <= 0 {
		opt.MaxFeatures = 5000
	}
	if opt.Tolerance == 0 {
		opt.Tolerance = 0.001
	}
	if opt.Log == nil {
		opt.Log = slog.Default()
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	return &Server{opt: opt, token: hex.EncodeToString(b)}, nil
}

// Handler returns the site's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", s.index)
	mux.HandleFunc("GET /review/{layer}/{release}", s.page)
	mux.HandleFunc("GET /api/diff/{layer}/{release}", s.diff)
	mux.HandleFunc("POST /api/promote/{layer}/{release}", s.decide)
	mux.HandleFunc("POST /api/discard/{layer}/{release}", s.decide)
	mux.HandleFunc("GET /basemap.png", s.basemap)
	return securityHeaders(mux)
}

// securityHeaders keeps the pages to their own origin, and answers only
// requests addressed to a loopback name: a page of another site whose name
// was rebound to 127.0.0.1 (DNS rebinding) would otherwise be same-origin
// with this one and could read its token.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		if ip := net.ParseIP(strings.Trim(host, "[]")); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			http.Error(w, "the review pages answer only on a loopback address", http.StatusMisdirectedRequest)
			return
		}
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		h.ServeHTTP(w, r)
	})
}

// staged is one staged release awaiting review.
type staged struct {
	LayerID, LayerName, ReleaseID string
	Current                       string // the layer's current release, "" for none
	Features                      int64
	PublishedAt                   string
}

// stagedReleases lists every staged release of every layer.
func (s *Server) stagedReleases(ctx context.Context) ([]staged, error) {
	var out []staged
	after := ""
	for {
		ls, err := s.opt.Ledger.ListLayers(ctx, ledger.LayerFilter{WithoutCoverage: true, AfterID: after, Limit: 500})
		if err != nil {
			return nil, err
		}
		more := len(ls) > 500
		if more {
			ls = ls[:500]
		}
		for _, y := range ls {
			rs, err := s.opt.Ledger.ListReleases(ctx, y.ID)
			if err != nil {
				return nil, err
			}
			cur := ""
			for _, r := range rs {
				if r.State == ledger.ReleaseCurrent {
					cur = r.ReleaseID
				}
			}
			for _, r := range rs {
				if r.State == ledger.ReleaseStaged {
					out = append(out, staged{LayerID: y.ID, LayerName: y.Name, ReleaseID: r.ReleaseID, Current: cur,
						Features: r.FeatureCount, PublishedAt: r.PublishedAt.UTC().Format("2006-01-02 15:04 MST")})
				}
			}
			after = y.ID
		}
		if !more {
			break
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].LayerID < out[j].LayerID })
	return out, nil
}

func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	st, err := s.stagedReleases(r.Context())
	if err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = pages.ExecuteTemplate(w, "index.html", struct{ Staged []staged }{st})
}

func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	layer, rel := r.PathValue("layer"), r.PathValue("release")
	info, err := s.release(r.Context(), layer, rel)
	if err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_ = pages.ExecuteTemplate(w, "release.html", struct {
		LayerID, LayerName, ReleaseID, State, Current, Token string
		Features                                             int64
		Basemap                                              bool
		Attribution                                          string
	}{layer, info.layerName, rel, info.state, info.current, s.token, info.features, s.opt.Basemap != nil, s.opt.BasemapAttribution})
}

type releaseInfo struct {
	layerName, state, current string
	features                  int64
}

var errNoRelease = errors.New("no such release")

func (s *Server) release(ctx context.Context, layer, rel string) (releaseInfo, error) {
	var info releaseInfo
	y, err := s.opt.Ledger.Layer(ctx, layer)
	if errors.Is(err, ledger.ErrNotFound) {
		return info, errNoRelease
	}
	if err != nil {
		return info, err
	}
	info.layerName = y.Name
	rs, err := s.opt.Ledger.ListReleases(ctx, layer)
	if err != nil {
		return info, err
	}
	found := false
	for _, r := range rs {
		if r.State == ledger.ReleaseCurrent {
			info.current = r.ReleaseID
		}
		if r.ReleaseID == rel {
			found, info.state, info.features = true, r.State, r.FeatureCount
		}
	}
	if !found {
		return info, errNoRelease
	}
	return info, nil
}

// decide promotes or discards a release, as the CLI does.
func (s *Server) decide(w http.ResponseWriter, r *http.Request) {
	if subtle.ConstantTimeCompare([]byte(r.Header.Get("X-Review-Token")), []byte(s.token)) != 1 {
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "missing or wrong review token: reload the page"})
		return
	}
	layer, rel := r.PathValue("layer"), r.PathValue("release")
	ctx := r.Context()
	var err error
	action := "promoted"
	if strings.HasPrefix(r.URL.Path, "/api/discard/") {
		action = "discarded"
		err = s.opt.Ledger.DiscardRelease(ctx, layer, rel, s.opt.Actor)
	} else {
		_, _, err = s.opt.Ledger.PromoteRelease(ctx, layer, rel, s.opt.Actor)
	}
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "layer " + strconv.Quote(layer) + " has no release " + strconv.Quote(rel)})
		return
	case errors.Is(err, ledger.ErrNotStaged):
		writeJSON(w, http.StatusConflict, map[string]string{"error": "the release is not staged any more"})
		return
	case err != nil:
		s.fail(w, err)
		return
	}
	s.opt.Log.Info("review: release "+action, "layer_id", layer, "release_id", rel, "actor", s.opt.Actor)
	info, err := s.release(ctx, layer, rel)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"layer_id": layer, "release_id": rel, "action": action, "state": info.state, "current_release_id": info.current})
}

func (s *Server) basemap(w http.ResponseWriter, r *http.Request) {
	if s.opt.Basemap == nil {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	var v [4]float64
	parts := strings.Split(q.Get("bbox"), ",")
	if len(parts) != 4 {
		http.Error(w, "bbox=west,south,east,north", http.StatusBadRequest)
		return
	}
	for i, p := range parts {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil {
			http.Error(w, "bbox=west,south,east,north", http.StatusBadRequest)
			return
		}
		v[i] = f
	}
	wpx, _ := strconv.Atoi(q.Get("w"))
	hpx, _ := strconv.Atoi(q.Get("h"))
	if wpx <= 0 || hpx <= 0 || wpx > 4096 || hpx > 4096 || v[0] >= v[2] || v[1] >= v[3] {
		http.Error(w, "w and h in 1..4096, a non-empty bbox", http.StatusBadRequest)
		return
	}
	png, err := s.opt.Basemap(r.Context(), orb.Bound{Min: orb.Point{v[0], v[1]}, Max: orb.Point{v[2], v[3]}}, wpx, hpx)
	if err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "image/png")
	_, _ = w.Write(png)
}

func (s *Server) fail(w http.ResponseWriter, err error) {
	if errors.Is(err, errNoRelease) {
		http.Error(w, "no such layer or release", http.StatusNotFound)
		return
	}
	s.opt.Log.Error("review", "err", err)
	http.Error(w, "internal error (see the review command's log)", http.StatusInternalServerError)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
