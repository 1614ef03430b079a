#!/bin/sh
# Runs every Go fuzz target of the module (func FuzzXxx in a _test.go file)
# for FUZZTIME each (default 20000x: twenty thousand inputs). Seed corpora
# already run as ordinary tests; this explores beyond them. A crasher fails
# the run, written under the package's testdata/fuzz/ for replay, as
# `go test -fuzz` does.
#
# Each package's fuzz-instrumented test binary is built once (`go test -c
# -fuzz`, the same instrumentation `go test -fuzz` builds with) and runs each
# of its targets in turn (-test.fuzz, the flags `go test -fuzz` passes);
# FUZZ_JOBS packages (default 2) build and fuzz at once, each printing its
# output when it ends. Building once per package instead of once per target
# saves a link of the package's instrumented binary per target (25 targets,
# 7 packages).
#
# Why a count and not a duration: with a duration, go1.26's fuzz coordinator
# can report its own deadline as a failure ("context deadline exceeded", no
# input written) when a worker is busy as the time runs out on a loaded
# machine (golang/go#75804, fixed in go1.27). A count sets no deadline.
set -eu
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-20000x}
FUZZ_JOBS=${FUZZ_JOBS:-2}
cd "$(dirname "$0")/.."
root=$(pwd)

targets_of() { # the fuzz targets of package directory $1
	sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$1"/*_test.go
}

if [ "${1:-}" = "--pkg" ]; then
	# One package: build its instrumented test binary, fuzz each target.
	dir=$2 work=$3
	name=$(echo "$dir" | tr / _)
	log="$work/$name.log"
	bin="$work/$name.test"
	status=0
	{
		names=$(targets_of "$dir")
		first=$(echo "$names" | head -n 1)
		importpath=$($GO list "./$dir")
		start=$(date +%s)
		if ! $GO test -c -o "$bin" -fuzz "^${first}\$" "./$dir"; then
			echo "FAIL	$importpath [fuzz build failed]"
			status=1
		else
			cachedir="$($GO env GOCACHE)/fuzz/$importpath"
			for t in $names; do
				echo "fuzz ./$dir $t ($FUZZTIME)"
				if ! (cd "$dir" && "$bin" -test.paniconexit0 -test.timeout=30m -test.run='^$' \
					-test.fuzz="^${t}\$" -test.fuzztime="$FUZZTIME" -test.fuzzcachedir="$cachedir" </dev/null); then
					echo "FAIL	$importpath $t"
					status=1
					break
				fi
			done
			[ "$status" -ne 0 ] || echo "ok  	$importpath	$(($(date +%s) - start))s	($(echo $names | wc -w) fuzz targets, $FUZZTIME each)"
		fi
	} >"$log" 2>&1 || status=1
	# One package's output at a time.
	if command -v flock >/dev/null 2>&1; then
		flock "$work/.out" cat "$log"
	else
		cat "$log"
	fi
	exit "$status"
fi

dirs=$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sed 's|^\./||' | sort -u)
[ -n "$dirs" ] || { echo "no fuzz targets"; exit 0; }
work=$(mktemp -d "${TMPDIR:-/tmp}/siteenv-fuzz-XXXXXX")
trap 'rm -rf "$work"' EXIT
# The packages with the most targets first: they take longest.
order=$(for d in $dirs; do echo "$(targets_of "$d" | wc -l) $d"; done | sort -rn | cut -d' ' -f2)
echo "fuzz: $(echo $dirs | wc -w) packages, $(for d in $dirs; do targets_of "$d"; done | wc -l) targets, $FUZZTIME each, $FUZZ_JOBS packages at once"
if ! printf '%s\n' $order | xargs -P "$FUZZ_JOBS" -I{} "$root/scripts/fuzz.sh" --pkg {} "$work"; then
	echo "fuzz: FAIL" >&2
	exit 1
fi
