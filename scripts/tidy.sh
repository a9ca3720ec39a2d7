#!/usr/bin/env bash
# Tidy a module of this repository that requires the library
# (cmd/llmmetrics, examples) without leaving a replace directive behind.
# `go mod tidy` ignores go.work and would look the unpublished library up on
# the module proxy; a replace that lives only for the tidy avoids that.
# Usage: scripts/tidy.sh cmd/llmmetrics
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:?usage: scripts/tidy.sh MODULE_DIR}
cd "$root/$dir"
rel=$(python3 -c 'import os,sys; print(os.path.relpath(sys.argv[1], sys.argv[2]))' "$root" "$PWD")
go mod edit -replace=github.com/llmmetrics/llmmetrics@v0.0.0="$rel"
trap 'go mod edit -dropreplace=github.com/llmmetrics/llmmetrics@v0.0.0' EXIT
GOWORK=off go mod tidy
