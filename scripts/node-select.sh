#!/bin/sh
# Points the tree's node_modules at the packages built for the Node.js that make runs with (Makefile, NODE=).
# The native modules (gdal-async, better-sqlite3) are built for one Node ABI, so each version fetched into
# .node/VERSION/ has a node_modules of its own there, and node_modules becomes a symlink to it. Whatever stood at
# node_modules before (the machine's own install, a directory) is parked in .node/machine/ and put back, moved
# not copied, when make runs without NODE=, so plain `make test` finds exactly the tree it had.
#   scripts/node-select.sh 24    node_modules -> .node/24/node_modules
#   scripts/node-select.sh       node_modules as it was before any NODE= run
# Prints nothing when all is well (the Makefile calls it while reading itself and stops on any output).
set -eu
cd "$(dirname "$0")/.."
version=${1:-}
parked=.node/machine/node_modules
# A link this script made: the only kind it removes.
ours() { [ -L node_modules ] && case "$(readlink node_modules)" in .node/*) true ;; *) false ;; esac; }
if [ -n "$version" ]; then
  target=.node/$version/node_modules
  if ours; then
    [ "$(readlink node_modules)" = "$target" ] && exit 0
    rm node_modules
  elif [ -e node_modules ] || [ -L node_modules ]; then
    if [ -e "$parked" ] || [ -L "$parked" ]; then echo "node-select: both node_modules and $parked exist; move one away" >&2; exit 1; fi
    mkdir -p .node/machine
    mv node_modules "$parked"
  fi
  ln -s "$target" node_modules
else
  ours || exit 0
  rm node_modules
  if [ -e "$parked" ] || [ -L "$parked" ]; then mv "$parked" node_modules; fi
fi
