package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"siteenv/tiles"
)

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
	// UNLOGGED: the baseline is loaded once and thrown away, so its load
	// writes no WAL (COPY's rows and the GiST build's pages were written
	// twice); queries read the same pages either way.
	create := fmt.Sprintf("CREATE UNLOGGED TABLE %s PARTITION OF %s FOR VALUES IN (%s)", part, postgisTable, quoteLiteral(l.id))
	if _, err := c.Exec(ctx, "SET synchronous_commit = off"); err != nil {
		return 0, 0, err
	}
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
