# siteenv: `make run` serves the API with demo data; `make test` runs the whole suite.
GO       ?= go
BIN      := bin/siteenv
ADDR     ?= 127.0.0.1:8080
DATA_DIR ?= ./var
# Packages whose goroutines share memory run again under the race detector.
RACE_PKGS := ./api/... ./queries/... ./clock/... ./ledger/... ./engine/... ./jobs/... ./store/...
# Of those, the packages that run under the race detector only: all of them.
RACE_ONLY_PKGS := ./api/... ./queries/... ./clock/... ./ledger/... ./engine/... ./jobs/... ./store/...
# The tests of RACE_ONLY_PKGS that differ under the race detector, run without
# it as well (package:regexp, each `go test -run regexp package` in the plain
# phase). engine's tests that scale down under -race (raceEnabled: a test
# that does so belongs here) run at full size, and those that count a
# shard's bytes on one goroutine (skipUnderRace) run here only; jobs'
# TestReportSamples builds the demo data, about 7 x slower under -race, so it
# skips there and runs here.
PLAIN_RUN := ./engine:^(TestExactness|TestExactnessEdgeIndex|TestEdgeIndexMatchesPlain|TestEdgeIndexContains|TestShardEdgeIndexBytes|TestShardBytesPerVertex|TestConcurrentQueries|TestFeatureLimit)$$ \
	./jobs:^TestReportSamples$$
# Each Go fuzz target runs this many inputs in `make fuzz`, and TEST_FUZZTIME in
# `make test`, where the fuzz phase shares 2 cores with the tests and was the
# suite's last phase to end (its inputs were a fifth of the suite's CPU at
# 10000x): every target and oracle runs, on a quarter of the inputs.
# Counts, not durations: see scripts/fuzz.sh.
FUZZTIME ?= 20000x
TEST_FUZZTIME ?= 5000x

.DEFAULT_GOAL := help
.PHONY: help run build test lint docs walk bench tools fuzz

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  %-8s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## build the binary to bin/siteenv
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/siteenv

build-prod: ## build the production binary to bin/siteenv: without the bench harness (-tags nobench)
	$(GO) build -buildvcs=auto -tags nobench -o $(BIN) ./cmd/siteenv

run: build ## build, then serve on 127.0.0.1:8080 with the embedded database, file store and demo data
	$(BIN) serve --addr $(ADDR) --data-dir $(DATA_DIR) --demo

tools: ## install what the tests need (versitygw S3 server; PostGIS and GDAL for the benchmark baseline)
	./scripts/install-test-tools.sh
	./scripts/install-bench-tools.sh

# Every test runs: RACE_ONLY_PKGS under the race detector only (the same tests,
# with the detector on; running them plain as well cost the plain run of the
# largest packages, api and ledger, for no extra check), the rest without it,
# RACE_PKGS under it, and the tests of PLAIN_RUN without it. scripts/test.sh runs lint, the plain tests, the race
# tests and the fuzz targets at once, each phase's output printed when it ends.
test: tools ## the whole suite: vet, gofmt, every test (the fault suite in faultsuite/ among them), race detector, fuzz targets
	GO="$(GO)" MAKE="$(MAKE)" RACE_PKGS="$(RACE_PKGS)" RACE_ONLY_PKGS="$(RACE_ONLY_PKGS)" PLAIN_RUN='$(PLAIN_RUN)' \
	  FUZZTIME="$(or $(TEST_FUZZTIME),5000x)" ./scripts/test.sh

fuzz: ## run every Go fuzz target for FUZZTIME (default 20000x: inputs) each, FUZZ_JOBS (2) packages at once
	GO=$(GO) FUZZTIME=$(or $(FUZZTIME),20000x) ./scripts/fuzz.sh

lint: ## go vet, a gofmt check, and the OpenAPI linters (Redocly, Spectral; need node/npm)
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@if command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1; then \
	  ./scripts/openapi-tools.sh lint; \
	else echo "lint: node/npm not found, skipping the OpenAPI linters (Redocly, Spectral)"; fi

walk: ## the README's first walk (scripts/walk.sh) against a running `make run` (API=..., KEY_FILE=...)
	./scripts/walk.sh

docs: ## rebuild api/openapi/docs.html (GET /api/v1/docs) from api/openapi/openapi.json (needs node/npm)
	./scripts/openapi-tools.sh docs

bench: build tools ## benchmarks: Go benchmarks, then the engine vs PostGIS harness (goals live here, never in tests)
	$(GO) test -run '^$$' -bench . -skip '^BenchmarkReportBuild$$' -benchmem ./...
	$(GO) test -run '^$$' -bench '^BenchmarkReportBuild$$' -benchtime 20x -benchmem ./jobs
	$(BIN) bench engine --scale $(or $(SCALE),small)
	$(BIN) bench ingest --scale $(or $(SCALE),small)
	$(BIN) bench api --scale $(or $(SCALE),small)
