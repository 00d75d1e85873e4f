#!/bin/sh
# The image's entry point. With arguments, they go to the CLI as they are (`--config FILE`, archives, --help).
# Without: /config/config.toml when it exists, else every archive in /data (the CLI's folder mode) when there is
# one, else the bundled demo configuration. `exec` leaves node as the process that receives SIGTERM.
set -eu
cli=/app/dist/cli.js
if [ "$#" -gt 0 ]; then exec node "$cli" "$@"; fi
if [ -f /config/config.toml ]; then exec node "$cli" --config /config/config.toml; fi
for f in /data/*.pmtiles /data/*.mbtiles; do
  if [ -f "$f" ]; then exec node "$cli" --host 0.0.0.0 --port 8080 /data; fi
done
exec node "$cli" --config /app/config/default.toml
