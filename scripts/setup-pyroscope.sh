#!/bin/sh
# Builds the Grafana Pyroscope server that mprof's pushed profiles are
# tested against, from its Go module at a pinned version, into
# TOOLS_DIR/pyroscope (kept: built once per machine).  Debian has no
# package of it.  Its module and build caches live under TOOLS_DIR while it
# builds and are removed after: 3 GB that nothing else reads.
# Usage: setup-pyroscope.sh TOOLS_DIR
set -eu
# The newest release the Go module proxy serves here (v1.10.0's zip is refused).
VERSION=v1.9.0
# Its go.mod replaces its api module with ./api, which the module's zip does
# not hold: the proxy's api module is taken in its place, the first tagged
# after v1.9.0.
API_VERSION=v1.0.0
NEEDS_GO=1.22

# The line that says why a build failed: a compiler's error or the Go
# runtime's fatal error or panic, not the goroutine dump after it.
first_error() {
    grep -m1 -E '^(fatal error|panic|unexpected fault|SIG[A-Z]+|runtime: |.*\.go:[0-9]+:[0-9]+: )' "$1" ||
        tail -n 1 "$1"
}

mkdir -p "$1"
tools=$(cd "$1" && pwd)
[ -x "$tools/pyroscope-$VERSION" ] && exit 0

go=$(command -v go || true)
have=$([ -n "$go" ] && "$go" env GOVERSION 2>/dev/null | sed 's/^go//' || true)
if [ -z "$have" ] || [ "$(printf '%s\n%s\n' "$NEEDS_GO" "$have" | sort -V | head -n1)" != "$NEEDS_GO" ]; then
    echo "mprof setup: Pyroscope $VERSION needs Go $NEEDS_GO or newer to build; this machine has ${have:-no Go}" >&2
    exit 1
fi

echo "mprof setup: building the Pyroscope server $VERSION from the Go module proxy (a few minutes)" >&2
work="$tools/pyroscope-build"
rm -rf "$work"
mkdir -p "$work"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
export GOMODCACHE="$work/modules" GOCACHE="$work/cache" GOFLAGS=-mod=mod GOTOOLCHAIN=local GOWORK=off
source=$("$go" mod download -json "github.com/grafana/pyroscope@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
cp -r "$source" "$work/source"
chmod -R u+w "$work/source"
cd "$work/source"
rm -f go.work go.work.sum
"$go" mod edit -dropreplace=github.com/grafana/pyroscope/api -require="github.com/grafana/pyroscope/api@$API_VERSION"
# Its hundreds of "go: downloading" lines only if the build fails.  A
# build that fails is tried once more, one package at a time from a cleared
# build cache: a CI machine's first build once died in the Go runtime itself
# (a goroutine dump), which a build that fails on the source would not do.
build() {
    "$go" build -trimpath -gcflags=all=-dwarf=false -ldflags='-s -w' "$@" -o "$tools/pyroscope-$VERSION.new" ./cmd/pyroscope \
        2>"$work/build.log"
}
if ! build; then
    cp "$work/build.log" "$work/first-build.log"
    echo "mprof setup: the Pyroscope build failed ($(first_error "$work/first-build.log")); once more, with -p 1" >&2
    [ ! -d "$GOCACHE" ] || chmod -R u+w "$GOCACHE"
    rm -rf "$GOCACHE"
    if ! build -p 1; then
        tail -n 200 "$work/build.log" >&2
        echo "mprof setup: the Pyroscope build failed twice: first $(first_error "$work/first-build.log"), then $(first_error "$work/build.log")" >&2
        exit 1
    fi
fi
mv "$tools/pyroscope-$VERSION.new" "$tools/pyroscope-$VERSION"
ln -sf "pyroscope-$VERSION" "$tools/pyroscope"
