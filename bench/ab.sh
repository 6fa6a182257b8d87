#!/usr/bin/env bash
# An A/B of Keel against an earlier commit, for a change worth less than one run can show:
#   bench/ab.sh BASE_REV TAG [PAIRS=5] [ROUNDS=5] [-- bench arguments]
# e.g. `bench/ab.sh ef1e225 sinks 5 5` or `bench/ab.sh ef1e225 c50 3 3 -- --scenario concurrent --sessions 50`.
# Checks BASE_REV out in a temporary worktree (sharing this checkout's node_modules and
# Temporal binaries) with this checkout's bench/ over its own, so that both sides are
# measured by the same instrument (the peers' variants need their own install there: use
# floor and Keel), then runs the bench there and here in turn, PAIRS times — base, new,
# base, new — so both sides see the same hours of the machine's load, each run with its
# own warm-up round. Every run's files go to /tmp/ab-TAG/; at the end bench/pool.ts pools
# each side's rounds. Default bench arguments: `--scenario single --variants floor,keel
# --turns 3`. One session's ratio moves ±0.1 between runs of 3–5 rounds, and identical
# code has differed by 0.08 over 10 rounds: ~20 rounds a side tell 0.05 apart.
# AB_BASELINE=floor-local pools Keel's ratio to that variant instead of to the floor (the
# variant must be among the run's: `-- --variants floor-local,keel`).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
base=${1:?usage: bench/ab.sh BASE_REV TAG [PAIRS] [ROUNDS] [-- bench arguments]}
tag=${2:?usage: bench/ab.sh BASE_REV TAG [PAIRS] [ROUNDS] [-- bench arguments]}
pairs=${3:-5}
rounds=${4:-5}
shift $(( $# < 4 ? $# : 4 ))
[ "${1:-}" = "--" ] && shift
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(--scenario single --variants floor,keel --turns 3)
scenario=single
for ((i = 0; i < ${#args[@]}; i++)); do [ "${args[$i]}" = "--scenario" ] && scenario=${args[$((i + 1))]}; done

out=/tmp/ab-$tag
tree=$(mktemp -d /tmp/ab-base-XXXXXX)
mkdir -p "$out"
git -C "$here" worktree add --detach "$tree" "$base" >/dev/null
trap 'git -C "$here" worktree remove --force "$tree"' EXIT
ln -s "$here/node_modules" "$tree/node_modules"
mkdir -p "$tree/.keel" && ln -s "$here/.keel/tools" "$tree/.keel/tools"
(cd "$here" && tar --exclude=bench/results --exclude=bench/peers/node_modules -cf - bench) | (cd "$tree" && tar -xf -)

for i in $(seq "$pairs"); do
  for side in base new; do
    dir=$here
    [ "$side" = base ] && dir=$tree
    echo "$(date +%H:%M:%S) $tag $side $i/$pairs"
    (cd "$dir" && npx tsx bench/suite.ts "${args[@]}" --rounds "$rounds" --warmup 1 --name "$tag-$side-$i" --out "$out" >"$out/$tag-$side-$i.log" 2>&1)
  done
done
cd "$here"
npx tsx bench/pool.ts --scenario "$scenario" ${AB_BASELINE:+--baseline "$AB_BASELINE"} "base=$(ls "$out/$tag"-base-*.json | paste -sd,)" "new=$(ls "$out/$tag"-new-*.json | paste -sd,)"
