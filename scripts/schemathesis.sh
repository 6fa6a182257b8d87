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

# One installer at a time: `npm test` starts the install in the background while the unit
# tests run, and the schemathesis test may ask before it has finished.
mkdir -p "${root}/.keel"
exec 9>"${root}/.keel/schemathesis.lock"
flock 9

if "${venv}/bin/st" --version 2>/dev/null | grep -q "${version}"; then
  exec "${venv}/bin/st" "$@" 9>&-
fi
if [ -d "${target}/schemathesis" ]; then
  PYTHONPATH="${target}" exec python3 -m schemathesis.cli "$@" 9>&-
fi
if python3 -m venv "${venv}" >/dev/null 2>&1 && "${venv}/bin/pip" install -q --disable-pip-version-check "schemathesis==${version}" >&2; then
  exec "${venv}/bin/st" "$@" 9>&-
fi
rm -rf "${venv}"
python3 -m pip install -q --disable-pip-version-check --target "${target}" "schemathesis==${version}" >&2
PYTHONPATH="${target}" exec python3 -m schemathesis.cli "$@" 9>&-
