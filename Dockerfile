# The tileserver-ts image. Build: `podman build -t tileserver-ts .` (or `docker build`); docs/deployment.md.
# BASE is any Debian 13 image with Node.js 26 (the active LTS line; 22 and 24 work too, docs/deployment.md)
# and npm on the PATH: the default is the public Node image; where no registry
# is reachable, scripts/image-base.sh makes one from Debian's packages and the Node project's build of Node 26.
# Debian 13 rather than 12: the stable release, while Debian 12 left Debian's regular security support in mid-2026;
# its Mesa 25 draws a tile at Debian 12's cost within the noise (docs/rendering.md, "Debian 12 or 13").
ARG BASE=docker.io/library/node:26-trixie-slim

# What the service needs at run time, shared by both stages so apt fetches these packages once: Chromium (the
# renderer), Mesa's Vulkan drivers (lavapipe, the GL stack Chromium draws with through ANGLE; SwiftShader is the
# fallback inside Chromium), libgdal (rasters; gdal-async links it) and DejaVu (the labels of static-map markers
# name it first; fontconfig would pull it in anyway, listed so that a change there cannot drop it), Noto and Droid
# Sans Fallback (labels in Devanagari, Thai and CJK, which the renderer draws with the machine's fonts).
FROM ${BASE} AS runtime-base
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates chromium mesa-vulkan-drivers libvulkan1 libgdal36 fonts-dejavu-core fonts-noto-core fonts-droid-fallback \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log

# The build stage adds the compilers and headers, installs every npm package, compiles the native modules that
# need it (gdal-async against Debian's libgdal, better-sqlite3), bundles dist/ and builds the world map archive.
# gdal-async linked to the shared libgdal needs only GDAL's own headers and gdal-config (its flags), which the
# libgdal-dev package holds: that package is unpacked rather than installed, since installing it pulls in the
# headers of every library GDAL links (about a hundred packages, there for linking GDAL statically), which took
# most of this stage's time and which nothing here includes. Its version is the installed libgdal's (one archive).
FROM runtime-base AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && cd /tmp && apt-get download -q libgdal-dev && dpkg -x libgdal-dev_*.deb / && rm libgdal-dev_*.deb \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# npm trusts the system's certificate authorities (those of the base, with any added to it) rather than only its own.
ENV npm_config_cafile=/etc/ssl/certs/ca-certificates.crt
COPY package.json package-lock.json ./
COPY scripts/patch-gdal-async.mjs ./scripts/
# One step installs the packages, compiles the native modules and removes what those compiles leave (the GDAL and
# SQLite sources, the objects) and npm's download cache: a step's layer is written out whole when the step ends
# (55 s for the 951 MB of npm ci alone, on this two-core machine under load), so nothing deleted later should be
# kept in one. gdal-async's sources are edited before they compile so that a Node.js 26 base builds them (the
# script says why). node-gyp compiles against the headers beside the running node (no download), with every core
# (JOBS); sharp and esbuild bring their binaries as npm packages, so their install scripts only check them.
RUN npm ci --no-audit --no-fund --ignore-scripts \
 && export npm_config_nodedir="$(dirname "$(dirname "$(command -v node)")")" JOBS=max \
 && node scripts/patch-gdal-async.mjs \
 && npm_config_build_from_source=true npm_config_shared_gdal=true npm rebuild gdal-async better-sqlite3 \
 && npm rebuild esbuild sharp \
 && rm -rf node_modules/gdal-async/deps node_modules/gdal-async/src node_modules/gdal-async/build \
       node_modules/better-sqlite3/deps node_modules/better-sqlite3/src node_modules/better-sqlite3/build/Release/obj* \
       node_modules/better-sqlite3/build/Release/*.a node_modules/better-sqlite3/build/Release/test_extension.node \
       /root/.npm /root/.cache
COPY tsconfig.json ./
COPY scripts ./scripts
COPY workers ./workers
COPY src ./src
COPY wasm ./wasm
RUN node scripts/build.mjs && node --import tsx scripts/build-world-data.ts
# Only what runs: no dev packages (the native builds' sources and objects went with the step that made them).
RUN npm prune --omit=dev --no-audit --no-fund && rm -rf /root/.npm /root/.cache

FROM runtime-base
# A fixed uid (not root) that a volume's owner can be matched to; the entries are written directly since a
# minimal base may have no useradd.
RUN echo 'tileserver:x:10001:10001:tileserver-ts:/home/tileserver:/usr/sbin/nologin' >> /etc/passwd \
 && echo 'tileserver:x:10001:' >> /etc/group \
 && mkdir -p /home/tileserver /data /config \
 && chown 10001:10001 /home/tileserver
WORKDIR /app
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY --from=build /src/fixtures/world ./fixtures/world
# The expiry trigger an operator installs in the database (docs/live-data.md): psql -f /app/sql/expire-trigger.sql
COPY sql ./sql
# The bundled demo data of `make run`, served when neither /config/config.toml nor archives in /data are given.
COPY config/default.toml ./config/
COPY fixtures/fonts ./fixtures/fonts
COPY fixtures/files ./fixtures/files
COPY fixtures/styles/osm-liberty ./fixtures/styles/osm-liberty
COPY fixtures/vector/omt-planet-z0-1.pmtiles fixtures/vector/world_cities.mbtiles ./fixtures/vector/
COPY fixtures/raster/natural-earth-png-z0-1.pmtiles fixtures/raster/geography-class-jpg.mbtiles ./fixtures/raster/
COPY deploy/image/entrypoint.sh /usr/local/bin/tileserver-ts-entrypoint
# gdal-async refuses to load without GDAL's and PROJ's data files: it looks for its own bundled copies (deleted
# above with its sources) unless these name others, here Debian's (gdal-data and proj-data, libgdal36's dependencies).
ENV NODE_ENV=production HOME=/home/tileserver CHROMIUM_PATH=/usr/lib/chromium/chromium GDAL_DATA=/usr/share/gdal PROJ_LIB=/usr/share/proj
USER 10001:10001
EXPOSE 8080
# Docker and podman (with --format docker) run it; Kubernetes uses its own probes (deploy/k8s/).
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:8080/health',{signal:AbortSignal.timeout(4000)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# SIGTERM drains: the server stops accepting, finishes the requests under way and exits 0.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/tileserver-ts-entrypoint"]
