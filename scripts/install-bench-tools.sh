#!/usr/bin/env bash
# Installs the tools `siteenv bench` compares against, from Debian packages:
#   postgresql-15-postgis-3 - PostGIS 3.3, the baseline of `siteenv bench engine`
#   gdal-bin                - ogr2ogr, the baseline of `siteenv bench ingest`
# Idempotent: installed packages are left alone and `apt-get update` runs only when
# something is missing and the package lists do not know it yet. Needs root (or sudo).
set -euo pipefail

packages=(postgresql-15-postgis-3 gdal-bin)

installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

missing=()
for p in "${packages[@]}"; do
	if installed "$p"; then
		echo "$p: already installed"
	else
		missing+=("$p")
	fi
done
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
	sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive

# Refresh the package lists only when apt cannot find a candidate for a missing package;
# an update is slow and needs the network.
need_update=0
for p in "${missing[@]}"; do
	if ! apt-cache policy "$p" 2>/dev/null | grep -q 'Candidate: [0-9]'; then
		need_update=1
	fi
done
if [ "$need_update" -eq 1 ]; then
	$sudo apt-get update
fi

echo "installing: ${missing[*]}"
$sudo apt-get install -y --no-install-recommends "${missing[@]}"
