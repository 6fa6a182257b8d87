#!/usr/bin/env bash
# Runs a command beside CPU hogs, as on a busy laptop or a shared CI runner: the stress mode
# developers run before they resolve an issue that touches timing (docs/testing.md).
#
#   scripts/stress.sh [command…]        default command: npm test
#   KEEL_STRESS_HOGS=N                  how many busy loops (default 2, one per core here)
#   KEEL_STRESS_CPUS=LIST               also pin the command and its hogs to these CPUs
#                                       (taskset, e.g. 0 for one core)
#
# The hogs are plain busy loops at the command's own priority (not niced): they take their
# share of the cores for the whole run. They are stopped when the command ends, however it
# ends, and the command's exit status is returned.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

hogs="${KEEL_STRESS_HOGS:-2}"
cpus="${KEEL_STRESS_CPUS:-}"
pin=()
if [ -n "$cpus" ]; then
  command -v taskset >/dev/null || { echo "keel/stress: KEEL_STRESS_CPUS needs taskset (util-linux)" >&2; exit 2; }
  pin=(taskset -c "$cpus")
fi
[ "$#" -gt 0 ] || set -- npm test

pids=()
stop_hogs() {
  [ "${#pids[@]}" -gt 0 ] && kill "${pids[@]}" 2>/dev/null
  wait "${pids[@]}" 2>/dev/null
  pids=()
}
trap stop_hogs EXIT
trap 'stop_hogs; exit 130' INT
trap 'stop_hogs; exit 143' TERM

for _ in $(seq 1 "$hogs"); do
  # exec: the pid we kill is the loop itself, not a shell around it.
  "${pin[@]}" bash -c 'exec node -e "for (;;) {}"' &
  pids+=("$!")
done
printf 'keel/stress: %s CPU hog(s) running (pids %s)%s; load before: %s\n' \
  "$hogs" "${pids[*]}" "${cpus:+, pinned to CPUs $cpus}" "$(cut -d' ' -f1-3 /proc/loadavg)" >&2

started=$SECONDS
"${pin[@]}" "$@"
status=$?
printf 'keel/stress: %s exited %s after %s s beside %s hog(s); load: %s\n' \
  "$*" "$status" "$((SECONDS - started))" "$hogs" "$(cut -d' ' -f1-3 /proc/loadavg)" >&2
exit "$status"
