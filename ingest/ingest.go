package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"siteenv/geo"
	"siteenv/store"
	"siteenv/tiles"
)

// Publisher makes a written release visible: one ledger transaction that
// inserts the release and moves the layer's current release pointer. It
// must be idempotent: Run calls it again when the release already exists.
type Publisher interface {
	Publish(ctx context.Context, def *LayerDef, m *tiles.Manifest) error
}

// Options configure Run and RunRows. Defaults are filled in by Run; the
// zero value of every field except Layer and Store is usable.
type Options struct {
	// Layer is the layer the release belongs to (required), as returned
	// by ParseLayerDef.
	Layer *LayerDef
	// SourceCRS is the CRS of the input coordinates: OGC:CRS84 (default,
	// also ""), EPSG:4326, EPSG:7844, a GDA2020 MGA zone EPSG:7847..7858,
	// or a publisher's CRS converted on the way in (geo.ParseSourceCRS):
	// GDA94 EPSG:4283 and MGA94 EPSG:28348..28358 (to GDA2020 by the
	// Helmert transformation EPSG:8048), Albers EPSG:3577 and EPSG:9473,
	// Web Mercator EPSG:3857. A file that names its own CRS (a Shapefile's
	// .prj, a GeoPackage's srs, a GeoParquet crs other than OGC:CRS84, a
	// GeoJSON legacy "crs" member) uses it, and when SourceCRS is also set
	// the two must agree, else the file is refused (*FileError). A
	// Shapefile or GeoPackage naming no CRS whose coordinates are not
	// longitude, latitude needs SourceCRS: a CRS is never guessed.
	SourceCRS string
	// Table names the feature table of a GeoPackage input. Default "":
	// the GeoPackage's only feature table (several are an error).
	Table string
	// IDProperty names the property holding each feature's unique id.
	// Default "": the GeoJSON feature's "id" member when present (and the
	// feature_id of a GeoParquet tile), else "<file base name>:<row>".
	// The property is kept as a property only if the field schema has it.
	IDProperty string
	// MaxRejects is the number of rejected rows tolerated; one more aborts
	// the ingest with ErrTooManyRejects and nothing is written or
	// published. Default 0.
	MaxRejects int64
	// RejectsPath is where rejected rows are written as CSV (file,row,
	// reason), created only when a row is rejected. Default "": rejects
	// are counted but not written.
	RejectsPath string
	// MaxVertices caps the positions of one feature's geometry. Default
	// 1,000,000.
	MaxVertices int
	// Store receives the tiles and the manifest (required).
	Store store.Store
	// Publisher publishes the release once it is in the store. Default
	// nil: the release is written but not published.
	Publisher Publisher
	// TempDir holds spill files and tiles before upload, in a private
	// directory removed when Run returns. Default os.TempDir().
	TempDir string
	// MemoryBudget bounds the bytes of features buffered in memory before
	// they are spilled to TempDir. Default 256 MiB; at least 64 KiB.
	MemoryBudget int64
	// TileRows is the most rows a tile holds. Default 50,000.
	TileRows int
	// Progress receives progress reports: a progress bar when it is a
	// terminal, else JSON lines ({"event":"progress",...}) about every 2 s
	// and once at the end. Default nil: none.
	Progress io.Writer
	// Clock stamps the manifest's ingested_at. Default time.Now.
	Clock func() time.Time
	// CreatedBy is the manifest's created_by. Default "siteenv ingest".
	CreatedBy string

	// Repair makes invalid polygons valid (geo.MakeValid, as PostGIS
	// ST_MakeValid does) instead of rejecting them; Summary.Repaired
	// counts them. Default false: an invalid polygon is a reject, with the
	// reason and location geo.Validate gives.
	Repair bool
	// DropUnknownFields drops source columns outside the layer's field
	// schema, as the layer's "unknown_fields": "drop" does, whatever the
	// layer file says.
	DropUnknownFields bool
	// KeepUnknownFields keeps source columns outside the layer's field
	// schema as nullable string fields of the release under their own
	// names, as the layer's "unknown_fields": "keep" does, whatever the
	// layer file says (see keep.go). Run only: RunRows refuses it. At
	// most one of DropUnknownFields and KeepUnknownFields.
	KeepUnknownFields bool

	onSpill func() // tests: called when the sorter spills a run
}

// Summary reports an ingest; the CLI prints it as one JSON object.
type Summary struct {
	LayerID   string `json:"layer_id"`
	ReleaseID string `json:"release_id"`
	Features  int64  `json:"features"`
	Rejected  int64  `json:"rejected"`
	Tiles     int    `json:"tiles"`
	Bytes     int64  `json:"bytes"`
	// AlreadyPublished is true when the release already existed in the
	// store: re-ingesting identical input is a no-op.
	AlreadyPublished bool `json:"already_published"`
	// SameInput is true when the inputs' digest matched an earlier run's:
	// its release was published again without a row being read.
	SameInput bool `json:"same_input"`
	// Repaired counts features whose invalid polygon was made valid
	// (Options.Repair).
	Repaired int64 `json:"repaired"`
	// DroppedFields lists the source columns dropped as outside the
	// schema; RenamedFields the columns renamed by field_map (source ->
	// field).
	DroppedFields []string          `json:"dropped_fields,omitempty"`
	RenamedFields map[string]string `json:"renamed_fields,omitempty"`
	// KeptFields lists the source columns kept as string fields of the
	// release (unknown_fields "keep"), in source order.
	KeptFields   []string `json:"kept_fields,omitempty"`
	RejectsFile  string   `json:"rejects_file,omitempty"`
	ElapsedS     float64  `json:"elapsed_s"`
	FeaturesPerS float64  `json:"features_per_s"`
}

// Row is one source feature before validation (readers and generators
// produce these).
type Row struct {
	File    string // source name, for rejects and default ids
	Row     int64  // 1-based position in File
	Feature tiles.Feature
	Err     error // a per-row parse error: the row is rejected with this reason
}

var (
	// ErrTooManyRejects: more rows were rejected than Options.MaxRejects
	// allows. Nothing was written to the store or published.
	ErrTooManyRejects = errors.New("ingest: too many rejected rows")
	// ErrNoFeatures: the input held no valid feature, so there is no
	// release to publish.
	ErrNoFeatures = errors.New("ingest: no valid features in the input")
)

// FileError is a problem with a whole input file (unreadable, truncated,
// not the format its extension says, unsupported CRS...). Nothing is
// published.
type FileError struct {
	File string
	Err  error
}

func (e *FileError) Error() string { return e.File + ": " + e.Err.Error() }
func (e *FileError) Unwrap() error { return e.Err }

// Defaults.
const (
	DefaultMaxVertices  = 1_000_000
	DefaultMemoryBudget = 256 << 20
	DefaultTileRows     = 50_000
	DefaultCreatedBy    = "siteenv ingest"
	minMemoryBudget     = 64 << 10
)

// config is Options with defaults filled in and derived state.
type config struct {
	Options
	crs        geo.CRS
	crsGiven   bool              // SourceCRS was set: a file naming another CRS is an error
	own        tiles.FieldSchema // the layer's own fields: source columns are matched to these
	schema     tiles.FieldSchema // the release's: own plus the kept columns
	kept       []string          // columns kept as string fields, in source order
	allowed    map[string]bool
	idInSchema bool
	workers    int
	fields     *fieldPolicy
}

// WithDefaults returns o with every zero field set to its default.
func (o Options) WithDefaults() Options {
	if o.MaxVertices == 0 {
		o.MaxVertices = DefaultMaxVertices
	}
	if o.MemoryBudget == 0 {
		o.MemoryBudget = DefaultMemoryBudget
	}
	if o.TileRows == 0 {
		o.TileRows = DefaultTileRows
	}
	if o.TempDir == "" {
		o.TempDir = os.TempDir()
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if strings.TrimSpace(o.CreatedBy) == "" {
		o.CreatedBy = DefaultCreatedBy
	}
	return o
}

// validate reports the first field of filled options that is missing or
// out of range.
func (o Options) validate() error {
	switch {
	case o.Layer == nil:
		return errors.New("ingest: Options.Layer is required")
	case o.Store == nil:
		return errors.New("ingest: Options.Store is required")
	case o.MaxRejects < 0:
		return errors.New("ingest: MaxRejects must not be negative")
	case o.MaxVertices < 0:
		return errors.New("ingest: MaxVertices must not be negative")
	case o.MemoryBudget < 0:
		return errors.New("ingest: MemoryBudget must not be negative")
	case o.TileRows < 0:
		return errors.New("ingest: TileRows must not be negative")
	case o.DropUnknownFields && o.KeepUnknownFields:
		return errors.New("ingest: DropUnknownFields and KeepUnknownFields exclude each other")
	}
	return nil
}

// config fills o's defaults, validates it and derives the run's state.
func (o Options) config() (*config, error) {
	o = o.WithDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	c := &config{Options: o}
	c.schema = o.Layer.Schema
	if c.schema == nil {
		s, err := tiles.ParseFieldSchema(o.Layer.FieldSchema)
		if err != nil {
			return nil, fmt.Errorf("ingest: layer %s: %w", o.Layer.LayerID, err)
		}
		c.schema = s
	}
	c.own = c.schema
	crs := strings.TrimSpace(o.SourceCRS)
	if crs == "" {
		crs = "OGC:CRS84"
	}
	var err error
	if c.crs, err = geo.ParseSourceCRS(crs); err != nil {
		return nil, fmt.Errorf("ingest: source CRS: %w", err)
	}
	c.crsGiven = strings.TrimSpace(o.SourceCRS) != ""
	c.MemoryBudget = max(c.MemoryBudget, minMemoryBudget)
	c.allowed = map[string]bool{}
	types := o.Layer.GeometryTypes
	if len(types) == 0 {
		types = GeometryTypes
	}
	for _, t := range types {
		c.allowed[t] = true
	}
	if c.IDProperty != "" {
		_, c.idInSchema = c.schema.Lookup(c.IDProperty)
	}
	c.workers = max(1, runtime.GOMAXPROCS(0))
	c.fields = newFieldPolicy(c.schema, o.Layer.FieldMap, o.unknownPolicy() == UnknownFieldsDrop)
	return c, nil
}

// Run ingests files as a new release of opt.Layer: it reads and validates
// every feature, reprojects it to CRS84, writes GeoParquet tiles and the
// manifest to opt.Store, and publishes the release with opt.Publisher.
// The file format follows the extension (case-insensitive): .geojson and
// .json (a FeatureCollection), .ndjson, .geojsonl and .jsonl
// (newline-delimited features), .geojsons (RFC 8142 text sequence), .csv
// (a WKT column or longitude/latitude columns), .parquet and .geoparquet.
//
// Rows that fail validation are rejected (counted, and written to
// opt.RejectsPath); beyond opt.MaxRejects, Run fails with
// ErrTooManyRejects. A problem with a whole file is a *FileError. In both
// cases nothing is written to the store. Identical input gives the same
// release id; when that release already exists Run reports
// AlreadyPublished and changes nothing in the store (Publish is still
// called: the ledger side is idempotent).
func Run(ctx context.Context, opt Options, files ...string) (Summary, error) {
	cfg, err := opt.config()
	if err != nil {
		return Summary{}, err
	}
	if len(files) == 0 {
		return Summary{}, errors.New("ingest: no input files")
	}
	inputs := make([]input, len(files))
	var total int64
	for i, name := range files {
		format, err := formatOf(name)
		if err != nil {
			return Summary{}, &FileError{File: name, Err: err}
		}
		st, err := os.Stat(name)
		if err != nil {
			return Summary{}, &FileError{File: name, Err: err}
		}
		if st.IsDir() {
			return Summary{}, &FileError{File: name, Err: errors.New("is a directory")}
		}
		inputs[i] = input{name: name, format: format, size: st.Size()}
		total += st.Size()
	}
	start := time.Now()
	digest, err := inputDigest(cfg, files)
	if err != nil {
		return Summary{}, &FileError{File: files[0], Err: err}
	}
	if sum, ok, err := replayDigest(ctx, cfg, digest); err != nil || ok {
		sum.ElapsedS = time.Since(start).Seconds()
		return sum, err
	}
	if cfg.unknownPolicy() == UnknownFieldsKeep {
		if err := cfg.keepColumns(ctx, inputs); err != nil {
			return Summary{LayerID: cfg.Layer.LayerID}, err
		}
	}
	sum, err := run(ctx, cfg, total, func(ctx context.Context, f *feeder) error {
		for _, in := range inputs {
			if err := readFile(ctx, cfg, in, f); err != nil {
				var fe *FileError
				if errors.As(err, &fe) || errors.Is(err, context.Canceled) || errors.Is(err, errStopped) {
					return err
				}
				return &FileError{File: in.name, Err: err}
			}
		}
		return nil
	})
	// The time is the whole run's: the digest and the kept columns' pass too.
	if sum.ElapsedS = time.Since(start).Seconds(); sum.ElapsedS > 0 {
		sum.FeaturesPerS = float64(sum.Features) / sum.ElapsedS
	}
	if err == nil && sum.Rejected == 0 {
		err = recordDigest(ctx, cfg, digest, sum)
	}
	return sum, err
}

// RunRows is Run over an in-process feature source (used by the synthetic
// demo generator): src calls yield for each row, stopping if yield returns
// an error. Feature geometries are in opt.SourceCRS; they are copied before
// being reprojected, so src may reuse them after yield returns.
func RunRows(ctx context.Context, opt Options, src func(yield func(Row) error) error) (Summary, error) {
	cfg, err := opt.config()
	if err != nil {
		return Summary{}, err
	}
	if cfg.unknownPolicy() == UnknownFieldsKeep {
		return Summary{}, errors.New("ingest: keeping unknown fields needs the columns before the rows: use Run with files")
	}
	return run(ctx, cfg, -1, func(ctx context.Context, f *feeder) error {
		sources := map[string]*source{}
		return src(func(r Row) error {
			s := sources[r.File]
			if s == nil {
				name := r.File
				if name == "" {
					name = "rows"
				}
				s = &source{name: name, base: filepath.Base(name), crs: cfg.crs, clone: !cfg.crs.IsGeographic()}
				sources[r.File] = s
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if r.Err != nil {
				return f.add(item{src: s, row: r.Row, kind: kindReject, reason: r.Err.Error()})
			}
			return f.add(item{src: s, row: r.Row, kind: kindFeature, feat: r.Feature})
		})
	})
}

// run is the ingest: read (src) -> validate -> sort -> tile -> publish.
func run(ctx context.Context, cfg *config, totalBytes int64, src func(context.Context, *feeder) error) (sum Summary, err error) {
	start := time.Now()
	sum.LayerID = cfg.Layer.LayerID
	prog := startProgress(cfg.Progress, totalBytes, start)
	defer func() {
		sum.ElapsedS = time.Since(start).Seconds()
		if sum.ElapsedS > 0 {
			sum.FeaturesPerS = float64(sum.Features) / sum.ElapsedS
		}
		prog.finish()
	}()

	tmp, err := os.MkdirTemp(cfg.TempDir, "siteenv-ingest-")
	if err != nil {
		return sum, fmt.Errorf("ingest: temp dir: %w", err)
	}
	defer os.RemoveAll(tmp)

	rejects := &rejectLog{path: cfg.RejectsPath}
	defer func() {
		if cerr := rejects.close(); cerr != nil && err == nil {
			err = cerr
		}
		if rejects.n > 0 && cfg.RejectsPath != "" {
			sum.RejectsFile = cfg.RejectsPath
		}
	}()

	srt := newSorter(tmp, cfg.MemoryBudget)
	srt.onSpill = cfg.onSpill
	features, rejected, err := read(ctx, cfg, srt, rejects, prog, src, &sum.Repaired)
	sum.Features, sum.Rejected = features, rejected
	sum.DroppedFields, sum.RenamedFields = cfg.fields.report()
	sum.KeptFields = cfg.kept
	if err != nil {
		return sum, err
	}
	if rejected > cfg.MaxRejects {
		return sum, fmt.Errorf("%w: %d rejected, more than the %d allowed (first: %s)", ErrTooManyRejects, rejected, cfg.MaxRejects, rejects.first)
	}
	if features == 0 {
		return sum, ErrNoFeatures
	}

	prog.setPhase(phaseTiles)
	outs, err := writeTiles(ctx, cfg, srt, tmp, prog)
	if err != nil {
		return sum, err
	}
	m, already, err := publish(ctx, cfg, outs)
	if err != nil {
		return sum, err
	}
	sum.ReleaseID = m.ReleaseID
	sum.AlreadyPublished = already
	sum.Tiles = len(m.Tiles)
	for _, t := range m.Tiles {
		sum.Bytes += t.Bytes
	}
	return sum, nil
}
