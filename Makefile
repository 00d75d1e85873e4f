# tileserver-ts: `make run` and `make test` work on a fresh Debian machine with Node 20 (the machine's own), and on
# any other Node.js with NODE=22, 24 or 26 (below).
SHELL := /bin/bash
.DEFAULT_GOAL := run
CONFIG ?= config/default.toml

# Debian packages the service and its tests need: GDAL (gdal-async links the system library, gdalinfo opens
# our WMTS in a test), Chromium (the rendering backend and browser tests), sqlite3 headers for better-sqlite3,
# wrk (load generator of bench/metrics.bench.ts: autocannon saturates before the server on a hot tile),
# PostgreSQL + PostGIS (the database source tests start a throwaway cluster; `postgresql` and `postgresql-postgis`
# are Debian's metapackages for the release's default version: 15 with PostGIS 3.3 on Debian 12, 17 with PostGIS
# 3.5 on Debian 13, so one list serves both; test/helpers/postgres.ts finds the version installed), Mesa's Vulkan drivers (lavapipe, the
# fastest software GL stack under the Chromium renderer: render.gl), libegl1 and libegl-mesa0 (the `egl` stack: ANGLE
# on Mesa's EGL; Debian 12 pulls them in through libgdal-dev, Debian 13 does not, and Chromium then falls back to
# SwiftShader), openssl (certificates for the PostGIS TLS tests),
# redis-server (the fleet's shared render cache in the tests and the fleet bench), python3, make and g++ (node-gyp
# building the native modules), bsdutils (script(1): the seed test runs the command on a pseudo-terminal; essential
# on Debian, listed so the dependency is said), podman with runc, netavark and aardvark-dns (netavark runs iptables to
# set up a container network: a build step with network access fails with "netavark: No such file or directory"
# without it), podman-compose and mmdebstrap (the container image and compose fleet of test/image.test.ts, built over a Debian base made by
# scripts/image-base.sh). varnish and varnish-modules (its xkey vmod): the edge cache the expiry purge tests put in
# front of the server (test/expire-edge.test.ts, deploy/varnish/tiles.vcl). The object-storage tests' S3 and Azure servers come from npm. fonts-noto-core (Noto Sans
# Devanagari, Thai, Arabic, Hebrew and most other scripts; 42 MB installed) and fonts-droid-fallback (CJK; 7 MB, where
# fonts-noto-cjk takes 91 MB): the renderer's MapLibre draws CJK and the scripts it shapes as grapheme clusters
# (Devanagari, Thai, ...) with the machine's fonts, not from glyph PBFs (docs/styles.md, "Scripts").
APT_PACKAGES := libgdal-dev gdal-bin chromium sqlite3 libsqlite3-dev python3 make g++ postgresql postgresql-postgis wrk mesa-vulkan-drivers libvulkan1 libegl1 libegl-mesa0 openssl redis-server bsdutils podman runc netavark aardvark-dns iptables podman-compose mmdebstrap fonts-noto-core fonts-droid-fallback varnish varnish-modules

.PHONY: run test test-image test-debian13 bench bench-debian13 bench-node-versions build deps system-deps fixtures typecheck clean goldens

# NODE=24 (or 22, 26, or an exact release such as 24.11.1) runs every target on that Node.js instead of the
# machine's: scripts/node-fetch.sh puts it in .node/24/, its bin/ goes first on the PATH of every recipe (so each
# `node`, npm and npx, and every process the suite and the server spawn with process.execPath, is that one), and
# its packages are installed and their native modules built for its ABI in .node/24/node_modules, which
# scripts/node-select.sh links as the tree's node_modules (docs/testing.md, "Other Node.js versions"). Without
# NODE, node_modules is the tree's own as it always was. npm's scripts set NODE to the path of node: a value with
# a slash is that, not a version.
ifneq ($(findstring /,$(NODE)),)
override NODE :=
endif
NODE_SELECTED := $(shell scripts/node-select.sh $(NODE) 2>&1)
ifneq ($(NODE_SELECTED),)
$(error $(NODE_SELECTED))
endif
ifneq ($(NODE),)
NODE_DIR := $(CURDIR)/.node/$(NODE)
export PATH := $(NODE_DIR)/bin:$(PATH)
# node-gyp (the native modules, the bench peer's sqlite3) compiles against the headers that came with that Node.
export npm_config_nodedir := $(NODE_DIR)
INSTALLED := $(NODE_DIR)/node_modules/.installed
else
INSTALLED := node_modules/.installed
endif

system-deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y --no-install-recommends $$missing; \
	fi

# Install without scripts first, then build the native modules the way this machine needs them:
# gdal-async against Debian's libgdal (its sources edited first so they compile on Node.js 26 too:
# scripts/patch-gdal-async.mjs), better-sqlite3 from source when no prebuilt binary can be fetched.
node_modules/.installed: package-lock.json scripts/patch-gdal-async.mjs | system-deps
	npm install --no-audit --no-fund --ignore-scripts
	node scripts/patch-gdal-async.mjs
	npm_config_build_from_source=true npm_config_shared_gdal=true npm rebuild gdal-async better-sqlite3
	npm rebuild esbuild sharp
	touch $@

# The same for NODE=VERSION, in .node/VERSION beside that Node (npm installs where package.json is, so a copy of
# it and of the lock file go there), compiled against the headers that came with it (no download).
# `npm ci` runs on that Node, so its engine check is that version's.
ifneq ($(NODE),)
$(NODE_DIR)/bin/node:
	scripts/node-fetch.sh $(NODE)

$(INSTALLED): package-lock.json scripts/patch-gdal-async.mjs $(NODE_DIR)/bin/node | system-deps
	cp package.json package-lock.json $(NODE_DIR)/
	cd $(NODE_DIR) && npm ci --no-audit --no-fund --ignore-scripts
	node scripts/patch-gdal-async.mjs $(NODE_DIR)/node_modules
	cd $(NODE_DIR) && npm_config_build_from_source=true npm_config_shared_gdal=true npm rebuild gdal-async better-sqlite3 && npm rebuild esbuild sharp
	touch $@
endif

deps: system-deps $(INSTALLED)

# The world map `make run` serves (Natural Earth z0-6 from the world-atlas npm package; a few seconds, 1.3 MB).
WORLD_DATA := fixtures/world/natural-earth-z0-6.pmtiles
$(WORLD_DATA): scripts/build-world-data.ts scripts/build-bench-data.ts | $(INSTALLED)
	node --import tsx scripts/build-world-data.ts --force

build: deps $(WORLD_DATA)
	node scripts/build.mjs

typecheck: deps
	npx tsc --noEmit

run: build
	node dist/cli.js --config $(CONFIG)

# The test files `make test` runs: every test/*.test.ts but those named in TEST_EXCLUDE (space-separated paths,
# e.g. `make test TEST_EXCLUDE=test/image.test.ts` where podman cannot run); TEST_FILES=... runs only those.
TEST_EXCLUDE ?=
TEST_FILES ?= $(filter-out $(TEST_EXCLUDE),$(wildcard test/*.test.ts))

test: build
	npx tsc --noEmit
	node --import tsx --test --test-concurrency=1 --test-reporter=spec $(TEST_FILES)

# The container image and the compose fleet, built and run with podman (test/image.test.ts; docs/deployment.md).
# `make test` runs the same file with the others (test/*.test.ts).
test-image: deps
	node --import tsx --test --test-concurrency=1 --test-reporter=spec test/image.test.ts

# `make test` on a fresh Debian 13 (trixie) in a podman container, from the committed HEAD, the image test
# excepted (scripts/test-debian13.sh; about an hour on two cores, so not part of `make test`). Needs podman and
# mmdebstrap, which `make test` installs.
test-debian13: system-deps
	scripts/test-debian13.sh

# Rewrites the golden images of the rendering tests (test/goldens/render) from this machine's renders; review
# the new images before committing them.
goldens: build
	UPDATE_GOLDENS=1 node --import tsx --test test/render-routes.test.ts test/terrain-render.test.ts test/render-languages.test.ts

# wrk measures large bodies (raster tiles) where autocannon saturates first (bench/postgis.bench.ts); nginx serves
# the stored tiles as files, the machine's limit that bench/stored.bench.ts measures tileserver-ts against.
BENCH_APT_PACKAGES := wrk nginx

bench: build
	@missing=""; for p in $(BENCH_APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y --no-install-recommends $$missing; \
	fi
	node --import tsx scripts/build-bench-data.ts
	node --import tsx bench/run.ts

# The renderer's floor (BENCH=floor) on this machine and in a Debian 13 container (Mesa 25, trixie's Chromium), per
# GL stack and llvmpipe thread setting, runs alternated, one table at the end (scripts/bench-debian13.sh; its
# header lists the settings). BENCH names the bench the container runs; only floor is compared.
bench-debian13: system-deps
	@[ "$${BENCH:-floor}" = floor ] || { echo "bench-debian13 compares BENCH=floor only" >&2; exit 2; }
	scripts/bench-debian13.sh

# BENCH=tiles (tileserver-ts alone) and the 4-user browse on each Node.js version, in alternating rounds, one table
# at the end (scripts/bench-node-versions.sh: BENCH_NODE_VERSIONS, BENCH_NODE_ROUNDS, BENCH_NODE_BROWSE).
bench-node-versions: system-deps
	scripts/bench-node-versions.sh

# Also the Node.js releases of NODE= and their packages (.node/).
clean:
	scripts/node-select.sh
	rm -rf dist node_modules .node
