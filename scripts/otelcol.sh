#!/usr/bin/env bash
# Builds the OpenTelemetry Collector of examples/otelcol/builder-config.yaml
# with the Collector Builder, or reuses the binary a previous run cached,
# and prints the binary's path on stdout (progress goes to stderr). The
# fleet test (examples/fleet) runs it when LLMMETRICS_OTELCOL names it.
#
# The builder (go.opentelemetry.io/collector/cmd/builder) is installed from
# the Go module proxy at the manifest's release, then generates a main
# package over the manifest's modules and compiles it, as the Collector's
# users build their own distributions.
#
# Usage: scripts/otelcol.sh         (builder version: $OTELCOL_BUILDER_VERSION or v0.165.0)
# Cache: $LLMMETRICS_CACHE (default $HOME/.cache/llmmetrics)/otelcol-VERSION-MANIFESTHASH/
# The manifest's hash is part of the cache's name, so a change to the
# manifest builds a new Collector.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
manifest="$root/examples/otelcol/builder-config.yaml"
version="${OTELCOL_BUILDER_VERSION:-v0.165.0}"
# The hash of the manifest without its comments: a changed module or
# setting builds a new Collector, a changed comment does not.
hash=$(grep -v '^[[:space:]]*#' "$manifest" | sha256sum | cut -c1-12)
cache="${LLMMETRICS_CACHE:-$HOME/.cache/llmmetrics}/otelcol-$version-$hash"
bin="$cache/otelcol-llmmetrics/otelcol-llmmetrics"

if [ -x "$bin" ] && "$bin" --help >/dev/null 2>&1; then
  echo "otelcol $version ($hash): reusing $bin" >&2
  echo "$bin"
  exit 0
fi

mkdir -p "$cache"
echo "otelcol $version ($hash): building with the Collector Builder (1.5 minutes on 2 idle cores with empty Go caches, 7 on busy ones)" >&2
start=$SECONDS
GOBIN="$cache/bin" GOWORK=off go install "go.opentelemetry.io/collector/cmd/builder@$version" >&2
echo "otelcol $version: builder installed in $((SECONDS - start)) s" >&2
cp "$manifest" "$cache/builder-config.yaml"
# The manifest's output_path is relative: the builder runs in the cache.
(cd "$cache" && GOWORK=off CGO_ENABLED=0 "$cache/bin/builder" --config=builder-config.yaml >&2)
echo "otelcol $version ($hash): built in $((SECONDS - start)) s" >&2

echo "$bin"
