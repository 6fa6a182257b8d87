#!/usr/bin/env bash
# Installs schemathesis (PyPI) into .keel/py once, then runs it with the given arguments.
# Used by test/integration/server-schemathesis.test.ts against the live /openapi.json.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${root}/.keel/py"
version="4.32.5"
if ! "${venv}/bin/st" --version 2>/dev/null | grep -q "${version}"; then
  python3 -m venv "${venv}"
  "${venv}/bin/pip" install -q --disable-pip-version-check "schemathesis==${version}" >&2
fi
exec "${venv}/bin/st" "$@"
