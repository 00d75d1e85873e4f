#!/bin/sh
# Builds a Debian base image with Node.js in it, for building the image where no image registry is reachable:
# `scripts/image-base.sh localhost/tsts-base:trixie-node26`, then
# `podman build --build-arg BASE=localhost/tsts-base:trixie-node26 .`. Needs mmdebstrap and podman; the Debian
# mirror and the npm registry must be reachable. Nothing is done when the tag exists already (REBUILD=1 builds it
# again).
# NODE picks the Node.js: a version (default 26, the image's: docs/deployment.md) is the Node project's build of
# it from the npm registry (scripts/node-fetch.sh, kept in .node/), laid out as the public Node images have it
# (/usr/local/bin/node, its headers in /usr/local/include/node, npm in /usr/local/lib/node_modules), with this
# machine's npm; NODE=machine takes the machine's installed `nodejs` package instead (Debian's Node 20:
# `make test-debian13` builds a fresh Debian 13 as the README's user has it).
# RELEASE (default trixie, Debian 13: the image's release, docs/deployment.md) picks the Debian release and INCLUDE
# adds packages (comma-separated): `make test-debian13` builds its Debian 13 machine with NODE=machine
# RELEASE=trixie INCLUDE=make (scripts/test-debian13.sh).
# NODE=no leaves Node out, for an image that only runs a client (test/owslib-edits.test.ts: trixie's OWSLib).
set -eu
tag=${1:?usage: [NODE=24|machine|no] [RELEASE=bookworm] [INCLUDE=pkg,pkg] scripts/image-base.sh TAG}
node=${NODE:-26}
release=${RELEASE:-trixie}
include=ca-certificates${INCLUDE:+,$INCLUDE}
if [ "${REBUILD:-}" != 1 ] && podman image exists "$tag"; then echo "base image $tag exists"; exit 0; fi
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ "$node" = machine ]; then
  node_version=$(dpkg-query -W -f '${Version}' nodejs 2>/dev/null) || { echo "image-base: the nodejs package is not installed" >&2; exit 1; }
  # The installed package's files (as `dpkg-repack nodejs` would pack them, without compressing 190 MB), unpacked
  # into the base rather than installed: the package depends on python3, which the service does not need (the
  # official Node images also carry Node outside dpkg). npm is taken as it is on disk, since `npm install -g npm`
  # may have replaced the packaged one.
  dpkg-query -L nodejs | while IFS= read -r f; do
    case "$f" in /usr/lib/node_modules/npm/*|/usr/share/*) continue ;; esac
    if [ -L "$f" ] || [ -f "$f" ]; then printf '%s\n' "${f#/}"; fi
  done > "$work/files"
  echo usr/lib/node_modules/npm >> "$work/files"
  tar -C / -cf "$work/node.tar" -T "$work/files"
elif [ "$node" = no ]; then
  # No Node: an empty archive, so that the unpacking hook below stays one and the same.
  tar -cf "$work/node.tar" -T /dev/null
  node_version=none
else
  "$root/scripts/node-fetch.sh" "$node"
  npm_dir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
  node_version=$("$root/.node/$node/bin/node" --version)
  mkdir -p "$work/root/usr/local/bin" "$work/root/usr/local/include" "$work/root/usr/local/lib/node_modules"
  cp "$root/.node/$node/bin/node" "$work/root/usr/local/bin/"
  cp -r "$root/.node/$node/include/node" "$work/root/usr/local/include/"
  cp -r "$npm_dir" "$work/root/usr/local/lib/node_modules/npm"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$work/root/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$work/root/usr/local/bin/npx"
  tar -C "$work/root" -cf "$work/node.tar" usr
  # The Node project's builds from 26 on link libatomic, which a minbase lacks.
  include=$include,libatomic1
fi
# The base trusts what this machine trusts: certificate authorities added locally (an egress proxy that re-signs
# TLS, a company CA) go in too, so that npm in the build reaches the registry the way it does here.
mkdir "$work/ca"
for crt in /usr/local/share/ca-certificates/*.crt; do if [ -f "$crt" ]; then cp "$crt" "$work/ca/"; fi; done
mmdebstrap --quiet --variant=minbase --include="$include" \
  --customize-hook="tar -C \"\$1\" -xf '$work/node.tar'" \
  --customize-hook="cp -r '$work/ca/.' \"\$1/usr/local/share/ca-certificates/\" && chroot \"\$1\" update-ca-certificates >/dev/null" \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
  "$release" "$work/base.tar"
podman import --quiet --change 'CMD ["/bin/bash"]' --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' "$work/base.tar" "$tag" >/dev/null
echo "base image $tag built (Debian $release minbase, Node $node_version)"
