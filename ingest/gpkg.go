package ingest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/paulmach/orb"
	_ "modernc.org/sqlite" // GeoPackages are SQLite files; pure Go keeps the static binary

	"siteenv/geo"
	"siteenv/tiles"
)

// readGeoPackage streams the features of one feature table of a GeoPackage
// (OGC 12-128r18) into f: the table named by Options.Table, or the only
// one. The CRS comes from gpkg_spatial_ref_sys.
func readGeoPackage(ctx context.Context, cfg *config, in input, src *source, f *feeder) error {
	if in.size == 0 {
		return errEmptyFile
	}
	db, conn, err := openGeoPackage(ctx, in.name)
	if err != nil {
		return err
	}
	defer db.Close()
	defer conn.Close()
	table, geomCol, err := gpkgTable(ctx, conn, cfg.Table)
	if err != nil {
		return err
	}
	var srsID int64
	if err := conn.QueryRowContext(ctx, `SELECT srs_id FROM gpkg_geometry_columns WHERE table_name = ?`, table).Scan(&srsID); err != nil {
		return fmt.Errorf("table %q: no row in gpkg_geometry_columns: %v", table, err)
	}
	named, fileCRS, err := gpkgCRS(ctx, conn, srsID)
	if err != nil {
		return err
	}
	if src.crs, err = cfg.reconcileCRS("gpkg_spatial_ref_sys", named, fileCRS); err != nil {
		return err
	}
	if !named && !cfg.crsGiven {
		var minX, minY, maxX, maxY sql.NullFloat64
		_ = conn.QueryRowContext(ctx, `SELECT min_x, min_y, max_x, max_y FROM gpkg_contents WHERE table_name = ?`, table).Scan(&minX, &minY, &maxX, &maxY)
		if !minX.Valid || !lonLatBox(minX.Float64, minY.Float64, maxX.Float64, maxY.Float64) {
			return &MissingCRSError{What: fmt.Sprintf("srs_id %d of table %q is undefined", srsID, table)}
		}
	}

	// Columns: the integer primary key is the row number; the others are
	// properties, mapped to the layer's fields as for a Shapefile.
	cols, pk, err := gpkgColumns(ctx, conn, table, geomCol)
	if err != nil {
		return err
	}
	var total int64
	_ = conn.QueryRowContext(ctx, `SELECT count(*) FROM `+quoteIdent(table)).Scan(&total)
	sel := []string{quoteIdent(geomCol)}
	order := "rowid"
	if pk != "" {
		sel = append(sel, quoteIdent(pk))
		order = quoteIdent(pk)
	} else {
		sel = append(sel, "rowid")
	}
	props := make([]string, len(cols))
	for i, c := range cols {
		sel = append(sel, quoteIdent(c.name))
		props[i] = matchField(c.name, cfg.own, cfg.IDProperty)
	}
	rows, err := conn.QueryContext(ctx, `SELECT `+strings.Join(sel, ", ")+` FROM `+quoteIdent(table)+` ORDER BY `+order)
	if err != nil {
		return fmt.Errorf("table %q: %v", table, err)
	}
	defer rows.Close()
	vals := make([]any, len(sel))
	ptrs := make([]any, len(sel))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var n int64
	for rows.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := rows.Scan(ptrs...); err != nil {
			return fmt.Errorf("table %q: %v", table, err)
		}
		n++
		if total > 0 && n%1024 == 0 {
			f.read.Add(in.size * 1024 / total)
		}
		row, _ := vals[1].(int64)
		if row == 0 {
			row = n
		}
		blob, _ := vals[0].([]byte)
		if vals[0] == nil {
			if err := f.add(item{src: src, row: row, kind: kindReject, reason: badGeom("", "geometry is null").Error()}); err != nil {
				return err
			}
			continue
		}
		g, gerr := DecodeGeoPackageGeometry(blob, cfg.MaxVertices)
		if gerr != nil {
			if err := f.add(item{src: src, row: row, kind: kindReject, reason: gerr.Error()}); err != nil {
				return err
			}
			continue
		}
		p := make(map[string]any, len(cols))
		for i, c := range cols {
			p[props[i]] = c.value(vals[2+i])
		}
		if err := f.add(item{src: src, row: row, kind: kindFeature, feat: tiles.Feature{Geometry: g, Properties: p}}); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("table %q: %v", table, err)
	}
	return nil
}

// openGeoPackage opens a GeoPackage read-only on one connection.
func openGeoPackage(ctx context.Context, name string) (*sql.DB, *sql.Conn, error) {
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: name}).EscapedPath()+"?mode=ro")
	if err != nil {
		return nil, nil, err
	}
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("not a readable GeoPackage: %w", err)
	}
	return db, conn, nil
}

// gpkgTable returns the feature table to read (want, or the only one) and
// its geometry column.
func gpkgTable(ctx context.Context, conn *sql.Conn, want string) (table, geomCol string, err error) {
	tables, err := gpkgFeatureTables(ctx, conn)
	if err != nil {
		return "", "", err
	}
	table = want
	switch {
	case table != "":
		found := false
		for _, t := range tables {
			found = found || t == table
		}
		if !found {
			return "", "", fmt.Errorf("no feature table %q in the GeoPackage (it has: %s)", table, listOrNone(tables))
		}
	case len(tables) == 1:
		table = tables[0]
	case len(tables) == 0:
		return "", "", errors.New("the GeoPackage has no feature table")
	default:
		return "", "", fmt.Errorf("the GeoPackage has %d feature tables (%s): name one with --table", len(tables), strings.Join(tables, ", "))
	}
	if err := conn.QueryRowContext(ctx, `SELECT column_name FROM gpkg_geometry_columns WHERE table_name = ?`, table).Scan(&geomCol); err != nil {
		return "", "", fmt.Errorf("table %q: no row in gpkg_geometry_columns: %v", table, err)
	}
	return table, geomCol, nil
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func gpkgFeatureTables(ctx context.Context, conn *sql.Conn) ([]string, error) {
	rows, err := conn.QueryContext(ctx, `SELECT table_name FROM gpkg_contents WHERE data_type = 'features'`)
	if err != nil {
		return nil, fmt.Errorf("not a GeoPackage (no gpkg_contents): %v", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	sort.Strings(out)
	return out, rows.Err()
}

// gpkgCRS reads an srs_id's CRS. named is false for the undefined systems
// (-1 cartesian, 0 geographic) of the specification.
func gpkgCRS(ctx context.Context, conn *sql.Conn, srsID int64) (named bool, c geo.CRS, err error) {
	if srsID == -1 || srsID == 0 {
		return false, 0, nil
	}
	var org string
	var code int64
	var def sql.NullString
	if err := conn.QueryRowContext(ctx, `SELECT organization, organization_coordsys_id, definition FROM gpkg_spatial_ref_sys WHERE srs_id = ?`, srsID).
		Scan(&org, &code, &def); err != nil {
		return false, 0, fmt.Errorf("srs_id %d: not in gpkg_spatial_ref_sys: %v", srsID, err)
	}
	if strings.EqualFold(org, "EPSG") {
		c, err := geo.SourceCRSFromEPSG(int(code))
		if err != nil {
			return false, 0, fmt.Errorf("gpkg_spatial_ref_sys: %w", err)
		}
		return true, c, nil
	}
	if !def.Valid || strings.TrimSpace(def.String) == "" || strings.EqualFold(strings.TrimSpace(def.String), "undefined") {
		return false, 0, nil
	}
	c, err = geo.CRSFromWKT(def.String)
	if err != nil {
		return false, 0, fmt.Errorf("gpkg_spatial_ref_sys (%s:%d): %w", org, code, err)
	}
	return true, c, nil
}

type gpkgColumn struct {
	name string
	decl string // declared type, upper case
}

func gpkgColumns(ctx context.Context, conn *sql.Conn, table, geomCol string) ([]gpkgColumn, string, error) {
	rows, err := conn.QueryContext(ctx, `SELECT name, type, pk FROM pragma_table_info(?) ORDER BY cid`, table)
	if err != nil {
		return nil, "", fmt.Errorf("table %q: %v", table, err)
	}
	defer rows.Close()
	var cols []gpkgColumn
	var pks []string
	for rows.Next() {
		var name, typ string
		var pk int
		if err := rows.Scan(&name, &typ, &pk); err != nil {
			return nil, "", err
		}
		typ = strings.ToUpper(typ)
		switch {
		case name == geomCol:
		case pk > 0 && typ == "INTEGER":
			pks = append(pks, name)
		default:
			cols = append(cols, gpkgColumn{name: name, decl: typ})
		}
	}
	pk := ""
	if len(pks) == 1 {
		pk = pks[0]
	}
	return cols, pk, rows.Err()
}

// value converts a SQLite value by the column's declared GeoPackage type.
func (c gpkgColumn) value(v any) any {
	switch x := v.(type) {
	case int64:
		if c.decl == "BOOLEAN" {
			return x != 0
		}
		return x
	case time.Time:
		if c.decl == "DATE" {
			return x.UTC().Format(time.DateOnly)
		}
		return x.UTC().Format(time.RFC3339Nano)
	case []byte:
		if c.decl == "BLOB" {
			return x // refused by the schema
		}
		return string(x)
	}
	return v
}

// DecodeGeoPackageGeometry reads a GeoPackage geometry blob: the
// GeoPackageBinary header ("GP", version, flags, srs_id, optional
// envelope) and the WKB after it (geo.DecodeWKB). Empty geometries and the
// extended (non-standard type) form are refused. Never panics.
func DecodeGeoPackageGeometry(b []byte, maxVertices int) (orb.Geometry, error) {
	if len(b) < 8 || b[0] != 'G' || b[1] != 'P' {
		return nil, badGeom("", "not a GeoPackage geometry (no GP header)")
	}
	if b[2] != 0 {
		return nil, badGeom("", "GeoPackage geometry version %d is not supported", b[2])
	}
	flags := b[3]
	if flags&0x20 != 0 {
		return nil, badGeom("", "extended GeoPackage geometries are not supported")
	}
	if flags&0x10 != 0 {
		return nil, badGeom("", "geometry is empty")
	}
	var env int
	switch (flags >> 1) & 7 {
	case 0:
	case 1:
		env = 32
	case 2, 3:
		env = 48
	case 4:
		env = 64
	default:
		return nil, badGeom("", "bad envelope indicator %d", (flags>>1)&7)
	}
	if len(b) < 8+env {
		return nil, badGeom("", "GeoPackage geometry header is truncated")
	}
	g, err := geo.DecodeWKB(b[8+env:], maxVertices)
	if err != nil {
		return nil, badGeom("", "%v", err)
	}
	return g, nil
}
