#!/usr/bin/env bash
# The checks to run before committing (CONTRIBUTING.md, "Before you commit").
#
#   scripts/check.sh                  static checks, then go test -race of the three modules
#   scripts/check.sh --static         static checks only (what .ci/run calls)
#   scripts/check.sh --stress PKG...  go test -race -count=10 of PKG... while
#                                     stress-ng --cpu 1 keeps one core busy
#
# Static checks: gofmt (tracked and untracked files), go vet and staticcheck
# (pinned) on the three modules (go vet also for Windows and 32-bit FreeBSD);
# the library's dependency rule (its go.mod requires only OpenTelemetry and
# testify, and it builds without the workspace); the root package imports the
# OpenTelemetry API only; the exported-API count test, when it exists; the
# command's copy of internal/jsonscan is the library's; every relative
# Markdown link resolves; no internal issue numbers in code or docs.
set -euo pipefail
cd "$(dirname "$0")/.."

modules=(./... ./cmd/llmmetrics/... ./examples/...)
staticcheck_version=v0.8.2

step() { printf '\n=== %s\n' "$*"; }
fail() { printf 'check.sh: %s\n' "$*" >&2; exit 1; }

stress() {
  [ $# -gt 0 ] || fail "--stress needs the packages to run, e.g. --stress . ./llmmetricstest"
  command -v stress-ng >/dev/null || fail "--stress needs stress-ng (Debian: apt-get install stress-ng)"
  step "go test -race -count=10 $* with one core kept busy (stress-ng --cpu 1)"
  stress-ng --cpu 1 --quiet &
  # Not local: the EXIT trap runs after the function has returned when a
  # test fails, and must still find the load to stop it.
  stress_load=$!
  trap 'kill "$stress_load" 2>/dev/null || true' EXIT
  go test -race -count=10 -timeout 60m "$@"
  kill "$stress_load" 2>/dev/null || true
  wait "$stress_load" 2>/dev/null || true
  trap - EXIT
  echo "passed 10 runs under load"
}

static() {
  step "gofmt (tracked files and new ones not yet added)"
  local unformatted
  unformatted=$(git ls-files --cached --others --exclude-standard '*.go' | while read -r f; do [ -f "$f" ] && echo "$f"; done | xargs -r gofmt -l)
  [ -z "$unformatted" ] || fail "not gofmt-formatted: $unformatted"

  step "go vet"
  go vet "${modules[@]}"

  step "go vet on other systems: Windows (not unix), 32-bit FreeBSD (BSD types, a 32-bit int)"
  # The library and the command build, tests included, where users run them:
  # a struct field that is int64 on one system and uint64 on another, or a
  # constant that overflows a 32-bit int, fails here, not on their machine.
  GOOS=windows GOARCH=amd64 go vet ./... ./cmd/llmmetrics/...
  GOOS=freebsd GOARCH=386 go vet ./... ./cmd/llmmetrics/...

  step "staticcheck $staticcheck_version (the library, llmmetricstest, the examples and the command)"
  # Pinned, so a new release's new checks do not fail an unchanged tree.
  local sc
  sc="$(go env GOPATH)/bin/staticcheck"
  if ! [ -x "$sc" ] || ! "$sc" -version | grep -qF "(${staticcheck_version#v})"; then
    go install "honnef.co/go/tools/cmd/staticcheck@$staticcheck_version"
  fi
  "$sc" "${modules[@]}"

  step "the library's go.mod requires only OpenTelemetry and testify"
  local bad
  bad=$(GOWORK=off go list -m -f '{{if not .Indirect}}{{.Path}}{{end}}' all | grep -v -e '^$' \
    -e '^github.com/llmmetrics/llmmetrics$' -e '^go.opentelemetry.io/otel' -e '^github.com/stretchr/testify$' || true)
  [ -z "$bad" ] || fail "unexpected direct requirements: $bad"
  # The library and its tests build without the command's and the examples' modules.
  GOWORK=off go vet ./...

  step "the root package imports the OpenTelemetry API only (the SDK lives in otelsdk)"
  local sdk
  sdk=$(go list -deps . | grep '^go.opentelemetry.io/otel/sdk' || true)
  [ -z "$sdk" ] || fail "the root package depends on the OpenTelemetry SDK: $sdk"

  step "the root package's exported API (the count test, where it exists)"
  go test -count=1 -run '^TestAPI' .

  step "the command's copy of internal/jsonscan is the library's, but for its import path and package doc"
  # The command depends on the library's public API only, so it keeps its own
  # copy of this internal package; a fix to one must reach the other.
  local f
  for f in internal/jsonscan/*.go; do
    [ "$(basename "$f")" = doc.go ] && continue
    sed 's#llmmetrics/cmd/llmmetrics/internal/jsonscan#llmmetrics/internal/jsonscan#' "cmd/llmmetrics/$f" | cmp -s - "$f" ||
      fail "cmd/llmmetrics/$f differs from $f: keep the two copies in step"
  done
  for f in cmd/llmmetrics/internal/jsonscan/*.go; do
    [ -f "${f#cmd/llmmetrics/}" ] || fail "$f has no counterpart in internal/jsonscan"
  done

  step "every relative link in the Markdown files resolves"
  python3 scripts/check_links.py

  step "no internal issue numbers in code or docs (say what is true and why; history is in git)"
  local cites
  cites=$(git grep -n -i -E '\bissues? [0-9]+|\bitem [0-9]+ of issue' -- . ':!scripts/check.sh' || true)
  [ -z "$cites" ] || fail "issue citations: $cites"
}

case "${1:-}" in
  --stress) shift; stress "$@" ;;
  --static) static ;;
  "")
    static
    step "tests (the README's test command)"
    go test -race -count=1 "${modules[@]}"
    ;;
  *) fail "unknown argument $1 (want --static, --stress PKG... or nothing)" ;;
esac
echo
echo "check.sh passed"
