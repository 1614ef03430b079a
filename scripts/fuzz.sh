#!/bin/sh
# Runs every Go fuzz target of the module (func FuzzXxx in a _test.go file)
# for FUZZTIME each (default 20000x: twenty thousand inputs). Seed corpora
# already run as ordinary tests; this explores beyond them. A crasher fails
# the run, written under the package's testdata/fuzz/ for replay, as
# `go test -fuzz` does.
#
# Each package's fuzz-instrumented test binary is built once and runs each
# of its targets in turn (-test.fuzz, the flags `go test -fuzz` passes);
# FUZZ_JOBS packages (default 2) build and fuzz at once, each printing its
# output when it ends. Building once per package instead of once per target
# saves a link of the package's instrumented binary per target (25 targets,
# 7 packages).
#
# Why a count and not a duration: with a duration, go1.26's fuzz coordinator
# can report its own deadline as a failure ("context deadline exceeded", no
# input written) when a worker is busy as the time runs out on a loaded
# machine (golang/go#75804, fixed in go1.27). A count sets no deadline, and
# the same work on any machine: a loaded or slower one takes longer instead
# of exploring less.
#
# What is instrumented (FUZZ_INSTRUMENT): `go test -fuzz` instruments every
# package of the test binary for coverage guidance but a few of the runtime's
# (its skip list, below), and the fuzz worker clears, copies and scans the
# binary's whole coverage counter array for every input: for api (548
# packages, 423 KB of counters, most in dependencies its fuzz targets never
# reach: Arrow, gRPC, protobuf, the S3 client, pgx) that, not the target,
# was the cost of an input (1,400 inputs/s for a Range header parser).
# FUZZ_INSTRUMENT=module (the default) instruments the module's packages, the
# standard library (less that skip list) and orb (the geometry library whose
# WKB, WKT and GeoJSON decoders the ingest and geo targets reach), no other
# third-party package: api's counters are 105 KB, its targets run about 1.7
# times as fast, and the guidance keeps every branch of our code and of the
# standard library's parsers (strconv, encoding/json, regexp, net/url,
# unicode/utf8) that the targets reach. FUZZ_INSTRUMENT=all builds with `go test -c -fuzz`: every
# package, as `go test -fuzz` does.
set -eu
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-20000x}
FUZZ_JOBS=${FUZZ_JOBS:-2}
FUZZ_INSTRUMENT=${FUZZ_INSTRUMENT:-module}
cd "$(dirname "$0")/.."
root=$(pwd)

build_flags() { # the go test -c flags that instrument for fuzzing; $1 the first target
	case $FUZZ_INSTRUMENT in
	all) echo "-fuzz ^${1}\$" ;;
	module)
		# -d=libfuzzer is the instrumentation `go test -fuzz` adds; the
		# packages it leaves out (cmd/go's skipInstrumentation) stay out.
		# For a package matched by several -gcflags, the last one wins.
		flags="-gcflags=std=-d=libfuzzer -gcflags=$($GO list -m)/...=-d=libfuzzer -gcflags=github.com/paulmach/orb/...=-d=libfuzzer"
		for p in context internal/fuzz internal/godebug internal/runtime/maps internal/sync reflect runtime sync sync/atomic syscall testing time; do
			flags="$flags -gcflags=$p="
		done
		echo "$flags"
		;;
	esac
}
case $FUZZ_INSTRUMENT in
module | all) ;;
*)
	echo "FUZZ_INSTRUMENT=$FUZZ_INSTRUMENT: module or all" >&2
	exit 2
	;;
esac

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
		if ! $GO test -c -o "$bin" $(build_flags "$first") "./$dir"; then
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
echo "fuzz: $(echo $dirs | wc -w) packages, $(for d in $dirs; do targets_of "$d"; done | wc -l) targets, $FUZZTIME each, $FUZZ_JOBS packages at once, instrumented: $FUZZ_INSTRUMENT"
if ! printf '%s\n' $order | xargs -P "$FUZZ_JOBS" -I{} "$root/scripts/fuzz.sh" --pkg {} "$work"; then
	echo "fuzz: FAIL" >&2
	exit 1
fi
