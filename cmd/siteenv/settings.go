package main

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"siteenv/ingest"
	"siteenv/jobs"
	"siteenv/store"
)

// settings is the whole environment siteenv reads: readSettings parses and
// validates every SITEENV_* variable once, before any command runs, and the
// commands take what they need from it. No other file of any package reads
// the environment (flags default to these values; ledger/pgembed alone
// passes GLIBC_TUNABLES on to PostgreSQL: TestOnlySettingsReadTheEnvironment).
type settings struct {
	// DataDir is SITEENV_DATA_DIR, --data-dir's default; default ./var.
	DataDir string
	// DatabaseURL is SITEENV_DATABASE_URL; "": the embedded cluster under
	// <data-dir>/pg, whose server binaries are in PGBin (SITEENV_PG_BIN;
	// "": searched for).
	DatabaseURL, PGBin string
	// Store is SITEENV_STORE; "": file://<data-dir>/store. S3 are the
	// SITEENV_S3_* settings of an s3:// store.
	Store string
	S3    store.S3Config
	// Secret is SITEENV_SECRET (32+ characters); "": generated once into
	// <data-dir>/secret.
	Secret string
	// LogLevel is SITEENV_LOG_LEVEL; default info.
	LogLevel slog.Level
	// EngineMemory is SITEENV_ENGINE_MEMORY; 0: the engine's default
	// (bench's own default in a bench).
	EngineMemory int64
	// IngestMemory is SITEENV_INGEST_MEMORY; default
	// ingest.DefaultMemoryBudget.
	IngestMemory int64
	// StoreRecent is SITEENV_STORE_RECENT (0 turns it off); default
	// store.DefaultRecentBytes.
	StoreRecent int64
	// Jobs holds SITEENV_QUERY_ATTEMPT, SITEENV_REPORT_ATTEMPT,
	// SITEENV_QUERY_SWEEP and SITEENV_JOB_LEASE; zero fields take the
	// runner's defaults.
	Jobs jobs.Config
	// MetricsAddr and MetricsPublic are SITEENV_METRICS_ADDR and
	// SITEENV_METRICS_PUBLIC=1, serve's --metrics-addr and --metrics-public
	// defaults.
	MetricsAddr   string
	MetricsPublic bool
	// Basemap is SITEENV_BASEMAP: the PMTiles basemap drawn under report
	// maps and map images, a file path or "store:KEY" (an object in the
	// store); "": none, and the maps say so.
	Basemap string
	// BenchDir is SITEENV_BENCH_DIR: where `bench engine` and `bench api`
	// keep the datasets they build for later runs; "": none kept.
	BenchDir string
	// GoMemLimitSet: GOMEMLIMIT is set, so a bench leaves the Go memory
	// limit the runtime read from it alone.
	GoMemLimitSet bool
}

// envVars are the variables readSettings reads (the README documents each:
// TestReadmeDocumentsEveryVariable).
var envVars = []string{
	"SITEENV_DATA_DIR", "SITEENV_DATABASE_URL", "SITEENV_PG_BIN", "SITEENV_STORE",
	"SITEENV_S3_ENDPOINT", "SITEENV_S3_ACCESS_KEY", "SITEENV_S3_SECRET_KEY", "SITEENV_S3_REGION",
	"SITEENV_SECRET", "SITEENV_LOG_LEVEL", "SITEENV_ENGINE_MEMORY", "SITEENV_INGEST_MEMORY", "SITEENV_STORE_RECENT",
	"SITEENV_QUERY_ATTEMPT", "SITEENV_REPORT_ATTEMPT", "SITEENV_QUERY_SWEEP", "SITEENV_JOB_LEASE",
	"SITEENV_METRICS_ADDR", "SITEENV_METRICS_PUBLIC", "SITEENV_BENCH_DIR", "SITEENV_BASEMAP", "GOMEMLIMIT",
}

// loadSettings reads the process's environment (readSettings).
func loadSettings() (settings, error) { return readSettings(os.Getenv) }

// readSettings reads the environment through getenv (os.Getenv) into
// settings. A bad value is an error naming its variable, so a command stops
// before it touches anything rather than ignore it.
func readSettings(getenv func(string) string) (settings, error) {
	get := getenv
	s := settings{
		DataDir:       get("SITEENV_DATA_DIR"),
		DatabaseURL:   get("SITEENV_DATABASE_URL"),
		PGBin:         get("SITEENV_PG_BIN"),
		Store:         get("SITEENV_STORE"),
		Secret:        get("SITEENV_SECRET"),
		MetricsAddr:   get("SITEENV_METRICS_ADDR"),
		MetricsPublic: get("SITEENV_METRICS_PUBLIC") == "1",
		BenchDir:      get("SITEENV_BENCH_DIR"),
		Basemap:       strings.TrimSpace(get("SITEENV_BASEMAP")),
		GoMemLimitSet: get("GOMEMLIMIT") != "",
	}
	if s.DataDir == "" {
		s.DataDir = "./var"
	}
	// UseSSL is true unless the endpoint starts with "http://".
	ep := get("SITEENV_S3_ENDPOINT")
	s.S3 = store.S3Config{
		Endpoint:  ep,
		AccessKey: get("SITEENV_S3_ACCESS_KEY"),
		SecretKey: get("SITEENV_S3_SECRET_KEY"),
		Region:    get("SITEENV_S3_REGION"),
		UseSSL:    !strings.HasPrefix(strings.ToLower(ep), "http://"),
	}
	var err error
	if s.LogLevel, err = logLevel(get("SITEENV_LOG_LEVEL")); err != nil {
		return settings{}, err
	}
	for _, b := range []struct {
		name   string
		dst    *int64
		zeroOK bool
		def    int64
	}{
		{"SITEENV_STORE_RECENT", &s.StoreRecent, true, store.DefaultRecentBytes},
		{"SITEENV_ENGINE_MEMORY", &s.EngineMemory, false, 0},
		{"SITEENV_INGEST_MEMORY", &s.IngestMemory, false, ingest.DefaultMemoryBudget},
	} {
		if *b.dst, err = byteSize(b.name, get(b.name), b.zeroOK, b.def); err != nil {
			return settings{}, err
		}
	}
	if s.Jobs, err = jobTimings(get); err != nil {
		return settings{}, err
	}
	if k, ok := strings.CutPrefix(s.Basemap, "store:"); ok && k == "" {
		return settings{}, fmt.Errorf("SITEENV_BASEMAP must be a file or store:KEY, got %q", s.Basemap)
	}
	if s.Secret != "" && len(s.Secret) < 32 {
		return settings{}, fmt.Errorf("SITEENV_SECRET must be at least 32 characters")
	}
	return s, nil
}

// logger logs text to w at the configured level.
func (s settings) logger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: s.LogLevel}))
}

// logLevel parses SITEENV_LOG_LEVEL: debug, info (default), warn or error.
func logLevel(v string) (slog.Level, error) {
	level := slog.LevelInfo
	v = strings.TrimSpace(v)
	if v == "" {
		return level, nil
	}
	if err := level.UnmarshalText([]byte(v)); err != nil {
		return slog.LevelInfo, fmt.Errorf("SITEENV_LOG_LEVEL must be debug, info, warn or error, got %q", v)
	}
	return level, nil
}

// byteSize parses the value v of the variable name: bytes, or a number with
// KiB, MiB or GiB; "" means def.
func byteSize(name, v string, zeroOK bool, def int64) (int64, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return def, nil
	}
	mult := int64(1)
	for suffix, m := range map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30} {
		if strings.HasSuffix(v, suffix) {
			v, mult = strings.TrimSuffix(v, suffix), m
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 || (n == 0 && !zeroOK) || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%s must be bytes or a number with KiB, MiB or GiB, e.g. 2GiB", name)
	}
	return n * mult, nil
}

// jobTimings reads SITEENV_QUERY_ATTEMPT (how long one execution of a query
// may hold its claim before another replica requeues it; default 120s) and
// SITEENV_QUERY_SWEEP (how often each replica looks for expired attempts;
// default 30s), and SITEENV_REPORT_ATTEMPT (the same claim for a report
// build; default 10m), as Go durations such as 90s or 2m. Operators lower them to
// recover a crashed replica's queries sooner; the cluster tests use seconds.
// SITEENV_JOB_LEASE (default 5s) is how long a claim outlives its owner's
// last renewal: a killed replica's queries and report builds are requeued
// within about 1.5 leases, whatever the attempt limits. Unset fields stay
// zero: the runner's defaults.
func jobTimings(get func(string) string) (jobs.Config, error) {
	var cfg jobs.Config
	for _, v := range []struct {
		name string
		dst  *time.Duration
	}{{"SITEENV_QUERY_ATTEMPT", &cfg.Attempt}, {"SITEENV_REPORT_ATTEMPT", &cfg.ReportAttempt},
		{"SITEENV_QUERY_SWEEP", &cfg.Sweep}, {"SITEENV_JOB_LEASE", &cfg.Lease}} {
		s := strings.TrimSpace(get(v.name))
		if s == "" {
			continue
		}
		d, err := time.ParseDuration(s)
		if err != nil || d < time.Second || d > 24*time.Hour {
			return jobs.Config{}, fmt.Errorf("%s must be a duration from 1s to 24h, e.g. 90s or 2m, got %q", v.name, s)
		}
		*v.dst = d
	}
	return cfg, nil
}
