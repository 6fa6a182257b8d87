#!/usr/bin/env bash
# `npm test`: the type check and the linter run while vitest does. The tests spend most of
# their time waiting on Temporal, workers and child processes, so on 2 cores the checks fit
# in that wait instead of adding their two minutes in front of it. Their output is printed
# after the tests; any of the three failing fails the run. Arguments go to vitest.
# The checks run at the lowest priority (nice 19): ~135 s of CPU (tsc 50, typed eslint 85)
# that took the two cores from the global setup and the unit files in the run's first
# minutes; niced, they take the CPU the tests leave idle (a run used ~160 % of 200 %) and
# still end long before the tests.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
logs=$(mktemp -d)

# Each check in a process group of its own (setsid), so that it can be reniced or stopped
# whole: npm, then tsc or eslint under it.
nice -n 19 setsid npm run --silent typecheck >"$logs/typecheck" 2>&1 &
typecheck=$!
nice -n 19 setsid npm run --silent lint >"$logs/lint" 2>&1 &
lint=$!
trap 'kill -- -"$typecheck" -"$lint" 2>/dev/null; rm -rf "$logs"' EXIT

# schemathesis (PyPI) installs into .keel/py on a fresh clone: 20-30 s of pip that the
# API fuzz test would otherwise wait for; it happens while the unit tests run instead.
bash scripts/schemathesis.sh --version >"$logs/schemathesis" 2>&1 &

npx vitest run "$@"
tests=$?

# On a machine that stays busy (other work, or `npm run test:stress`'s hogs) nice 19 leaves the
# checks almost no CPU: under two hogs they had used 36 s of CPU each in the suite's 22 minutes.
# Nothing else is left to wait for now, so they get a normal share (renice to 0 needs root;
# otherwise they finish at their own pace).
for pid in "$typecheck" "$lint"; do
  kill -0 "$pid" 2>/dev/null && renice -n 0 -g "$pid" >/dev/null 2>&1
done

status=0
for check in typecheck lint; do
  pid=${!check}
  if wait "$pid"; then
    printf '%s: ok\n' "$check"
  else
    printf '\n%s FAILED:\n' "$check"
    cat "$logs/$check"
    status=1
  fi
done
[ "$tests" -eq 0 ] || status=$tests
exit "$status"
