#!/usr/bin/env bash
# Installs the tools the test suite needs that `go test` cannot fetch by itself:
#   versitygw  - a real S3 server, used by the tiles S3 store tests (127.0.0.1 only).
#   pdftotext  - poppler-utils, reads the report PDFs back as a reader would.
#   chromium   - a real browser for the review page test (driven by chromedp).
# Idempotent: a tool that is already installed is left alone.
set -euo pipefail

VERSITYGW_VERSION=v1.8.0

gobin="$(go env GOBIN)"
if [ -z "$gobin" ]; then
	gobin="$(go env GOPATH | cut -d: -f1)/bin"
fi

if [ -x "$gobin/versitygw" ]; then
	echo "versitygw: already installed at $gobin/versitygw"
else
	echo "versitygw: installing $VERSITYGW_VERSION into $gobin"
	go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"
fi

if command -v pdftotext >/dev/null 2>&1; then
	echo "pdftotext: already installed"
elif command -v apt-get >/dev/null 2>&1; then
	echo "pdftotext: installing poppler-utils"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq poppler-utils >/dev/null 2>&1 ||
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq poppler-utils; }
else
	echo "pdftotext (poppler-utils) is required by the report tests" >&2
	exit 1
fi

# chromium - Debian's headless-capable browser, driven by chromedp in the
# review page's browser test (review/browser_test.go).
if command -v chromium >/dev/null 2>&1; then
	echo "chromium: already installed"
elif command -v apt-get >/dev/null 2>&1; then
	echo "chromium: installing Debian's chromium"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1 ||
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }
else
	echo "chromium is required by the review page's browser test" >&2
	exit 1
fi
