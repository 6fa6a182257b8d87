#!/usr/bin/env bash
# `npm test`: the type check and the linter run while vitest does. The tests spend most of
# their time waiting on Temporal, workers and child processes, so on 2 cores the checks fit
# in that wait instead of adding their two minutes in front of it. Their output is printed
# after the tests; any of the three failing fails the run. Arguments go to vitest.
# The checks run at the lowest priority (nice 19): ~110 s of CPU (typed eslint ~90, tsc ~20)
# that took the two cores from the global setup and the unit files in the run's first
# minutes; niced, they take the CPU the tests leave idle (a run used ~160 % of 200 %) and
# still end long before the tests.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
logs=$(mktemp -d)

# Each check in a process group of its own, so that it can be reniced or stopped whole (npm,
# then tsc or eslint under it): bash's job control (set -m) gives each background job its own
# group. Not a session of its own (setsid): Linux's scheduler autogroups (on by default) share
# the CPU between sessions first, and nice counts only within one, so a check in a session
# of its own took a full share beside the whole test run whatever its nice value
# (test/unit/machines/properties.test.ts: 5.8 s alone, 8.0 s beside `nice -n 19 setsid
# eslint`, 5.6 s beside eslint in this session at nice 19).
start_check() { # name [nice]: runs `npm run <name>` in the background, its pid in $<name>
  set -m
  ${2:+nice -n "$2"} npm run --silent "$1" </dev/null >"$logs/$1" 2>&1 &
  printf -v "$1" %s "$!"
  set +m
}
start_check typecheck 19
start_check lint 19
trap 'kill -- -"$typecheck" -"$lint" 2>/dev/null; rm -rf "$logs"' EXIT

# schemathesis (PyPI) installs into .keel/py on a fresh clone: 20-30 s of pip that the
# API fuzz test would otherwise wait for; it happens while the unit tests run instead.
bash scripts/schemathesis.sh --version >"$logs/schemathesis" 2>&1 &

npx vitest run "$@"
tests=$?

# On a machine that stays busy (other work, or `npm run test:stress`'s hogs) nice 19 leaves the
# checks almost no CPU. Nothing else is left to wait for now, so they get a normal share:
# reniced to 0, which needs root (CAP_SYS_NICE); otherwise a check still running is stopped
# and run again at the normal priority, since at nice 19 beside other work it could take hours.
for check in typecheck lint; do
  pid=${!check}
  if kill -0 "$pid" 2>/dev/null && ! renice -n 0 -g "$pid" >/dev/null 2>&1; then
    kill -- -"$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    start_check "$check"
  fi
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
