#!/bin/sh
# `make bench-node-versions`: the same benches on each Node.js version, in alternating rounds (20 22 24 26, then
# again), so a version is never measured only while the machine is busier or quieter than for the others. Each
# round runs, per version, BENCH=tiles with tileserver-ts alone (req/s and server CPU per request, hot tile and
# spread) and, unless BENCH_NODE_BROWSE=0, the browse bench with 4 users on a cold server (server CPU per distinct
# rendered tile, browsers included). bench/node-versions.ts prints one table of them all at the end.
#   BENCH_NODE_VERSIONS  the versions, "machine 22 24 26" (machine: the Node.js on PATH, the one `make test` uses)
#   BENCH_NODE_ROUNDS    rounds (2)
#   BENCH_NODE_BROWSE    1 (default) or 0
# Each NODE= version is fetched and installed as `make test NODE=` does (docs/testing.md); the first run of a
# version compiles its native modules (minutes). The logs stay in .tmp/node-versions/.
set -eu
cd "$(dirname "$0")/.."
versions=${BENCH_NODE_VERSIONS:-machine 22 24 26}
rounds=${BENCH_NODE_ROUNDS:-2}
browse=${BENCH_NODE_BROWSE:-1}
case "$rounds" in '' | *[!0-9]*) echo "bench-node-versions: BENCH_NODE_ROUNDS must be a whole number, not '$rounds'" >&2; exit 2 ;; esac
out=.tmp/node-versions
rm -rf "$out"
mkdir -p "$out"
# Installs and builds first, outside the measured rounds (a version's first install compiles for minutes).
for v in $versions; do
  if [ "$v" = machine ]; then make --no-print-directory build >/dev/null; else make --no-print-directory build NODE="$v" >/dev/null; fi
done
round=1
while [ "$round" -le "$rounds" ]; do
  for v in $versions; do
    if [ "$v" = machine ]; then sel=""; else sel="NODE=$v"; fi
    echo "round $round, Node.js $v: BENCH=tiles"
    # shellcheck disable=SC2086 # $sel is empty or one word
    make --no-print-directory bench $sel BENCH=tiles BENCH_TILE_SERVERS=ts >"$out/tiles-$v-$round.log" 2>&1 ||
      { tail -20 "$out/tiles-$v-$round.log" >&2; exit 1; }
    cp bench/data/tiles-bench.json "$out/tiles-$v-$round.json"
    if [ "$browse" = 1 ]; then
      echo "round $round, Node.js $v: BENCH=browse, 4 users"
      # shellcheck disable=SC2086
      make --no-print-directory bench $sel BENCH=browse BENCH_BROWSE_USERS=4 BENCH_BROWSE_FLOOR=0 BENCH_BROWSE_STATIC=0 \
        >"$out/browse-$v-$round.log" 2>&1 || { tail -20 "$out/browse-$v-$round.log" >&2; exit 1; }
    fi
  done
  round=$((round + 1))
done
# Back to the machine's own node_modules before the summary runs on the machine's Node.js.
scripts/node-select.sh
node --import tsx bench/node-versions.ts "$out"
