#!/bin/sh
# `make test-debian13`: runs the README's `make test` on a fresh Debian 13 (trixie), to show that the Makefile
# installs what trixie calls its packages and that the suite passes with trixie's tools (PostgreSQL 17,
# GDAL 3.10, ...). A trixie minbase with this machine's Node 20 and make (what the README asks of a fresh
# machine) is built once by scripts/image-base.sh (mmdebstrap; REBUILD=1 builds it again); every run starts a new
# container of it, unpacks the committed HEAD there (`git archive`: no untracked file, no node_modules, no dist
# of this checkout) and runs `make test` in it, which installs the Debian and npm packages itself.
# The image test and the OWSLib test are left out (TEST_EXCLUDE): they run podman inside podman. TEST_FILES="test/a.test.ts ..." runs
# only those files there (after the same installs), to check fixes without a full run. The log is kept in
# .tmp/debian13/test.log; the last lines say how many tests ran and passed, and how long it took.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
tag=localhost/tsts-test:trixie-node20
out="$root/.tmp/debian13"
mkdir -p "$out"
# The podman set-up shared with the image tests (scripts/podman-env.sh): sets podman_flags and CONTAINERS_CONF.
. "$root/scripts/podman-env.sh"
NODE=machine RELEASE=trixie INCLUDE=make "$root/scripts/image-base.sh" "$tag"
git -C "$root" archive --format=tar -o "$out/src.tar" HEAD
echo "test-debian13: testing $(git -C "$root" rev-parse --short HEAD) in a new Debian 13 container (log: $out/test.log)"
# --privileged: the tests run as root and expect what root has on a real machine (Chromium's namespaces, taskset,
# /proc of other users' processes, PostgreSQL's shared memory). Host networking: apt and npm reach their mirrors the
# way this machine does; the servers the tests start take free ports on the shared loopback, as they do beside
# any other run here. A 2 GB /dev/shm: Chromium shares its frames through it, and podman's default is 64 MB.
# NODE_EXTRA_CA_CERTS and npm's cafile and nodedir are passed on when this machine sets them: where TLS goes
# through a re-signing proxy, and node-gyp cannot download Node's headers, the container needs the same.
start=$(date +%s)
set +e
# shellcheck disable=SC2086
podman $podman_flags run --rm --privileged --network host --shm-size 2g \
  -v "$out/src.tar:/src.tar:ro" \
  -e NODE_EXTRA_CA_CERTS="${NODE_EXTRA_CA_CERTS:-}" \
  -e npm_config_cafile="$(npm config get cafile 2>/dev/null | grep -v '^null$' || true)" \
  -e npm_config_nodedir="$(npm config get nodedir 2>/dev/null | grep -v '^null$\|^undefined$' || true)" \
  -e FC_SEED="${FC_SEED:-}" \
  -e TEST_FILES="${TEST_FILES:-}" \
  "$tag" /bin/sh -c '
    set -e
    # An empty variable is not the same as an unset one to npm and Node: drop the ones this machine did not set.
    for v in NODE_EXTRA_CA_CERTS npm_config_cafile npm_config_nodedir FC_SEED TEST_FILES; do
      eval "[ -n \"\${$v}\" ]" || unset "$v"
    done
    mkdir /src && tar -C /src -xf /src.tar && cd /src
    make test TEST_EXCLUDE="test/image.test.ts test/owslib-edits.test.ts"
  ' > "$out/test.log" 2>&1
code=$?
set -e
end=$(date +%s)
tail -n 12 "$out/test.log"
echo "test-debian13: make test exited $code after $(( (end - start) / 60 )) min $(( (end - start) % 60 )) s (log: $out/test.log)"
exit $code
