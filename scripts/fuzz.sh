#!/bin/sh
# Runs every Go fuzz target of the module (func FuzzXxx in a _test.go file)
# for a short time each: FUZZTIME (default 3s). Seed corpora already run as
# ordinary tests; this explores beyond them. Fails on the first crasher, which
# `go test` writes under the package's testdata/fuzz/ for replay.
set -eu
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-3s}
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
