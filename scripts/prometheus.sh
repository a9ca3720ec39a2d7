#!/usr/bin/env bash
# Builds Prometheus 3 from the Go module proxy, or reuses the binary a
# previous run cached, and prints the binary's path on stdout (progress goes
# to stderr). The fleet test (examples/fleet) runs it when
# LLMMETRICS_PROMETHEUS names it.
#
# Prometheus 3 is built here rather than taken from Debian (whose package is
# 2.42) because the fleet path sends OTLP straight to it: its OTLP receiver
# (--web.enable-otlp-receiver) stores an OpenTelemetry exponential histogram
# as a native histogram, with no remote-write exporter in the Collector.
# Prometheus's Go module versions are v0.3XX.Y for release 3.XX.Y
# (v0.316.0 is Prometheus 3.16.0). A `go install` build has no version
# stamped in (`--version` says so) and no web UI assets (the UI answers
# 404; the HTTP API is complete). It is built with the tag remove_all_sd,
# which leaves out every service discovery plugin (Kubernetes, the clouds,
# Consul, …): the test sends OTLP and scrapes nothing, and the plugins are
# most of the build's time.
#
# Usage: scripts/prometheus.sh      (version: $PROMETHEUS_VERSION or v0.316.0)
# Cache: $LLMMETRICS_CACHE (default $HOME/.cache/llmmetrics)/prometheus-VERSION-nosd/prometheus
set -euo pipefail

version="${PROMETHEUS_VERSION:-v0.316.0}"
cache="${LLMMETRICS_CACHE:-$HOME/.cache/llmmetrics}/prometheus-$version-nosd"
bin="$cache/prometheus"

if [ -x "$bin" ] && "$bin" --help >/dev/null 2>&1; then
  echo "prometheus $version: reusing $bin" >&2
  echo "$bin"
  exit 0
fi

mkdir -p "$cache"
echo "prometheus $version: building from the Go module proxy (2 minutes on 2 idle cores with empty Go caches, 7 on busy ones)" >&2
start=$SECONDS
GOBIN="$cache" CGO_ENABLED=0 go install -tags remove_all_sd "github.com/prometheus/prometheus/cmd/prometheus@$version" >&2
echo "prometheus $version: built in $((SECONDS - start)) s" >&2

echo "$bin"
