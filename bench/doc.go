// Package bench is siteenv's benchmark harness: synthetic data at scale, the
// spatial engine side by side with PostGIS, and the ingest pipeline side by
// side with ogr2ogr. `siteenv bench` drives it; its tests prove on a small
// dataset that the engine returns exactly the features PostGIS returns.
//
// DESIGN.md keeps pgx inside ledger/. This package is the one exception: its
// PostGIS baseline (a geography table with GiST indexes, loaded with COPY and
// queried with a prepared ST_DWithin statement) lives in a throwaway
// PostgreSQL cluster the harness starts itself with ledger/pgembed, and has
// nothing to do with the ledger's schema. Nothing in the service imports
// bench.
package bench
