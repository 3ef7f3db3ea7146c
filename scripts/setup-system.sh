#!/bin/sh
# Installs the Debian packages mprof needs to build and test, when missing.
# Usage: setup-system.sh PACKAGE...
set -eu
missing=""
for package in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed"; then
        missing="$missing $package"
    fi
done
[ -z "$missing" ] && exit 0
echo "mprof setup: installing Debian packages:$missing" >&2
if [ "$(id -u)" -eq 0 ]; then
    run_as_root=""
elif command -v sudo >/dev/null 2>&1; then
    run_as_root="sudo"
else
    echo "mprof setup: need root (or sudo) to install:$missing" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# A stale package list makes apt-get fail on packages that have moved on.
$run_as_root apt-get update -qq
# shellcheck disable=SC2086
$run_as_root apt-get install -y -qq --no-install-recommends $missing >/dev/null
