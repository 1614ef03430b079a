#!/usr/bin/env bash
# cluster.sh: the production shape on one machine. Starts a PostgreSQL cluster
# and the versitygw S3 server on loopback ports, creates a bucket, ingests the
# demo into them, and runs N stateless `siteenv serve` replicas on consecutive
# ports that share one database, one bucket and one secret. It prints the
# replicas' URLs and where the demo key is, then runs until interrupted
# (Ctrl-C) and stops everything it started.
#
#   scripts/cluster.sh [-n REPLICAS] [-p FIRST_PORT] [--scale small|medium|large] [--dir DIR] [--keep]
#
# The SITEENV_* variables exported below are exactly the ones a real
# deployment sets on every replica (with a managed PostgreSQL and a real
# bucket in place of the local ones); nothing else differs.
set -euo pipefail

replicas=2
first_port=8081
scale=small
dir=""
keep=0
while [ $# -gt 0 ]; do
	case "$1" in
	-n) replicas="$2"; shift 2 ;;
	-p) first_port="$2"; shift 2 ;;
	--scale) scale="$2"; shift 2 ;;
	--dir) dir="$2"; shift 2 ;;
	--keep) keep=1; shift ;;
	-h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "cluster.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
case "$replicas" in ''|*[!0-9]*|0) echo "cluster.sh: -n must be a positive integer" >&2; exit 2 ;; esac

repo="$(cd "$(dirname "$0")/.." && pwd)"
pg_bin="${SITEENV_PG_BIN:-/usr/lib/postgresql/15/bin}"
gobin="$(go env GOBIN)"; [ -n "$gobin" ] || gobin="$(go env GOPATH | cut -d: -f1)/bin"
vgw="$(command -v versitygw || true)"; [ -n "$vgw" ] || vgw="$gobin/versitygw"
[ -x "$pg_bin/initdb" ] || { echo "cluster.sh: no PostgreSQL binaries in $pg_bin (apt-get install postgresql postgresql-contrib, or set SITEENV_PG_BIN)" >&2; exit 1; }
[ -x "$vgw" ] || { echo "cluster.sh: versitygw is not installed: run make tools" >&2; exit 1; }

if [ -z "$dir" ]; then dir="$(mktemp -d /tmp/siteenv-cluster.XXXXXX)"; fi
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
[ -z "$(ls -A "$dir")" ] || { echo "cluster.sh: $dir is not empty (--dir wants a new or empty directory)" >&2; exit 2; }
chmod 755 "$dir" # the postgres user must reach its data directory below it

# PostgreSQL refuses to run as root: run it as the postgres user then.
as_pg() {
	if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() { # first free port from $1 up
	local p=$1
	while ! port_free "$p"; do p=$((p + 1)); done
	echo "$p"
}

pids=()
pg_started=0
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	echo "cluster.sh: stopping" >&2
	# Replicas first (SIGTERM: they finish in-flight requests and hand
	# running queries back), then the store and the database under them.
	for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	if [ "$pg_started" = 1 ]; then as_pg "$pg_bin/pg_ctl" stop -D "$dir/pg" -m fast -w >/dev/null 2>&1 || true; fi
	if [ "$keep" = 0 ]; then rm -rf "$dir"; else echo "cluster.sh: kept $dir" >&2; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "cluster.sh: building bin/siteenv" >&2
(cd "$repo" && go build -o bin/siteenv ./cmd/siteenv)
bin="$repo/bin/siteenv"

# --- PostgreSQL: password auth over loopback TCP, as a managed one would be.
pg_port="$(free_port 55432)"
db_password="$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')"
mkdir -p "$dir/pg" "$dir/pgsock"
if [ "$(id -u)" = 0 ]; then chown postgres "$dir/pg" "$dir/pgsock"; fi
as_pg "$pg_bin/initdb" -D "$dir/pg" -U postgres -E UTF8 --locale=C \
	--auth-local=trust --auth-host=scram-sha-256 >"$dir/initdb.log" 2>&1 ||
	{ cat "$dir/initdb.log" >&2; exit 1; }
as_pg "$pg_bin/pg_ctl" start -D "$dir/pg" -l "$dir/pg/server.log" -w -s \
	-o "-c listen_addresses=127.0.0.1 -p $pg_port -c unix_socket_directories=$dir/pgsock"
pg_started=1
as_pg "$pg_bin/psql" -q -h "$dir/pgsock" -p "$pg_port" -U postgres -d postgres -v ON_ERROR_STOP=1 \
	-c "CREATE ROLE siteenv LOGIN PASSWORD '$db_password'" -c "CREATE DATABASE siteenv OWNER siteenv" >/dev/null

# --- S3: versitygw with its posix backend, and one bucket.
s3_port="$(free_port 57070)"
s3_access=siteenv
s3_secret="$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')"
bucket=siteenv
mkdir -p "$dir/s3"
(cd "$dir" && HOME="$dir" exec "$vgw" --access "$s3_access" --secret "$s3_secret" --port "127.0.0.1:$s3_port" \
	--region us-east-1 --quiet posix "$dir/s3") >"$dir/versitygw.log" 2>&1 &
pids+=($!)
s3() { # method path: a signed S3 request (curl signs it; versitygw wants the payload hash header)
	curl -fsS -o /dev/null --aws-sigv4 "aws:amz:us-east-1:s3" --user "$s3_access:$s3_secret" \
		-H "x-amz-content-sha256: UNSIGNED-PAYLOAD" -X "$1" "http://127.0.0.1:$s3_port$2"
}
for _ in $(seq 1 150); do
	s3 PUT "/$bucket" 2>/dev/null && break
	sleep 0.2
done
s3 GET "/$bucket" ||
	{ echo "cluster.sh: versitygw did not start:" >&2; cat "$dir/versitygw.log" >&2; exit 1; }

# --- What every replica (and every siteenv command) of the deployment sets.
export SITEENV_DATABASE_URL="postgres://siteenv:$db_password@127.0.0.1:$pg_port/siteenv?sslmode=disable"
export SITEENV_STORE="s3://$bucket/siteenv"
export SITEENV_S3_ENDPOINT="http://127.0.0.1:$s3_port"
export SITEENV_S3_ACCESS_KEY="$s3_access"
export SITEENV_S3_SECRET_KEY="$s3_secret"
export SITEENV_S3_REGION=us-east-1
export SITEENV_SECRET="$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export SITEENV_ENGINE_MEMORY="${SITEENV_ENGINE_MEMORY:-512MiB}"

# --- The demo, ingested into the bucket and the database (once, by a command,
# not by a replica: releases are published the way the data team publishes).
echo "cluster.sh: ingesting the $scale demo into s3://$bucket/siteenv" >&2
"$bin" demo --scale "$scale" --data-dir "$dir/demo" >"$dir/demo.json" 2>"$dir/demo.log" ||
	{ cat "$dir/demo.log" >&2; exit 1; }

# --- N replicas on consecutive ports; each has a scratch data dir only.
urls=()
for i in $(seq 0 $((replicas - 1))); do
	port=$((first_port + i))
	port_free "$port" || { echo "cluster.sh: port $port is in use (choose another with -p)" >&2; exit 1; }
	mkdir -p "$dir/replica-$i"
	"$bin" serve --addr "127.0.0.1:$port" --data-dir "$dir/replica-$i" >"$dir/replica-$i.log" 2>&1 &
	pids+=($!)
	urls+=("http://127.0.0.1:$port/api/v1")
done
for i in "${!urls[@]}"; do
	for _ in $(seq 1 300); do
		curl -fsS -o /dev/null "${urls[$i]}/openapi.json" 2>/dev/null && break
		kill -0 "${pids[$((i + 1))]}" 2>/dev/null || { cat "$dir/replica-$i.log" >&2; exit 1; }
		sleep 0.2
	done
done

cat <<EOF
siteenv cluster: $replicas replicas, one PostgreSQL, one S3 bucket (work dir $dir)
  PostgreSQL  127.0.0.1:$pg_port (database siteenv, role siteenv)
  S3          http://127.0.0.1:$s3_port (versitygw), bucket $bucket
$(for i in "${!urls[@]}"; do echo "  replica $i   ${urls[$i]}   log $dir/replica-$i.log"; done)
  demo key    $dir/demo/demo-key

  KEY=\$(cat $dir/demo/demo-key)
  curl -H "Authorization: Bearer \$KEY" ${urls[0]}/context

Every replica runs with:
$(env | grep '^SITEENV_' | sort | sed -E 's/^(SITEENV_(SECRET|S3_SECRET_KEY)=).*/\1<secret>/; s#(postgres://siteenv:)[^@]*@#\1<password>@#; s/^/  /')
Ctrl-C stops everything.
EOF
wait "${pids[@]}"
