#!/bin/sh
# Runs every Go fuzz target of the module (func FuzzXxx in a _test.go file)
# for FUZZTIME each (default 20000x: twenty thousand inputs). Seed corpora
# already run as ordinary tests; this explores beyond them. Fails on the first
# crasher, which `go test` writes under the package's testdata/fuzz/ for replay.
#
# Why a count and not a duration: with a duration, go1.26's fuzz coordinator
# can report its own deadline as a failure ("context deadline exceeded", no
# input written) when a worker is busy as the time runs out on a loaded
# machine (golang/go#75804, fixed in go1.27). A count sets no deadline.
set -eu
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-20000x}
cd "$(dirname "$0")/.."
targets=$(grep -rl --include='*_test.go' '^func Fuzz' . | sort)
[ -n "$targets" ] || { echo "no fuzz targets"; exit 0; }
for file in $targets; do
	pkg="./$(dirname "${file#./}")"
	for name in $(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$file"); do
		echo "fuzz $pkg $name ($FUZZTIME)"
		$GO test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "$pkg" </dev/null || { echo "fuzz $pkg $name failed" >&2; exit 1; }
	done
done
