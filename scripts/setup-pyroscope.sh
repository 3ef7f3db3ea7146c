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
# Go's linker must fit the server's 660 MB of objects, its own heap and the
# 1 GiB every Go program reserves as it starts into what some machines allow
# a process (RLIMIT_AS, 2 GiB on CI's): objects without inlining (-l) or
# DWARF, and a heap kept close to what is live (GOGC=25), leave it about
# 200 MB to spare, where the defaults failed nine links in ten.  A link that
# fails all the same is tried again (compiled packages are cached, so only
# the link runs again).  Its hundreds of "go: downloading" lines are shown
# only if the build fails, with the line that says why last.
build() {
    GOGC=25 "$go" build -trimpath -gcflags='all=-l -dwarf=false' -ldflags='-s -w' \
        -o "$tools/pyroscope-$VERSION.new" ./cmd/pyroscope 2>"$work/build.log"
}
tries=1
until build; do
    echo "mprof setup: the Pyroscope build failed: $(first_error "$work/build.log")" >&2
    if [ $tries -eq 3 ]; then
        tail -n 200 "$work/build.log" >&2
        echo "mprof setup: the Pyroscope build failed $tries times: $(first_error "$work/build.log")" >&2
        exit 1
    fi
    tries=$((tries + 1))
done
mv "$tools/pyroscope-$VERSION.new" "$tools/pyroscope-$VERSION"
ln -sf "pyroscope-$VERSION" "$tools/pyroscope"
