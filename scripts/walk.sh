#!/bin/sh
# A first walk through the API, against `make run` (demo data). Run it as
#   scripts/walk.sh                      # API=http://127.0.0.1:8080/api/v1, KEY_FILE=var/demo-key
# or paste it into a shell. Needs curl, and jq (or python3). Every step stops
# the walk if the answer's status is not the one expected. A Go test runs this
# script against a fresh `serve --demo` (cmd/siteenv: TestReadmeWalk), and the
# README includes it verbatim. The walk runs in a subshell, so pasting it into
# an interactive shell is safe: a failing step ends the walk, not the shell
# (indented with spaces, not tabs, which a shell would take as completion).
(
set -eu
API=${API:-http://127.0.0.1:8080/api/v1}
KEY_FILE=${KEY_FILE:-var/demo-key}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# json EXPR: a value of the last answer (jq syntax; without jq, python3 reads
# the simple paths used here: .a.b[0].c and `| length`). Objects come out as JSON.
have_jq() { [ "${WALK_JSON:-}" != python3 ] && command -v jq >/dev/null 2>&1; }
json() {
  if have_jq; then
    jq -rc "$1" "$WORK/body"
  else
    python3 -c '
import json, re, sys
v = json.load(open(sys.argv[2]))
path, length, _ = sys.argv[1].partition("| length")
for name, idx in re.findall(r"\.(\w+)|\[(\d+)\]", path):
    v = v[name] if name else v[int(idx)]
v = len(v) if length else v
print(v if isinstance(v, str) else json.dumps(v, separators=(",", ":")))' "$1" "$WORK/body"
  fi
}

# call WHAT STATUS CURL-ARGS...: one request with the key; prints the step and
# the status, keeps the body in $WORK/body and the headers in $WORK/headers.
# STATUS may list alternatives: 200/202. save FILE WHAT STATUS ... keeps the
# body in FILE instead.
call() { save "$WORK/body" "$@"; }
save() {
  file=$1 what=$2 want=$3
  shift 3
  status=$(curl -sS -o "$file" -D "$WORK/headers" -w '%{http_code}' -H "Authorization: Bearer $KEY" "$@")
  echo "== $what: $status"
  case "/$want/" in */"$status"/*) ;; *)
    echo "walk: $what answered $status, want $want:" >&2
    cat "$file" >&2
    echo >&2
    exit 1
    ;;
  esac
}

# 0. Wait for the server: the first `make run` loads the demo data (under a minute).
i=0
until curl -sf -o /dev/null "$API/openapi.json"; do
  i=$((i + 1))
  [ "$i" -le 180 ] || { echo "walk: no server at $API" >&2; exit 1; }
  sleep 1
done
KEY=$(cat "$KEY_FILE")

# Who am I, what may this key do, which limits apply?
call "context" 200 "$API/context"
echo "   credit_balance: $(json .credit_balance)"

# 1. Find a place (typo-tolerant), then preview its boundary.
call "search" 200 -G "$API/locations/search" --data-urlencode "query=stanley st parramatta" -d limit=3
echo "   first: $(json '.results[0].label')"
SELECTOR=$(json '.results[0].selector')
call "resolve" 200 -H 'Content-Type: application/json' "$API/locations/resolve" -d "{\"location\": $SELECTOR}"
echo "   $(json .status): $(json '.parcels[0].label'), $(json '.parcels[0].area_m2') m2"
[ "$(json .status)" = resolved ] || { echo "walk: no boundary" >&2; exit 1; }
SITE_SELECTOR=$(json .site)

# 2. Save the site (selectors: address, point, projected_point with an MGA epsg, cadastre, geometry).
call "save the site" 200/201 -H 'Content-Type: application/json' -H 'Idempotency-Key: walk-site-1' \
  "$API/sites" -d "{\"site\": $SITE_SELECTOR, \"name\": \"1 Stanley Street\",
  \"external_reference\": {\"namespace\": \"crm\", \"reference\": \"DEAL-42\"}}"
SITE=$(json .site.site_id)
echo "   site_id: $SITE"

# 3. Browse the catalogue for the site: access says what must be bought.
call "layers" 200 -G "$API/layers" -d "site_id=$SITE" -d jurisdiction=NSW
if have_jq; then jq -r '.layers[] | "   \(.layer_id) (\(.section_key)): \(.access)"' "$WORK/body"; fi

# 4. Buy section access (charged once; a retry with the same key never charges twice).
call "buy contamination" 200/201 -H 'Content-Type: application/json' -H 'Idempotency-Key: walk-buy-1' \
  "$API/access/acquisitions" -d "{\"site_id\": \"$SITE\", \"section_keys\": [\"contamination\"]}"
echo "   charged: $(json .credits_charged), balance: $(json .credit_balance)"

# 5. Query two layers within 2 km: 200 when done within Prefer: wait, else 202 (then poll).
call "query" 200/202 -H 'Content-Type: application/json' -H 'Idempotency-Key: walk-query-1' -H 'Prefer: wait=3' \
  "$API/queries" -d "{\"site\": {\"kind\": \"saved_site\", \"site_id\": \"$SITE\"},
  \"layer_ids\": [\"nsw-epa-contaminated-land\", \"au-groundwater-bores\"], \"radius_m\": 2000}"
QUERY=$(json .query_id)
i=0
while [ "$(json .status)" = queued ] || [ "$(json .status)" = running ]; do
  i=$((i + 1))
  [ "$i" -le 60 ] || { echo "walk: query $QUERY still $(json .status)" >&2; exit 1; }
  sleep 1
  call "query status" 200 "$API/queries/$QUERY?limit=1"
done
[ "$(json .status)" = succeeded ] || { echo "walk: query $(json .status)" >&2; exit 1; }
MATCHED=$(($(json '.layers[0].matched_feature_count') + $(json '.layers[1].matched_feature_count')))
echo "   query_id: $QUERY, matched: $MATCHED"

# Page through the results with cursor until page.next_cursor is null.
call "results page 1" 200 -G "$API/queries/$QUERY/results" -d limit=25 -d include_geometry=false
SEEN=$(json '.features | length')
echo "   nearest: $(json '.features[0].layer_id') $(json '.features[0].feature_id'), $(json '.features[0].distance_m') m"
PAGE=1
CURSOR=$(json .page.next_cursor)
while [ "$CURSOR" != null ]; do
  PAGE=$((PAGE + 1))
  call "results page $PAGE" 200 -G "$API/queries/$QUERY/results" -d limit=25 -d include_geometry=false \
    --data-urlencode "cursor=$CURSOR"
  SEEN=$((SEEN + $(json '.features | length')))
  CURSOR=$(json .page.next_cursor)
done
echo "   $SEEN features in $PAGE pages"
[ "$SEEN" -eq "$MATCHED" ] || { echo "walk: paged $SEEN features, the query matched $MATCHED" >&2; exit 1; }

# 6. A map of the section around the site (1280 x 900 JPEG; no credits; the section must be unlocked).
save contamination.jpg "map image" 200 "$API/sites/$SITE/sections/contamination/map-image"
ETAG=$(sed -n 's/^[Ee][Tt][Aa][Gg]: *//p' "$WORK/headers" | tr -d '\r')
echo "   contamination.jpg: $(wc -c <contamination.jpg) bytes of $(sed -n 's/^[Cc]ontent-[Tt]ype: *//p' "$WORK/headers" | tr -d '\r'), ETag $ETAG"
#   Send the ETag back: 304 until a release or the date changes.
save /dev/null "map image again" 304 -H "If-None-Match: $ETAG" "$API/sites/$SITE/sections/contamination/map-image"

# 7. Order a site report (a PDF with every report-approved layer of the site's state; charged
#    once at the report price), poll until it is built, read its text, then download the PDF
#    through a five-minute link that needs no key.
call "order report" 202 -H 'Content-Type: application/json' -H 'Idempotency-Key: walk-report-1' \
  "$API/reports" -d "{\"site_id\": \"$SITE\"}"
REPORT=$(json .report_id)
echo "   report_id: $REPORT ($(json .jurisdiction)), charged: $(json .credits_charged), balance: $(json .credit_balance)"
call "report status" 200 "$API/reports/$REPORT"
i=0
while [ "$(json .report.status)" = queued ] || [ "$(json .report.status)" = running ]; do
  i=$((i + 1))
  [ "$i" -le 60 ] || { echo "walk: report $REPORT still $(json .report.status)" >&2; exit 1; }
  sleep 1
  call "report status" 200 "$API/reports/$REPORT"
done
[ "$(json .report.status)" = completed ] || { echo "walk: report $(json .report.status)" >&2; exit 1; }
ARTIFACT=$(json '.report.artifacts[0].artifact_id')
SHA256=$(json '.report.artifacts[0].sha256')
echo "   revision $(json .report.revision), $(json '.report.evidence.layers | length') layers of evidence, artifact $ARTIFACT"
call "report text" 200 -G "$API/reports/$REPORT/content" -d limit=2
echo "   $(json '.sections[0].heading')"
call "download link" 201 -H 'Content-Type: application/json' "$API/artifacts/$ARTIFACT/deliveries" -d '{}'
status=$(curl -sS -o report.pdf -w '%{http_code}' "${API%/api/v1}$(json .url)")
echo "== download report.pdf: $status"
[ "$status" = 200 ] || exit 1
if command -v sha256sum >/dev/null 2>&1; then
  [ "$(sha256sum report.pdf | cut -d' ' -f1)" = "$SHA256" ] || { echo "walk: report.pdf digest differs" >&2; exit 1; }
fi
echo "   report.pdf: $(wc -c <report.pdf) bytes, sha256 $SHA256"

# 8. Receipts, usage and the audit feed.
call "purchases" 200 "$API/purchases"
echo "   latest: $(json '.purchases[0].credits_charged') credits"
call "usage" 200 "$API/usage"
call "activity" 200 -G "$API/activity" -d limit=5
if have_jq; then jq -r '.activity[] | "   \(.created_at) \(.operation) \(.outcome)"' "$WORK/body"; fi

# Errors are Problem bodies (application/problem+json) with a request id:
status=$(curl -s -o "$WORK/body" -w '%{http_code}' "$API/usage")
echo "== usage without a key: $status $(json .code)"
[ "$status" = 401 ] || exit 1

# The reference of every operation, offline, no key: open it in a browser.
curl -sf -o /dev/null "$API/docs" && echo "== reference: $API/docs"

# The walk's identifiers for the README's later blocks, which begin with
# `. ./walk.env` (the walk's own variables end with its subshell). The key is
# read from its file again, never copied.
cat >walk.env <<EOF
API='$API'
KEY=\$(cat '$KEY_FILE')
SITE='$SITE'
REPORT='$REPORT'
ARTIFACT='$ARTIFACT'
EOF
echo "== walk.env: API, KEY, SITE, REPORT and ARTIFACT for the README's later blocks"
echo "walk: ok"
)
