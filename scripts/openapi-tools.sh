#!/bin/sh
# OpenAPI tooling with the npm packages pinned in tools/openapi
# (package.json + package-lock.json; installed with `npm ci`):
#   scripts/openapi-tools.sh lint   Redocly (recommended) and Spectral (.spectral.yaml,
#                                   spectral:oas): fails on any error or warning
#   scripts/openapi-tools.sh install  only the `npm ci` below (when the lock changed)
#   scripts/openapi-tools.sh docs   rebuilds api/openapi/docs.html, the self-contained
#                                   reference page served at GET /api/v1/docs
# Run from anywhere; paths are relative to the repository root.
set -eu
cd "$(dirname "$0")/.."
spec=api/openapi/openapi.json
page=api/openapi/docs.html
bin=tools/openapi/node_modules/.bin
# No telemetry and no update checks: the build must not depend on the network
# beyond `npm ci`, and the page must not phone home when read.
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true NO_UPDATE_NOTIFIER=1

# node_modules/.siteenv-lock is the lock file the last `npm ci` installed.
if [ ! -x "$bin/redocly" ] || [ ! -x "$bin/spectral" ] ||
	! cmp -s tools/openapi/package-lock.json tools/openapi/node_modules/.siteenv-lock; then
	echo "npm ci (tools/openapi)" >&2
	npm ci --prefix tools/openapi --no-audit --no-fund --loglevel=error >&2
	cp tools/openapi/package-lock.json tools/openapi/node_modules/.siteenv-lock
fi

case "${1:-}" in
install) ;;
lint)
	# Redocly exits 0 on warnings: read its totals instead.
	out=$("$bin/redocly" lint --extends=recommended --format=json "$spec" 2>/dev/null) || {
		"$bin/redocly" lint --extends=recommended "$spec" >&2 || true
		echo "redocly lint failed" >&2
		exit 1
	}
	if ! printf '%s' "$out" | node -e '
		const r = JSON.parse(require("fs").readFileSync(0, "utf8"));
		process.exit(r.totals.errors + r.totals.warnings === 0 ? 0 : 1);'; then
		"$bin/redocly" lint --extends=recommended --format=stylish "$spec" >&2 || true
		echo "redocly lint: the OpenAPI document has errors or warnings" >&2
		exit 1
	fi
	echo "redocly lint --extends=recommended: 0 errors, 0 warnings"
	"$bin/spectral" lint --quiet --ruleset .spectral.yaml --fail-severity=warn "$spec"
	echo "spectral lint (spectral:oas): 0 errors, 0 warnings"
	;;
docs)
	tmp=$(mktemp)
	trap 'rm -f "$tmp"' EXIT
	"$bin/redocly" build-docs --inlineBundle --output "$tmp" "$spec" >/dev/null
	# The page records the document it was built from, so a test can tell
	# when it is stale (api/openapi: TestDocsPageIsCurrent).
	sum=$(sha256sum "$spec" | cut -d' ' -f1)
	awk -v sum="$sum" '!done && /<head>/ { print; print "  <meta name=\"siteenv-openapi-sha256\" content=\"" sum "\">"; done = 1; next } { print }' "$tmp" >"$page"
	echo "wrote $page from $spec (sha256 $sum)"
	;;
*)
	echo "usage: $0 lint|docs|install" >&2
	exit 2
	;;
esac
