package tiles

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"regexp"
	"siteenv/store"
	"sort"
	"strings"
	"time"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/geojson"
)

// ManifestFormatVersion is the version of the manifest document format.
const ManifestFormatVersion = 1

// maxManifestBytes bounds the manifest size ReadManifest accepts.
const maxManifestBytes = 64 << 20

// Manifest describes one immutable release of a layer. It is written as
// releases/<layer_id>/<release_id>/manifest.json after all its tiles; a
// release exists once its manifest does. A Manifest is a plain value: safe
// to read concurrently, not to modify concurrently.
type Manifest struct {
	FormatVersion int    `json:"format_version"` // ManifestFormatVersion
	LayerID       string `json:"layer_id"`
	ReleaseID     string `json:"release_id"` // ReleaseID(m)
	// SchemaVersion versions the meaning of the layer's fields.
	SchemaVersion string             `json:"schema_version"`
	FieldSchema   FieldSchema        `json:"field_schema"`
	Units         map[string]*string `json:"units"` // field name -> unit or null
	Sources       []Source           `json:"sources"`
	Coverage      *geojson.Geometry  `json:"coverage"` // Polygon/MultiPolygon in CRS84, or null (unknown)
	FeatureCount  int64              `json:"feature_count"`
	BBox          *BBox              `json:"bbox"` // null when the release has no features
	CreatedBy     string             `json:"created_by"`
	IngestedAt    time.Time          `json:"ingested_at"`
	Tiles         []TileEntry        `json:"tiles"`
}

// Source is one provenance record of a release, as in the Layer resource.
// Dates are strings: YYYY-MM-DD or RFC 3339.
type Source struct {
	SourceVariantID   string  `json:"source_variant_id"`
	Scope             *string `json:"scope"`
	Provider          string  `json:"provider"`
	SourceURL         *string `json:"source_url"`
	SourcePublishedAt *string `json:"source_published_at"` // date or date-time
	SourceEffectiveAt *string `json:"source_effective_at"` // date or date-time
	RetrievedAt       *string `json:"retrieved_at"`        // date-time
	Licence           string  `json:"licence"`
	Attribution       string  `json:"attribution"`
	CoverageVerified  bool    `json:"coverage_verified"`
	APIApproved       bool    `json:"api_approved"`
	AgentApproved     bool    `json:"agent_approved"`
	ReportApproved    bool    `json:"report_approved"`
}

// BBox is [xmin, ymin, xmax, ymax] in CRS84.
type BBox [4]float64

// BoundToBBox converts an orb.Bound.
func BoundToBBox(b orb.Bound) BBox { return BBox{b.Min[0], b.Min[1], b.Max[0], b.Max[1]} }

// Bound converts to an orb.Bound.
func (b BBox) Bound() orb.Bound {
	return orb.Bound{Min: orb.Point{b[0], b[1]}, Max: orb.Point{b[2], b[3]}}
}

func (b BBox) valid() bool {
	for _, v := range b {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return b[0] <= b[2] && b[1] <= b[3]
}

// TileEntry describes one tile of a release.
type TileEntry struct {
	Key           string   `json:"key"` // full store key, TileKey(layer, release, name)
	BBox          BBox     `json:"bbox"`
	Rows          int64    `json:"rows"`
	Bytes         int64    `json:"bytes"`
	SHA256        string   `json:"sha256"`
	GeometryTypes []string `json:"geometry_types"`
}

// NewTileEntry records a tile written by WriteTile under key.
func NewTileEntry(key string, info TileInfo) TileEntry {
	return TileEntry{
		Key:           key,
		BBox:          BoundToBBox(info.BBox),
		Rows:          int64(info.Rows),
		Bytes:         info.Bytes,
		SHA256:        info.SHA256,
		GeometryTypes: append([]string(nil), info.GeometryTypes...),
	}
}

var (
	layerIDRE   = regexp.MustCompile(`^[a-z0-9][a-z0-9._:-]{0,159}$`)
	releaseIDRE = regexp.MustCompile(`^r_[0-9a-f]{32}$`)
	tileNameRE  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
	sha256RE    = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// ManifestKey is the store key of a release's manifest.
func ManifestKey(layerID, releaseID string) string {
	return "releases/" + layerID + "/" + releaseID + "/manifest.json"
}

// TileKey is the store key of a release's tile called name (without
// extension), e.g. TileKey("flood", "r_...", "000001") ends in
// "tiles/000001.parquet".
func TileKey(layerID, releaseID, name string) string {
	return "releases/" + layerID + "/" + releaseID + "/tiles/" + name + ".parquet"
}

// ReleasePrefix is the key prefix of everything in a release.
func ReleasePrefix(layerID, releaseID string) string {
	return "releases/" + layerID + "/" + releaseID + "/"
}

// ReleaseID derives a release's id from its content: "r_" and the first 32
// hex digits of the SHA-256 of the canonical JSON of the fields that give the
// release its meaning (format version, layer id, schema version, field
// schema, units, sources, coverage) and the sorted tile SHA-256s. Ingest
// time, creator, and the release id itself do not count, so re-ingesting
// identical input yields the same id.
func ReleaseID(m *Manifest) (string, error) {
	shas := make([]string, len(m.Tiles))
	for i, t := range m.Tiles {
		shas[i] = t.SHA256
	}
	sort.Strings(shas)
	units := m.Units
	if units == nil {
		units = map[string]*string{}
	}
	sources := m.Sources
	if sources == nil {
		sources = []Source{}
	}
	canon := struct {
		FormatVersion int                `json:"format_version"`
		LayerID       string             `json:"layer_id"`
		SchemaVersion string             `json:"schema_version"`
		FieldSchema   FieldSchema        `json:"field_schema"`
		Units         map[string]*string `json:"units"`
		Sources       []Source           `json:"sources"`
		Coverage      *geojson.Geometry  `json:"coverage"`
		TileSHA256s   []string           `json:"tile_sha256s"`
	}{m.FormatVersion, m.LayerID, m.SchemaVersion, m.FieldSchema, units, sources, m.Coverage, shas}
	if canon.FieldSchema == nil {
		canon.FieldSchema = FieldSchema{}
	}
	b, err := json.Marshal(canon)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalidManifest, err)
	}
	sum := sha256.Sum256(b)
	return "r_" + hex.EncodeToString(sum[:16]), nil
}

// Validate checks a manifest: identifiers, field schema, units, sources,
// coverage, tiles (keys inside the release, sizes, hashes), that
// feature_count and bbox agree with the tiles, and that release_id is
// ReleaseID(m). Errors match ErrInvalidManifest.
func (m *Manifest) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidManifest, fmt.Sprintf(format, args...))
	}
	if m.FormatVersion != ManifestFormatVersion {
		return bad("format_version %d is not %d", m.FormatVersion, ManifestFormatVersion)
	}
	if !layerIDRE.MatchString(m.LayerID) {
		return bad("layer_id %q does not match %s", m.LayerID, layerIDRE)
	}
	if !releaseIDRE.MatchString(m.ReleaseID) {
		return bad("release_id %q does not match %s", m.ReleaseID, releaseIDRE)
	}
	if strings.TrimSpace(m.SchemaVersion) == "" {
		return bad("schema_version is empty")
	}
	if m.FieldSchema == nil {
		return bad("field_schema is missing")
	}
	if m.Units == nil {
		return bad("units is missing")
	}
	for name := range m.Units {
		if _, ok := m.FieldSchema.Lookup(name); !ok {
			return bad("units names %q, which is not a field", name)
		}
	}
	if len(m.Sources) == 0 {
		return bad("sources is empty")
	}
	for i, s := range m.Sources {
		if err := s.validate(); err != nil {
			return bad("sources[%d]: %v", i, err)
		}
	}
	if m.Coverage != nil {
		switch g := m.Coverage.Geometry().(type) {
		case orb.Polygon, orb.MultiPolygon:
			if empty(g) {
				return bad("coverage is empty")
			}
			if _, err := tileGeometry(g); err != nil {
				return bad("coverage: %v", err)
			}
		default:
			return bad("coverage must be a Polygon or MultiPolygon, not %s", m.Coverage.Type)
		}
	}
	if strings.TrimSpace(m.CreatedBy) == "" {
		return bad("created_by is empty")
	}
	if m.IngestedAt.IsZero() {
		return bad("ingested_at is missing")
	}
	var count int64
	var box *BBox
	keys := map[string]bool{}
	prefix := ReleasePrefix(m.LayerID, m.ReleaseID) + "tiles/"
	if m.Tiles == nil {
		return bad("tiles is missing")
	}
	for i, t := range m.Tiles {
		name, ok := strings.CutPrefix(t.Key, prefix)
		name, ok2 := strings.CutSuffix(name, ".parquet")
		if !ok || !ok2 || !tileNameRE.MatchString(name) {
			return bad("tiles[%d].key %q is not %s", i, t.Key, TileKey(m.LayerID, m.ReleaseID, "<name>"))
		}
		if keys[t.Key] {
			return bad("tiles[%d].key %q repeats", i, t.Key)
		}
		keys[t.Key] = true
		if t.Rows < 1 || t.Bytes < 1 {
			return bad("tiles[%d]: rows and bytes must be positive", i)
		}
		if !sha256RE.MatchString(t.SHA256) {
			return bad("tiles[%d].sha256 is not 64 lowercase hex digits", i)
		}
		if !t.BBox.valid() {
			return bad("tiles[%d].bbox is not a valid box", i)
		}
		if len(t.GeometryTypes) == 0 {
			return bad("tiles[%d].geometry_types is empty", i)
		}
		for _, gt := range t.GeometryTypes {
			if !geometryTypeRE.MatchString(gt) {
				return bad("tiles[%d]: bad geometry type %q", i, gt)
			}
		}
		if count > math.MaxInt64-t.Rows {
			return bad("feature count overflows")
		}
		count += t.Rows
		if box == nil {
			b := t.BBox
			box = &b
		} else {
			u := BoundToBBox(box.Bound().Union(t.BBox.Bound()))
			box = &u
		}
	}
	if m.FeatureCount != count {
		return bad("feature_count %d is not the sum of tile rows %d", m.FeatureCount, count)
	}
	if (box == nil) != (m.BBox == nil) || (box != nil && *box != *m.BBox) {
		return bad("bbox does not match the union of the tile bboxes")
	}
	id, err := ReleaseID(m)
	if err != nil {
		return err
	}
	if id != m.ReleaseID {
		return bad("release_id %s does not match the content (%s)", m.ReleaseID, id)
	}
	return nil
}

func (s Source) validate() error {
	if strings.TrimSpace(s.SourceVariantID) == "" {
		return errors.New("source_variant_id is empty")
	}
	if strings.TrimSpace(s.Provider) == "" {
		return errors.New("provider is empty")
	}
	if strings.TrimSpace(s.Licence) == "" {
		return errors.New("licence is empty")
	}
	if strings.TrimSpace(s.Attribution) == "" {
		return errors.New("attribution is empty")
	}
	if s.SourceURL != nil {
		u, err := url.Parse(*s.SourceURL)
		if err != nil || u.Scheme == "" || !u.IsAbs() {
			return fmt.Errorf("source_url %q is not an absolute URI", *s.SourceURL)
		}
	}
	for _, d := range []struct {
		name    string
		v       *string
		dateOK  bool
		timeReq bool
	}{
		{"source_published_at", s.SourcePublishedAt, true, false},
		{"source_effective_at", s.SourceEffectiveAt, true, false},
		{"retrieved_at", s.RetrievedAt, false, true},
	} {
		if d.v == nil {
			continue
		}
		_, errT := time.Parse(time.RFC3339Nano, *d.v)
		_, errD := time.Parse(time.DateOnly, *d.v)
		if errT != nil && !(d.dateOK && errD == nil) {
			if d.dateOK {
				return fmt.Errorf("%s %q is not a date or RFC 3339 date-time", d.name, *d.v)
			}
			return fmt.Errorf("%s %q is not an RFC 3339 date-time", d.name, *d.v)
		}
	}
	return nil
}

// ParseManifest decodes and validates a manifest strictly: unknown fields,
// trailing data and any Validate failure are errors matching
// ErrInvalidManifest.
func ParseManifest(data []byte) (*Manifest, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidManifest, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: trailing data after the manifest", ErrInvalidManifest)
	}
	if err := requireKeys(data); err != nil {
		return nil, err
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// requireKeys rejects manifests that omit a field (encoding/json would
// silently leave it zero).
func requireKeys(data []byte) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidManifest, err)
	}
	for _, k := range []string{"format_version", "layer_id", "release_id", "schema_version", "field_schema",
		"units", "sources", "coverage", "feature_count", "bbox", "created_by", "ingested_at", "tiles"} {
		if _, ok := top[k]; !ok {
			return fmt.Errorf("%w: missing %q", ErrInvalidManifest, k)
		}
	}
	var rest struct {
		Sources []map[string]json.RawMessage `json:"sources"`
		Tiles   []map[string]json.RawMessage `json:"tiles"`
	}
	if err := json.Unmarshal(data, &rest); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidManifest, err)
	}
	for i, s := range rest.Sources {
		for _, k := range []string{"source_variant_id", "scope", "provider", "source_url", "source_published_at",
			"source_effective_at", "retrieved_at", "licence", "attribution", "coverage_verified", "api_approved",
			"agent_approved", "report_approved"} {
			if _, ok := s[k]; !ok {
				return fmt.Errorf("%w: sources[%d]: missing %q", ErrInvalidManifest, i, k)
			}
		}
	}
	for i, t := range rest.Tiles {
		for _, k := range []string{"key", "bbox", "rows", "bytes", "sha256", "geometry_types"} {
			if _, ok := t[k]; !ok {
				return fmt.Errorf("%w: tiles[%d]: missing %q", ErrInvalidManifest, i, k)
			}
		}
	}
	return nil
}

// MarshalManifest returns the manifest's stored form (indented JSON ending in
// a newline) after validating it.
func MarshalManifest(m *Manifest) ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidManifest, err)
	}
	return append(b, '\n'), nil
}

// WriteManifest publishes a release: it fills in m.ReleaseID when empty,
// validates m, checks that every tile is already in the store with the
// recorded size, and writes the manifest. If the release was already
// published the error matches store.ErrExists (re-ingesting identical input is a
// no-op for the caller to recognise).
func WriteManifest(ctx context.Context, st store.Store, m *Manifest) error {
	if m.ReleaseID == "" {
		id, err := ReleaseID(m)
		if err != nil {
			return err
		}
		m.ReleaseID = id
	}
	data, err := MarshalManifest(m)
	if err != nil {
		return err
	}
	for _, t := range m.Tiles {
		info, err := st.Stat(ctx, t.Key)
		if err != nil {
			return fmt.Errorf("tiles: publish %s: tile %s: %w", m.ReleaseID, t.Key, err)
		}
		if info.Size != t.Bytes {
			return fmt.Errorf("%w: tile %s has %d bytes in the store, manifest says %d", ErrInvalidManifest, t.Key, info.Size, t.Bytes)
		}
	}
	key := ManifestKey(m.LayerID, m.ReleaseID)
	if err := st.Put(ctx, key, bytes.NewReader(data), int64(len(data))); err != nil {
		return fmt.Errorf("tiles: publish %s: %w", key, err)
	}
	return nil
}

// ReadManifest reads and strictly parses a release's manifest. A release
// that was never published (or is still being written) yields store.ErrNotExist.
func ReadManifest(ctx context.Context, st store.Store, layerID, releaseID string) (*Manifest, error) {
	if !layerIDRE.MatchString(layerID) || !releaseIDRE.MatchString(releaseID) {
		return nil, fmt.Errorf("%w: bad layer or release id", store.ErrInvalidKey)
	}
	key := ManifestKey(layerID, releaseID)
	obj, err := st.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	defer obj.Close()
	if obj.Size() > maxManifestBytes {
		return nil, fmt.Errorf("%w: %s is %d bytes (limit %d)", ErrInvalidManifest, key, obj.Size(), maxManifestBytes)
	}
	data := make([]byte, obj.Size())
	if n, err := obj.ReadAt(data, 0); err != nil && !(errors.Is(err, io.EOF) && n == len(data)) {
		return nil, fmt.Errorf("tiles: read %s: %w", key, err)
	}
	m, err := ParseManifest(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	if m.LayerID != layerID || m.ReleaseID != releaseID {
		return nil, fmt.Errorf("%w: %s holds %s/%s", ErrInvalidManifest, key, m.LayerID, m.ReleaseID)
	}
	return m, nil
}
