// Package faultsuite holds no code: its tests are the fault suite. They build
// the real siteenv binary once, run it as separate processes against real
// PostgreSQL clusters and a file store, and attack it as a client and as a
// crash would: a seeded fuzz pass over every route of the OpenAPI document,
// the tenant-isolation matrix, kill -9 during concurrent purchases, database
// outages, a missing release tile, the embedded PostgreSQL's lifecycle, and
// (TestCluster) several replicas on one database and one S3 bucket
// (versitygw): shared state, limits and money exact across replicas, and a
// replica killed or stopped while its worker runs a query.
// Every response is validated against the OpenAPI document.
//
// It runs with the rest of the suite (`go test ./...`, `make test`) in well
// under three minutes on two cores; -faultsuite.seed replays a fuzz pass.
package faultsuite
