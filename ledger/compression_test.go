package ledger_test

import (
	"context"
	"testing"

	"siteenv/ledger/ledgertest"
)

// TestLargeValuesCompressWithLZ4: every column the ledger writes large
// values to on the request path or reads on it often (geometries, stored
// responses, outcomes, evidence, coverage) compresses with lz4, which
// compresses a 240 KB geometry in about a fifth of pglz's time (this
// machine's PostgreSQL is built with lz4; one without keeps pglz, and the
// migrations do not fail).
func TestLargeValuesCompressWithLZ4(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := rawConn(t, ledgertest.DSN(t))
	for _, c := range [][2]string{
		{"sites", "geometry"}, {"queries", "site_geometry"}, {"parcels", "geometry"}, {"report_revisions", "evidence"},
		{"layers", "coverage"}, {"releases", "coverage"}, {"idempotency", "body"}, {"queries", "outcome"},
	} {
		var method string
		if err := conn.QueryRow(ctx, `SELECT attcompression::text FROM pg_attribute WHERE attrelid = $1::regclass AND attname = $2`,
			c[0], c[1]).Scan(&method); err != nil {
			t.Fatal(err)
		}
		if method != "l" {
			t.Errorf("%s.%s compression %q, want lz4 (l)", c[0], c[1], method)
		}
	}
}
