package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"siteenv/ledger/pgembed"
	"siteenv/tiles"
)

// ErrNoPostGIS reports a PostgreSQL without the PostGIS extension.
var ErrNoPostGIS = errors.New("bench: PostGIS is not installed for the machine's PostgreSQL: run scripts/install-bench-tools.sh")

// postgisSettings tune the baseline the way a careful operator would for
// a read-mostly spatial workload: the whole dataset in shared buffers when
// it fits (about 650 bytes a feature on disk at the medium scale, so 1 KiB
// a feature, 128 MiB to 4 GiB), no JIT (it only adds compile time to
// sub-second queries), SSD-like random page cost, room to build indexes.
// Applied with ALTER SYSTEM and a restart.
func postgisSettings(features int64) [][2]string {
	sb := min(max(features>>10, 128), 4096) // MiB
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
	cluster *pgembed.Cluster
	dir     string
	log     *slog.Logger
	version  string // PostGIS version
	settings [][2]string
	conns   []*pgx.Conn

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

// load copies every layer of ds into its own partition, builds the GiST
// indexes, analyses and warms the cache. Layers load on `workers`
// connections at once.
func (pg *postgis) load(ctx context.Context, ds *dataset, workers int) error {
	conn, err := pg.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, postgisCreate); err != nil {
		return fmt.Errorf("bench: postgres: create table: %w", err)
	}
	start := time.Now()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		work = make(chan int)
	)
	conns := make([]*pgx.Conn, 0, workers)
	for range workers {
		c, err := pg.connect(ctx)
		if err != nil {
			for _, c := range conns {
				c.Close(ctx)
			}
			return err
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close(ctx)
			for i := range work {
				cp, ix, err := pg.loadLayer(ctx, c, ds, i)
				mu.Lock()
				pg.copySeconds += cp
				pg.indexSeconds += ix
				if err != nil {
					errs = append(errs, fmt.Errorf("bench: postgres: layer %s: %w", ds.layers[i].id, err))
				}
				mu.Unlock()
			}
		}()
	}
	for i := range ds.layers {
		work <- i
	}
	close(work)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	pg.loadSeconds = time.Since(start).Seconds()
	if err := conn.QueryRow(ctx, postgisSize).Scan(&pg.bytes); err != nil {
		return fmt.Errorf("bench: postgres: size: %w", err)
	}
	var blocks int64
	if err := conn.QueryRow(ctx, postgisPrewarm).Scan(&blocks); err != nil {
		return fmt.Errorf("bench: postgres: prewarm: %w", err)
	}
	pg.log.Info("bench: PostGIS loaded", "features", ds.features, "seconds", round3(pg.loadSeconds),
		"bytes", pg.bytes, "prewarmed_blocks", blocks)
	return nil
}

// loadLayer copies layer i into partition bench_feature_<i>, indexes it
// and vacuums it (hint bits and statistics, so the first queries do not
// pay for them).
func (pg *postgis) loadLayer(ctx context.Context, c *pgx.Conn, ds *dataset, i int) (copySec, indexSec float64, err error) {
	l := ds.layers[i]
	part := fmt.Sprintf("%s_%d", postgisTable, i)
	create := fmt.Sprintf("CREATE TABLE %s PARTITION OF %s FOR VALUES IN (%s)", part, postgisTable, quoteLiteral(l.id))
	if _, err := c.Exec(ctx, create); err != nil {
		return 0, 0, err
	}
	start := time.Now()
	rows := make(chan []any, 1024)
	readErr := make(chan error, 1)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		defer close(rows)
		readErr <- ds.eachTile(rctx, l, func(t *tiles.Tile) error {
			for j := range t.Len() {
				select {
				case rows <- []any{l.id, t.IDs[j], t.WKB[j]}:
				case <-rctx.Done():
					return rctx.Err()
				}
			}
			return nil
		})
	}()
	n, err := c.CopyFrom(ctx, pgx.Identifier{part}, []string{"layer_id", "id", "geog"},
		pgx.CopyFromFunc(func() ([]any, error) {
			row, ok := <-rows
			if !ok {
				return nil, nil
			}
			return row, nil
		}))
	cancel()
	for range rows { // let the reader finish
	}
	if rerr := <-readErr; err == nil && rerr != nil && !errors.Is(rerr, context.Canceled) {
		err = rerr
	}
	if err != nil {
		return 0, 0, fmt.Errorf("copy: %w", err)
	}
	if n != l.manifest.FeatureCount {
		return 0, 0, fmt.Errorf("copy: %d rows for %d features", n, l.manifest.FeatureCount)
	}
	copySec = time.Since(start).Seconds()
	start = time.Now()
	if _, err := c.Exec(ctx, fmt.Sprintf("CREATE INDEX ON %s USING gist (geog)", part)); err != nil {
		return copySec, 0, fmt.Errorf("index: %w", err)
	}
	indexSec = time.Since(start).Seconds()
	if _, err := c.Exec(ctx, "VACUUM (ANALYZE) "+part); err != nil {
		return copySec, indexSec, fmt.Errorf("vacuum: %w", err)
	}
	return copySec, indexSec, nil
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// openQueryConns opens n connections with the query statements prepared
// for every layer count in qs.
func (pg *postgis) openQueryConns(ctx context.Context, n int, qs []query) error {
	conn0, err := pg.connect(ctx)
	if err != nil {
		return err
	}
	// The parent table's statistics, for the planner's row estimates.
	if _, err := conn0.Exec(ctx, "ANALYZE "+postgisTable); err != nil {
		conn0.Close(ctx)
		return fmt.Errorf("bench: postgres: analyze: %w", err)
	}
	conn0.Close(ctx)
	counts := map[int]bool{1: true} // 1: explain reruns one layer
	for _, q := range qs {
		counts[len(q.layers)] = true
	}
	for range n {
		c, err := pg.connect(ctx)
		if err != nil {
			return err
		}
		pg.conns = append(pg.conns, c)
		for k := range counts {
			if _, err := c.Prepare(ctx, queryName(k), querySQL(k)); err != nil {
				return fmt.Errorf("bench: postgres: prepare: %w", err)
			}
		}
		if _, err := c.Prepare(ctx, postgisFeatureName, postgisFeature); err != nil {
			return fmt.Errorf("bench: postgres: prepare: %w", err)
		}
	}
	return nil
}

func queryName(k int) string { return fmt.Sprintf("bench_dwithin_%d", k) }

func querySQL(k int) string {
	ps := make([]string, k)
	for i := range ps {
		ps[i] = fmt.Sprintf("$%d::text", i+3)
	}
	return fmt.Sprintf(postgisQuery, strings.Join(ps, ", "))
}

// query runs q's statement on connection w with args (site WKB, radius,
// then the layer ids, see queryArgs) and hands each (layer id, feature id)
// row to fn; the slices are valid only during the call.
func (pg *postgis) query(ctx context.Context, w int, args []any, fn func(layerID, id []byte)) error {
	rows, err := pg.conns[w].Query(ctx, queryName(len(args)-2), args...)
	if err != nil {
		return fmt.Errorf("bench: postgis query: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		v := rows.RawValues()
		fn(v[0], v[1])
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("bench: postgis query: %w", err)
	}
	return nil
}

// queryArgs are the statement's arguments for q restricted to layers.
func queryArgs(ds *dataset, q *query, layers []int) []any {
	args := []any{q.wkb, q.radius}
	for _, li := range layers {
		args = append(args, ds.layers[li].id)
	}
	return args
}

// feature returns a feature's WKB and PostGIS's distance from the site.
func (pg *postgis) feature(ctx context.Context, layerID, id string, site []byte) (wkbGeom []byte, dist float64, err error) {
	err = pg.conns[0].QueryRow(ctx, postgisFeatureName, layerID, id, site).Scan(&wkbGeom, &dist)
	if err != nil {
		return nil, 0, fmt.Errorf("bench: postgis feature %s/%s: %w", layerID, id, err)
	}
	return wkbGeom, dist, nil
}
