package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"siteenv/ledger/pgembed"
)

// ErrNoPostGIS reports a PostgreSQL without the PostGIS extension.
var ErrNoPostGIS = errors.New("bench: PostGIS is not installed for the machine's PostgreSQL: run scripts/install-bench-tools.sh")

// sharedBuffersMiB is the buffer cache postgisSettings give PostgreSQL.
func sharedBuffersMiB(features int64) int64 { return min(max(features>>10, 128), 4096) }

// postgisSettings tune the baseline the way a careful operator would for
// a read-mostly spatial workload: the whole dataset in shared buffers when
// it fits (about 650 bytes a feature on disk at the medium scale, so 1 KiB
// a feature, 128 MiB to 4 GiB), no JIT (it only adds compile time to
// sub-second queries), SSD-like random page cost, room to build indexes.
// Applied with ALTER SYSTEM and a restart.
func postgisSettings(features int64) [][2]string {
	sb := sharedBuffersMiB(features)
	return [][2]string{
		{"shared_buffers", fmt.Sprintf("%dMB", sb)},
		{"effective_cache_size", "8GB"},
		{"work_mem", "64MB"},
		{"maintenance_work_mem", "1GB"},
		{"max_wal_size", "8GB"},
		{"random_page_cost", "1.1"},
		{"jit", "off"},
		// The statement's generic plan prunes partitions at start-up, so
		// planning every execution (what "auto" keeps doing, as the
		// generic plan's estimate counts every partition) is overhead.
		{"plan_cache_mode", "force_generic_plan"},
	}
}

// The baseline schema: one table partitioned by layer (so a query touches
// only the GiST indexes of the layers it asks for, as one table per layer
// would), geography column, GiST index per partition.
const (
	postgisTable  = "bench_feature"
	postgisCreate = `CREATE TABLE bench_feature (layer_id text NOT NULL, id text NOT NULL, geog geography NOT NULL)
		PARTITION BY LIST (layer_id)`
	// postgisQuery is the statement a query runs, prepared once per layer
	// count k: geodesic distance on the spheroid (use_spheroid true), as
	// the engine measures. The layer ids are k parameters rather than one
	// array because PostgreSQL prunes partitions of a generic plan at
	// executor start-up only for a list of parameters (= ANY($1) scans
	// every partition's index).
	postgisQuery = `SELECT layer_id, id FROM bench_feature
		WHERE layer_id IN (%s) AND ST_DWithin(geog, $1::bytea::geography, $2::float8, true)`
	// postgisFeature fetches one feature and PostGIS's own distance, to
	// explain a mismatch.
	postgisFeatureName = "bench_feature_get"
	postgisFeature     = `SELECT ST_AsBinary(geog), ST_Distance(geog, $3::bytea::geography, true)
		FROM bench_feature WHERE layer_id = $1 AND id = $2`
	// postgisPrewarm loads every partition, its TOAST table (large
	// geographies live there) and all their indexes into shared buffers.
	postgisPrewarm = `WITH parts AS (SELECT inhrelid AS oid FROM pg_inherits WHERE inhparent = 'bench_feature'::regclass),
		rels AS (SELECT oid FROM parts
			UNION ALL SELECT c.reltoastrelid FROM pg_class c JOIN parts USING (oid) WHERE c.reltoastrelid <> 0),
		everything AS (SELECT oid FROM rels
			UNION ALL SELECT i.indexrelid FROM pg_index i JOIN rels r ON i.indrelid = r.oid)
		SELECT coalesce(sum(pg_prewarm(oid)), 0)::bigint FROM everything`
	postgisSize = `SELECT coalesce(sum(pg_total_relation_size(inhrelid)), 0)::bigint
		FROM pg_inherits WHERE inhparent = 'bench_feature'::regclass`
)

// postgis is the baseline: a throwaway cluster with the dataset loaded.
type postgis struct {
	cluster  *pgembed.Cluster
	dir      string
	log      *slog.Logger
	version  string // PostGIS version
	settings [][2]string
	conns    []*pgx.Conn
	// subdivided: queries run on the subdivided table (heavy.go).
	subdivided bool

	loadSeconds  float64 // COPY and index build, wall
	copySeconds  float64 // summed over layers
	indexSeconds float64 // summed over layers
	bytes        int64   // tables, TOAST and indexes
}

// startPostGIS starts an ephemeral cluster under dir (its parent created
// by the caller, traversable by the postgres user), tunes it for a dataset
// of that many features and creates the PostGIS extension. Close stops it.
func startPostGIS(ctx context.Context, dir string, features int64, log *slog.Logger) (*postgis, error) {
	pg := &postgis{dir: dir, log: log, settings: postgisSettings(features)}
	if err := pg.start(ctx); err != nil {
		return nil, err
	}
	conn, err := pg.connect(ctx)
	if err != nil {
		pg.Close(ctx)
		return nil, err
	}
	for _, s := range pg.settings {
		// ALTER SYSTEM cannot take parameters; the values are constants.
		if _, err := conn.Exec(ctx, fmt.Sprintf("ALTER SYSTEM SET %s = '%s'", s[0], s[1])); err != nil {
			conn.Close(ctx)
			pg.Close(ctx)
			return nil, fmt.Errorf("bench: postgres: set %s: %w", s[0], err)
		}
	}
	conn.Close(ctx)
	// shared_buffers needs a restart.
	if err := pg.cluster.Stop(ctx); err != nil {
		return nil, fmt.Errorf("bench: postgres restart: %w", err)
	}
	if err := pg.start(ctx); err != nil {
		return nil, err
	}
	if conn, err = pg.connect(ctx); err != nil {
		pg.Close(ctx)
		return nil, err
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_available_extensions WHERE name = 'postgis'`).Scan(&n); err != nil {
		pg.Close(ctx)
		return nil, fmt.Errorf("bench: postgres: %w", err)
	}
	if n == 0 {
		pg.Close(ctx)
		return nil, ErrNoPostGIS
	}
	for _, stmt := range []string{"CREATE EXTENSION IF NOT EXISTS postgis", "CREATE EXTENSION IF NOT EXISTS pg_prewarm"} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			pg.Close(ctx)
			return nil, fmt.Errorf("bench: postgres: %s: %w", stmt, err)
		}
	}
	if err := conn.QueryRow(ctx, `SELECT postgis_lib_version()`).Scan(&pg.version); err != nil {
		pg.Close(ctx)
		return nil, fmt.Errorf("bench: postgis version: %w", err)
	}
	return pg, nil
}

func (pg *postgis) start(ctx context.Context) error {
	c, err := pgembed.Start(ctx, pg.dir, pgembed.Options{Database: "bench", Logger: pg.log, Ephemeral: true})
	if err != nil {
		return fmt.Errorf("bench: start PostgreSQL: %w", err)
	}
	pg.cluster = c
	return nil
}

// connect opens a connection that knows the geography type: COPY sends
// its values in binary, and geography's binary input is WKB, so pgx may
// pass WKB bytes through as it does bytea.
func (pg *postgis) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.Connect(ctx, pg.cluster.DSN("bench"))
	if err != nil {
		return nil, fmt.Errorf("bench: connect to PostgreSQL: %w", err)
	}
	var oid uint32
	err = conn.QueryRow(ctx, `SELECT oid FROM pg_type WHERE typname = 'geography'`).Scan(&oid)
	if err == nil {
		conn.TypeMap().RegisterType(&pgtype.Type{Name: "geography", OID: oid, Codec: pgtype.ByteaCodec{}})
	} else if !errors.Is(err, pgx.ErrNoRows) {
		conn.Close(ctx)
		return nil, fmt.Errorf("bench: postgres: %w", err)
	}
	return conn, nil
}

// Close closes the connections and stops the cluster.
func (pg *postgis) Close(ctx context.Context) {
	for _, c := range pg.conns {
		c.Close(ctx)
	}
	pg.conns = nil
	if pg.cluster != nil {
		if err := pg.cluster.Stop(context.WithoutCancel(ctx)); err != nil {
			pg.log.Warn("bench: stop PostgreSQL", "err", err)
		}
		pg.cluster = nil
	}
}
