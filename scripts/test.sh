#!/usr/bin/env bash
# `npm test`: the type check and the linter run while vitest does. The tests spend most of
# their time waiting on Temporal, workers and child processes, so on 2 cores the checks fit
# in that wait instead of adding their two minutes in front of it. Their output is printed
# after the tests; any of the three failing fails the run. Arguments go to vitest.
# The checks run at the lowest priority (nice 19): ~110 s of CPU (typed eslint ~90, tsc ~20)
# that took the two cores from the global setup and the unit files in the run's first
# minutes; niced, they take the CPU the tests leave idle (a run leaves 10-20 % of it) and
# still end long before the tests.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
logs=$(mktemp -d)

# How many test files run at once (vitest.config.ts: KEEL_TEST_WORKERS, default 2), chosen by
# what the machine's other work uses, measured over a second before anything of ours starts.
# On 2 idle cores a third fork fills the time the two leave idle (clean clones, 30 Nov 2026:
# 469 s against 570 s, bench/results/test-time.md); beside other work it only adds contention
# and less headroom for the timing-bound tests, so a busy machine (a quarter of its cores or
# more, as under `npm run test:stress`) gets two.
others_busy() { # per mille of all cores kept busy over one second by work not niced
  local u1 n1 s1 i1 w1 q1 sq1 st1 u2 n2 s2 i2 w2 q2 sq2 st2
  read -r _ u1 n1 s1 i1 w1 q1 sq1 st1 _ </proc/stat
  sleep 1
  read -r _ u2 n2 s2 i2 w2 q2 sq2 st2 _ </proc/stat
  local busy=$(((u2 - u1) + (s2 - s1) + (q2 - q1) + (sq2 - sq1) + (st2 - st1)))
  local total=$((busy + (n2 - n1) + (i2 - i1) + (w2 - w1)))
  echo $((total > 0 ? busy * 1000 / total : 1000))
}
if [ -z "${KEEL_TEST_WORKERS:-}" ] && [ -r /proc/stat ]; then
  busy=$(others_busy)
  if [ "$busy" -lt 250 ]; then export KEEL_TEST_WORKERS=3; else export KEEL_TEST_WORKERS=2; fi
  printf 'npm test: %s test files at a time (other work kept %s %% of the cores busy over a second; KEEL_TEST_WORKERS=N sets it)\n' "$KEEL_TEST_WORKERS" "$((busy / 10))"
fi

# Each check in a session of its own (setsid), so that it can be reniced or stopped whole
# (npm, then tsc or eslint under it). Linux's scheduler autogroups (on by default) share the
# CPU between sessions first and apply nice only within one, so the session's own nice value
# (/proc/<pid>/autogroup) is set too: with nice alone the checks took a full share beside the
# whole test run (test/unit/machines/properties.test.ts: 5.8 s alone, 8.0 s beside
# `nice -n 19 setsid eslint`, 5.6 s with its session at nice 19); in the tests' own session
# instead, they took that share from the dev servers and workers the tests start, each in a
# session of its own (a clean-clone run no faster: 643 s).
start_check() { # name [nice]: runs `npm run <name>` in the background, its pid in $<name>
  setsid bash -c 'if [ -n "$1" ]; then echo "$1" >/proc/self/autogroup 2>/dev/null; exec nice -n "$1" npm run --silent "$0"; fi; exec npm run --silent "$0"' \
    "$1" "${2:-}" </dev/null >"$logs/$1" 2>&1 &
  printf -v "$1" %s "$!"
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
unnice() { # pid: nice 0 for its process group and its session's autogroup; fails without root
  renice -n 0 -g "$1" >/dev/null 2>&1 || return 1
  # Allowed wherever the renice was; it fails only for a check that has just ended.
  echo 0 2>/dev/null >"/proc/$1/autogroup" || true
}
for check in typecheck lint; do
  pid=${!check}
  if kill -0 "$pid" 2>/dev/null && ! unnice "$pid"; then
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
