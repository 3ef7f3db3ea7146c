#!/bin/sh
# Installs the other tools mprof's exports are tested with, when missing:
# Go, for `go tool pprof` (Debian's golang-go where there is no go), and
# inferno's flame graph renderer, built from crates.io into TOOLS_DIR/bin
# (with Debian's cargo-web where there is no cargo).
# Usage: setup-tools.sh TOOLS_DIR
set -eu
mkdir -p "$1"
tools=$(cd "$1" && pwd)
here=$(dirname "$0")
INFERNO_VERSION=0.12.8

command -v go >/dev/null 2>&1 || "$here/setup-system.sh" golang-go

[ -f "$tools/.inferno-$INFERNO_VERSION" ] && exit 0
cargo=$(command -v cargo || true)
if [ -z "$cargo" ] && [ -x "${CARGO_HOME:-$HOME/.cargo}/bin/cargo" ]; then
    cargo=${CARGO_HOME:-$HOME/.cargo}/bin/cargo
fi
if [ -z "$cargo" ]; then
    "$here/setup-system.sh" cargo-web
    cargo=cargo
fi
echo "mprof setup: building inferno $INFERNO_VERSION from crates.io" >&2
# Its crates go under TOOLS_DIR too: nothing of the user's cargo changes.
CARGO_HOME="$tools/cargo-home" "$cargo" install --quiet --locked --force --root "$tools" \
    --no-default-features --features cli "inferno@$INFERNO_VERSION"
touch "$tools/.inferno-$INFERNO_VERSION"
