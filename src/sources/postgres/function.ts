// A database function serving MVT: `f(z, x, y)` or `f(z, x, y, query json)` returning bytea (the signature is
// read from the catalogue). Every query parameter of the tile request reaches the function as one JSON object,
// as a bound parameter: request text is data, never SQL.
import { escapeIdentifier as ident } from 'pg';
import type { PgFunctionConfig } from '../../config/schema.js';
import { describedSource, SourceOpenError, WORLD_BOUNDS, type Bounds, type SourceInfo, type TileParams, type TileSource } from '../source.js';
import type { TileFunction } from './discover.js';
import type { PgPool } from './pool.js';
import { statementName } from './table.js';
import { DATABASE_ALIAS } from './expiry-aliases.js';

export class PgFunctionSource implements TileSource {
  private constructor(
    readonly info: SourceInfo,
    private readonly pool: PgPool,
    private readonly sql: string,
    private readonly withQuery: boolean,
  ) {}

  /** The database's name, for the expiry of everything after a lost NOTIFY session (expiry-aliases.ts). */
  readonly expiryAliases: readonly string[] = [DATABASE_ALIAS];

  static open(cfg: PgFunctionConfig, fn: TileFunction, pool: PgPool): PgFunctionSource {
    if (fn.kind === 'outdb') throw new SourceOpenError(cfg.id, `${fn.schema}.${fn.name} returns raster file paths: configure it under [[postgres.outdb_rasters]]`);
    const withQuery = fn.kind === 'zxy_query';
    const args = fn.argTypes.map((t, i) => `$${i + 1}::${t}`).join(', ');
    const sql = `SELECT ${ident(fn.schema)}.${ident(fn.name)}(${args}) AS mvt`;
    const bounds = (cfg.bounds as Bounds | undefined) ?? WORLD_BOUNDS;
    const info: SourceInfo = {
      type: 'postgres-function',
      format: 'pbf',
      compression: 'none',
      ...describedSource(cfg, cfg.minzoom, cfg.maxzoom, bounds),
      description: cfg.description ?? `${fn.schema}.${fn.name}`,
      // The layers are whatever the function builds; the catalogue cannot tell. Named after the function (as martin does).
      vectorLayers: [{ id: fn.name, fields: {} }],
      takesParams: withQuery,
    };
    return new PgFunctionSource(info, pool, sql, withQuery);
  }

  async getTile(z: number, x: number, y: number, params: TileParams = {}): Promise<Uint8Array | undefined> {
    const values: unknown[] = [z, x, y];
    if (this.withQuery) values.push(JSON.stringify(params));
    const { rows } = await this.pool.query<{ mvt: Buffer | null }>({ name: statementName(this.sql), text: this.sql, values });
    const mvt = rows[0]?.mvt;
    return mvt && mvt.byteLength > 0 ? new Uint8Array(mvt.buffer, mvt.byteOffset, mvt.byteLength) : undefined;
  }

  async close(): Promise<void> {
    // The pool belongs to the state, which closes it.
  }
}
