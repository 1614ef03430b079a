#!/usr/bin/env bash
# Installs the tools the test suite needs that `go test` cannot fetch by itself:
#   versitygw  - a real S3 server, used by the tiles S3 store tests (127.0.0.1 only).
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
