#!/usr/bin/env bash
# Started by test/setup/run-scope.ts: waits for the test run's main process (vitest) to end,
# however it ends, then stops every process whose environment still carries the run's marker
# (KEEL_TEST_RUN=<id>): SIGTERM, and SIGKILL 5 s later for what remains.
#   run-watchdog.sh <vitest pid> <run id>
main=$1 run=$2
while kill -0 "$main" 2>/dev/null; do sleep 1; done
marked() {
  local f pid
  for f in /proc/[0-9]*/environ; do
    pid=${f#/proc/}; pid=${pid%/environ}
    [ "$pid" = "$$" ] && continue
    if tr '\0' '\n' <"$f" 2>/dev/null | grep -qxF "KEEL_TEST_RUN=$run"; then echo "$pid"; fi
  done
}
pids=$(marked)
[ -n "$pids" ] || exit 0
kill -TERM $pids 2>/dev/null
for _ in $(seq 1 50); do
  pids=$(marked)
  [ -n "$pids" ] || exit 0
  sleep 0.1
done
kill -KILL $pids 2>/dev/null
exit 0
