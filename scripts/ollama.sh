#!/usr/bin/env bash
# Builds Ollama's server from the Go module proxy, or reuses the binary a
# previous run cached, and prints the binary's path on stdout (progress goes
# to stderr). The engine tests (cmd/llmmetrics/internal/engine) run against
# it when LLMMETRICS_OLLAMA names it.
#
# `go install github.com/ollama/ollama@VERSION` builds the server with its
# C++ engine through cgo. Go module zips leave out the module's vendor/
# folders, so three headers its C++ code includes come from elsewhere:
# nlohmann/json.hpp and stb/stb_image.h from Debian (nlohmann-json3-dev,
# libstb-dev), miniaudio/miniaudio.h from the Go module
# github.com/gen2brain/malgo, which carries the same single-file library.
#
# Usage: scripts/ollama.sh            (version: $OLLAMA_VERSION or v0.17.4)
# Cache: $LLMMETRICS_CACHE (default $HOME/.cache/llmmetrics)/ollama-VERSION/ollama
# The cache's path is part of the C flags, so moving the cache makes the go
# command recompile the C++ code instead of reusing its build cache.
set -euo pipefail

version="${OLLAMA_VERSION:-v0.17.4}"
malgo="${MALGO_VERSION:-v0.11.24}"
cache="${LLMMETRICS_CACHE:-$HOME/.cache/llmmetrics}/ollama-$version"
bin="$cache/ollama"

if [ -x "$bin" ] && "$bin" --help >/dev/null 2>&1; then
  echo "ollama $version: reusing $bin" >&2
  echo "$bin"
  exit 0
fi

if [ ! -f /usr/include/nlohmann/json.hpp ] || [ ! -f /usr/include/stb/stb_image.h ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq nlohmann-json3-dev libstb-dev >/dev/null
fi

inc="$cache/include"
mkdir -p "$inc/miniaudio"
# `go mod download` outside a module needs the version spelled out; -json
# gives the directory it unpacked to.
malgodir=$(cd "$cache" && go mod download -json "github.com/gen2brain/malgo@$malgo" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
install -m 644 "$malgodir/miniaudio.h" "$inc/miniaudio/miniaudio.h"

echo "ollama $version: building from the Go module proxy (3 minutes on 2 idle cores with empty Go caches, up to an hour on busy ones)" >&2
start=$SECONDS
GOBIN="$cache" CGO_ENABLED=1 CGO_CPPFLAGS="-I$inc -I/usr/include/stb -I/usr/include" \
  go install "github.com/ollama/ollama@$version" >&2
echo "ollama $version: built in $((SECONDS - start)) s" >&2

echo "$bin"
