#!/usr/bin/env bash
# Installs schemathesis (PyPI, pinned) into .keel/py once, then runs it with the given
# arguments. Used by test/integration/server-schemathesis.test.ts against the live
# /openapi.json of `keel serve`. A virtualenv when python3 has venv, else `pip --target`
# (Debian's python3 without python3-venv), the way scripts/temporal.sh installs its tools.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="4.32.5"
venv="${root}/.keel/py"
target="${root}/.keel/py-target/schemathesis-${version}"

if "${venv}/bin/st" --version 2>/dev/null | grep -q "${version}"; then
  exec "${venv}/bin/st" "$@"
fi
if [ -d "${target}/schemathesis" ]; then
  PYTHONPATH="${target}" exec python3 -m schemathesis.cli "$@"
fi
if python3 -m venv "${venv}" >/dev/null 2>&1 && "${venv}/bin/pip" install -q --disable-pip-version-check "schemathesis==${version}" >&2; then
  exec "${venv}/bin/st" "$@"
fi
rm -rf "${venv}"
python3 -m pip install -q --disable-pip-version-check --target "${target}" "schemathesis==${version}" >&2
PYTHONPATH="${target}" exec python3 -m schemathesis.cli "$@"
