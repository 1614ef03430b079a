#!/usr/bin/env bash
# The whole suite (`make test`, after `make tools`): lint, every test, the race
# detector, the fuzz targets. The four phases run at once, so that one phase's
# CPU fills the time another waits on PostgreSQL, a child process, a timer or
# the disk (on 2 cores one after the other they left the CPU idle a good part
# of the time):
#   lint   go vet, gofmt, the OpenAPI linters (`make lint`)
#   plain  go test of every package not in RACE_ONLY_PKGS, then the tests
#          of PLAIN_RUN (package:regexp, `go test -run regexp package`)
#   race   go test -race of RACE_PKGS
#   fuzz   scripts/fuzz.sh (FUZZTIME inputs per target), at a lower CPU
#          priority: it has no deadline and fills what the tests leave idle
# Each phase writes to its own log, printed whole when the phase ends (go
# test's usual ok/FAIL lines per package) after a line with its time and CPU. Fails if
# any phase fails, after all have ended.
#
# Environment: GO, MAKE, RACE_PKGS, RACE_ONLY_PKGS, PLAIN_RUN, FUZZTIME (the
# Makefile passes them); PLAIN_P (below); TEST_PHASES (default "lint plain race fuzz") runs a subset, in
# that order; TEST_SEQUENTIAL=1 runs them one after another instead of at once.
set -uo pipefail
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "$(dirname "$0")/.."
GO=${GO:-go}
MAKE=${MAKE:-make}
RACE_PKGS=${RACE_PKGS:-./api/... ./queries/... ./clock/... ./ledger/... ./engine/... ./jobs/... ./store/...}
RACE_ONLY_PKGS=${RACE_ONLY_PKGS:-./api/... ./queries/... ./clock/... ./ledger/... ./engine/... ./jobs/... ./store/...}
PLAIN_RUN=${PLAIN_RUN-./engine:^(TestExactness|TestExactnessEdgeIndex|TestEdgeIndexMatchesPlain|TestEdgeIndexContains|TestShardEdgeIndexBytes|TestShardBytesPerVertex|TestConcurrentQueries|TestFeatureLimit)\$ ./jobs:^TestReportSamples\$}
FUZZTIME=${FUZZTIME:-20000x}
TEST_PHASES=${TEST_PHASES:-lint plain race fuzz}
# At once, the plain phase runs one test binary at a time (go test -p 1):
# beside the race phase's two, that keeps the tests with deadlines (the fault
# suite's takeovers, concurrent purchases) from sharing the 2 cores with three
# other test binaries; its packages (the bench and fault suites above all)
# mostly wait, so it is expected to end before the race phase still. One
# after another, go test's default (GOMAXPROCS).
if [ -z "${TEST_SEQUENTIAL:-}" ]; then
	PLAIN_P=${PLAIN_P:-1}
else
	PLAIN_P=${PLAIN_P:-$(nproc)}
fi

if [ "${1:-}" = "--plain" ]; then
	# The plain phase: go test of PLAIN_PKGS, then of each PLAIN_RUN entry.
	rc=0
	"$GO" test -p "$PLAIN_P" -count=1 -timeout 30m $PLAIN_PKGS || rc=1
	set -f
	for entry in $PLAIN_RUN; do
		"$GO" test -count=1 -timeout 30m -run "${entry#*:}" "${entry%%:*}" || rc=1
	done
	exit $rc
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/siteenv-test-XXXXXX")
trap 'rm -rf "$work"' EXIT

# The npm tools are installed before the phases start: the OpenAPI linters
# (lint) and the TypeScript client test (race, api/openapi) both need them and
# would otherwise both run `npm ci` into the same directory at once.
if command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1; then
	./scripts/openapi-tools.sh install || exit 1
fi

race=" $($GO list $RACE_ONLY_PKGS | tr '\n' ' ') "
rest=$(for p in $($GO list ./...); do case "$race" in *" $p "*) ;; *) echo "$p" ;; esac; done)

phase() { # name command...: runs command in the background, output to $work/name.log
	local name=$1
	shift
	(
		start=$(date +%s)
		# GNU time, where present, gives the CPU seconds of the phase's
		# processes (user + system; not the daemonised PostgreSQL servers).
		if [ -x /usr/bin/time ]; then
			/usr/bin/time -f "%U %S" -o "$work/$name.cpu" "$@" >"$work/$name.log" 2>&1
		else
			"$@" >"$work/$name.log" 2>&1
		fi
		rc=$?
		cpu=$(awk '{ u = $1; s = $2 } END { printf "%.0f", u + s }' "$work/$name.cpu" 2>/dev/null)
		echo "$rc $(($(date +%s) - start)) ${cpu:-?}" >"$work/$name.rc"
		exit $rc
	) &
	pids[$!]=$name
}

failed=""
collect() { # waits for every running phase, printing each as it ends
	local done name rc secs cpu
	while [ ${#pids[@]} -gt 0 ]; do
		wait -n -p done
		name=${pids[$done]:-}
		[ -n "$name" ] || continue
		unset "pids[$done]"
		read -r rc secs cpu <"$work/$name.rc" || { rc=1 secs=? cpu=?; }
		echo "=== $name ($secs s, $cpu CPU-s)"
		cat "$work/$name.log"
		if [ "$rc" -ne 0 ]; then
			echo "=== $name FAILED (exit $rc)"
			failed="$failed $name"
		fi
	done
}

declare -A pids
start=$(date +%s)
mode="at once"
[ -z "${TEST_SEQUENTIAL:-}" ] || mode="one after another"
echo "running $mode: $TEST_PHASES (go test without -race: $(echo $rest | wc -w) packages and $PLAIN_RUN; with -race: $RACE_PKGS)"
for p in $TEST_PHASES; do
	case $p in
	lint) phase lint "$MAKE" --no-print-directory lint ;;
	plain) phase plain env PLAIN_PKGS="$rest" PLAIN_P="$PLAIN_P" "$self" --plain ;;
	race) phase race "$GO" test -count=1 -race -timeout 30m $RACE_PKGS ;;
	fuzz) phase fuzz nice -n 10 env GO="$GO" FUZZTIME="$FUZZTIME" ./scripts/fuzz.sh ;;
	*)
		echo "unknown phase $p" >&2
		exit 2
		;;
	esac
	[ -z "${TEST_SEQUENTIAL:-}" ] || collect
done
collect

echo "=== suite: $(($(date +%s) - start)) s${failed:+, FAILED:$failed}"
[ -z "$failed" ]
