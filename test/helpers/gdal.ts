// The GDAL command-line tools (Debian's gdal-bin) as the tests' GIS client, and their version: Debian 12 ships
// GDAL 3.6, Debian 13 GDAL 3.10, and some of what the OGCAPI driver does differs between them (docs/ogc.md,
// GDAL). A test of such a behaviour checks the one the installed GDAL has and says which in its name; it never
// skips.
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';

/** Runs a GDAL tool to its end; a tool that cannot be started at all fails the test, naming the package. */
export function gdalTool(cmd: string, args: string[]): SpawnSyncReturns<string> {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 90_000 });
  if (r.error) throw new Error(`${cmd} could not run (Debian package gdal-bin; run make test): ${r.error.message}`);
  return r;
}

export interface GdalVersion {
  major: number;
  minor: number;
  /** As gdalinfo prints it, e.g. "3.6.2". */
  text: string;
}

/** The version of the installed gdal-bin, from `gdalinfo --version` ("GDAL 3.6.2, released 2023/01/02"). */
export function gdalVersion(): GdalVersion {
  const r = gdalTool('gdalinfo', ['--version']);
  const m = /^GDAL (\d+)\.(\d+)(\.\d+)?/.exec(r.stdout);
  if (!m) throw new Error(`gdalinfo --version printed no version: ${r.stdout}${r.stderr}`);
  return { major: Number(m[1]), minor: Number(m[2]), text: `${m[1]}.${m[2]}${m[3] ?? ''}` };
}

/**
 * Whether this GDAL's OGCAPI driver is the one of the 3.6 branch, which took the OGC API - Tiles 1.0 update
 * half-done: it reads no vector tiles and takes a collection's CRS84 extent for metres (docs/ogc.md). Seen in
 * 3.6.2 (Debian 12); 3.10.3 (Debian 13) does both as the standard says. The releases the README supports have
 * one or the other, so any other version is taken to behave as 3.10 does.
 */
export function ogcapiDriverIs36(v: GdalVersion): boolean {
  return v.major === 3 && v.minor === 6;
}
