#!/usr/bin/env bash
# Builds Jaeger v2 (the `jaeger` binary, built on the OpenTelemetry
# Collector) from the Go module proxy, or reuses the binary a previous run
# cached, and prints the binary's path on stdout (progress goes to stderr).
# The fleet test (examples/fleet) runs it when LLMMETRICS_JAEGER names it.
#
# `go install github.com/jaegertracing/jaeger/cmd/jaeger@VERSION` refuses:
# Jaeger's go.mod has replace directives, which the go command does not
# allow in a module it installs. The binary is built instead inside a
# scratch module that requires Jaeger as a tool (`go get -tool`), where
# Jaeger's own replace directives do not apply: its requirements are
# resolved as written. Jaeger's Go module versions are v1.X for release
# v2.(X-63) (v1.76.0 is Jaeger 2.13.0). A build from the module proxy has no
# version stamped in and no UI assets (the UI answers 404; the HTTP query
# API, /api/v3/traces/TRACE_ID among it, is complete).
#
# Usage: scripts/jaeger.sh          (version: $JAEGER_VERSION or v1.76.0)
# Cache: $LLMMETRICS_CACHE (default $HOME/.cache/llmmetrics)/jaeger-VERSION/jaeger
set -euo pipefail

version="${JAEGER_VERSION:-v1.76.0}"
cache="${LLMMETRICS_CACHE:-$HOME/.cache/llmmetrics}/jaeger-$version"
bin="$cache/jaeger"

if [ -x "$bin" ] && "$bin" --help >/dev/null 2>&1; then
  echo "jaeger $version: reusing $bin" >&2
  echo "$bin"
  exit 0
fi

src="$cache/src"
rm -rf "$src"
mkdir -p "$src"
echo "jaeger $version: building from the Go module proxy (4.5 minutes on 2 idle cores with empty Go caches, 14 on busy ones)" >&2
start=$SECONDS
(
  cd "$src"
  export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0
  go mod init llmmetrics.invalid/jaeger-build >&2 2>&1
  go get -tool "github.com/jaegertracing/jaeger/cmd/jaeger@$version" >&2
  go build -o "$bin" github.com/jaegertracing/jaeger/cmd/jaeger >&2
)
echo "jaeger $version: built in $((SECONDS - start)) s" >&2

echo "$bin"
