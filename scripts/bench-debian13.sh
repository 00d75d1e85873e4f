#!/bin/sh
# `make bench-debian13`: the renderer's floor (bench/floor.bench.ts) on this machine (Debian 12: Mesa 22.3 and
# bookworm's Chromium) and in a Debian 13 container (trixie: Mesa 25 and trixie's Chromium), per GL stack and
# llvmpipe thread setting, the runs of the two releases alternated (host, container, host, container, ...) so that
# a neighbour's load falls on both alike; then one table of every run and the container's cost against the host's.
#
# The container: the trixie minbase of `make test-debian13` (scripts/image-base.sh, built once), on which the
# committed HEAD (`git archive`) runs the project's own `make bench BENCH=floor` (which installs trixie's
# packages and the npm packages itself). That first run is kept as an image, tagged by what it installed
# (package-lock.json and the Makefile's package lists), so later runs start from it: each unpacks the committed
# HEAD afresh, takes over the kept node_modules, world data and bench data, and runs `make bench BENCH=floor`
# again. On the host the floor runs as `make bench BENCH=floor` runs it after its builds (node bench/floor.bench.ts:
# this script does not install anything on the host).
#
# Settings (environment):
#   VARIANTS   "stack:threads ..." (default "lavapipe:0 lavapipe:1 lavapipe:2 egl:0 egl:2 swiftshader"); threads is
#              LP_NUM_THREADS, Mesa's llvmpipe rasteriser threads (lavapipe and egl; "-" leaves the service's
#              default), ignored by swiftshader
#   ROUNDS     runs of each variant on each release (default 2; 0 only prepares the images)
#   BENCH_BROWSE_USERS, BENCH_BROWSE_DATA, BENCH_BROWSE_SEED, BENCH_FLOOR_PAGES: the floor's workload (defaults 4,
#              dortmund, 1, 2: bench/floor.bench.ts, as bench/RESULTS.md quotes the floor); the same on both releases
#   RELEASES   "host trixie" (default), or one of them alone (e.g. to measure the stacks on this machine only)
#   ROWS       the file the runs are added to (default .tmp/bench-debian13/rows.jsonl, emptied first; APPEND=1 keeps it)
#   REBUILD=1  rebuilds the trixie base image; PREPARE=1 makes the prepared image again
# Every run's output is kept under .tmp/bench-debian13/ (run-N-host|trixie-stack-threads.log, rows.jsonl).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
base=localhost/tsts-test:trixie-node20
out="$root/.tmp/bench-debian13"
mkdir -p "$out"
# The podman set-up shared with the image tests (scripts/podman-env.sh): sets podman_flags and CONTAINERS_CONF.
. "$root/scripts/podman-env.sh"
variants=${VARIANTS:-lavapipe:0 lavapipe:1 lavapipe:2 egl:0 egl:2 swiftshader}
rounds=${ROUNDS:-2}
users=${BENCH_BROWSE_USERS:-4}
data=${BENCH_BROWSE_DATA:-dortmund}
seed=${BENCH_BROWSE_SEED:-1}
pages=${BENCH_FLOOR_PAGES:-2}
releases=${RELEASES:-host trixie}
for v in $variants; do
  case "${v%%:*}" in lavapipe|egl|swiftshader) ;; *) echo "bench-debian13: unknown GL stack in VARIANTS: $v" >&2; exit 2 ;; esac
done

case " $releases " in *" trixie "*) need_container=1 ;; *) need_container= ;; esac
# The base of `make test-debian13`, with the same arguments (the machine's Node, as the host runs the floor with).
[ -z "$need_container" ] || NODE=machine RELEASE=trixie INCLUDE=make "$root/scripts/image-base.sh" "$base"
git -C "$root" archive --format=tar -o "$out/src.tar" HEAD
key=$( (cat "$root/package-lock.json"; grep -E '^(BENCH_)?APT_PACKAGES' "$root/Makefile") | sha256sum | cut -c1-12)
prepared=localhost/tsts-bench:trixie-$key

# One container run of `make bench BENCH=floor` with the variant's settings; $1: the image, $2: the commands
# before it (unpacking), $3: the log, $4: stack, $5: threads; further arguments go to `podman run` before the image.
# --privileged and the 2 GB /dev/shm as in test-debian13.sh (Chromium as root, its frames shared through /dev/shm);
# host networking (apt and npm reach their mirrors as this machine does).
in_container() {
  image=$1 prelude=$2 log=$3 stack=$4 threads=$5
  shift 5
  # shellcheck disable=SC2086
  podman $podman_flags run --privileged --network host --shm-size 2g "$@" \
    -v "$out/src.tar:/src.tar:ro" \
    -e NODE_EXTRA_CA_CERTS="${NODE_EXTRA_CA_CERTS:-}" \
    -e npm_config_cafile="$(npm config get cafile 2>/dev/null | grep -v '^null$' || true)" \
    -e npm_config_nodedir="$(npm config get nodedir 2>/dev/null | grep -v '^null$\|^undefined$' || true)" \
    -e BENCH_FLOOR_GL="$stack" -e LP_NUM_THREADS="$threads" \
    -e BENCH_BROWSE_USERS="$users" -e BENCH_BROWSE_DATA="$data" -e BENCH_BROWSE_SEED="$seed" -e BENCH_FLOOR_PAGES="$pages" \
    "$image" /bin/sh -c '
      set -e
      for v in NODE_EXTRA_CA_CERTS npm_config_cafile npm_config_nodedir LP_NUM_THREADS; do
        eval "[ -n \"\${$v}\" ]" || unset "$v"
      done
      '"$prelude"'
      echo "versions: $(dpkg-query -W -f "\${Package} \${Version}, " mesa-vulkan-drivers libegl-mesa0 chromium)node $(node --version)"
      make bench BENCH=floor
    ' > "$log" 2>&1
}

if [ -n "$need_container" ] && { [ "${PREPARE:-}" = 1 ] || ! podman $podman_flags image exists "$prepared"; }; then
  echo "bench-debian13: preparing $prepared (trixie's packages and the npm packages, installed by make bench; minutes)"
  name=tsts-bench-prepare-$$
  podman $podman_flags rm --force --ignore "$name" >/dev/null
  if ! in_container "$base" 'mkdir /src && tar -C /src -xf /src.tar && cd /src' "$out/prepare.log" lavapipe '' --name "$name" \
    || ! grep -q '^floor-row: ' "$out/prepare.log"; then
    podman $podman_flags rm --force --ignore "$name" >/dev/null
    tail -n 30 "$out/prepare.log"
    echo "bench-debian13: preparing the container failed (log: $out/prepare.log)" >&2
    exit 1
  fi
  podman $podman_flags commit --quiet "$name" "$prepared" >/dev/null
  podman $podman_flags rm "$name" >/dev/null
fi

# The committed HEAD in a fresh directory, with what the prepared image built: make then finds node_modules current
# (the tag says it was installed from this package-lock.json; the archive's files carry the commit's time).
fresh='mkdir /bench-src && tar -C /bench-src -xf /src.tar && mv /src/node_modules /bench-src/ && mkdir -p /bench-src/fixtures /bench-src/bench && mv /src/fixtures/world /bench-src/fixtures/ && mv /src/bench/data /bench-src/bench/ && touch /bench-src/node_modules/.installed && cd /bench-src'

# ROUNDS=0: only build (or find) the images.
[ "$rounds" -gt 0 ] || { echo "bench-debian13: $prepared is ready"; exit 0; }
rows=${ROWS:-$out/rows.jsonl}
[ "${APPEND:-}" = 1 ] || : > "$rows"
host_versions="versions: $(dpkg-query -W -f '${Package} ${Version}, ' mesa-vulkan-drivers libegl-mesa0 chromium)node $(node --version)"
echo "bench-debian13: $(git -C "$root" rev-parse --short HEAD), ${rounds} round(s) of: $variants; floor of $users user(s), $data, $pages page(s); logs in $out"
for round in $(seq 1 "$rounds"); do
  for v in $variants; do
    stack=${v%%:*}
    threads=${v#*:}
    [ "$threads" = "$v" ] || [ "$threads" = - ] && threads=''
    [ "$stack" = swiftshader ] && threads=''
    for release in $releases; do
      log="$out/run-$round-$release-$stack-${threads:-default}.log"
      if [ "$release" = host ]; then
        ( cd "$root" && echo "$host_versions" && BENCH_FLOOR_GL=$stack LP_NUM_THREADS=$threads BENCH_BROWSE_USERS=$users BENCH_BROWSE_DATA=$data \
            BENCH_BROWSE_SEED=$seed BENCH_FLOOR_PAGES=$pages sh -c '[ -n "$LP_NUM_THREADS" ] || unset LP_NUM_THREADS; exec node --import tsx bench/floor.bench.ts' ) > "$log" 2>&1 || true
      else
        in_container "$prepared" "$fresh" "$log" "$stack" "$threads" --rm || true
      fi
      row=$(sed -n 's/^floor-row: //p' "$log" | tail -n 1)
      versions=$(sed -n 's/^versions: //p' "$log" | head -n 1)
      if [ -n "$row" ]; then
        printf '{"round":%s,"release":"%s","versions":"%s","row":%s}\n' "$round" "$release" "$versions" "$row" >> "$rows"
        echo "  round $round, $release, $stack ${threads:+LP_NUM_THREADS=$threads}: $(grep -o 'CPU per tile [0-9.,]* ms' "$log" | tail -n 1)"
      else
        printf '{"round":%s,"release":"%s","versions":"%s","failed":"%s %s","log":"%s"}\n' "$round" "$release" "$versions" "$stack" "$threads" "$log" >> "$rows"
        echo "  round $round, $release, $stack ${threads:+LP_NUM_THREADS=$threads}: FAILED (log: $log)"
      fi
    done
  done
done
node --import tsx "$root/bench/floor-compare.ts" "$rows"
