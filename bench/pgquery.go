package bench

import (
	"context"
	"fmt"
	"strings"
)

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
	rows, err := pg.conns[w].Query(ctx, pg.stmt(len(args)-2), args...)
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
