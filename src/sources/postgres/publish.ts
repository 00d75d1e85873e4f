// Which database sources a state serves: the configured tables, functions and out-of-database rasters, plus,
// with `auto_publish`, every readable table with a geometry column and every executable tile function.
// Configured entries win over discovered ones (same table, same function, or same id).
import { UPLOAD_ID_PREFIX } from '../../config/load.js';
import type { OutdbRasterConfig, PgFunctionConfig, PgTableConfig, PostgresConfig } from '../../config/schema.js';
import { SourceOpenError, type TileSource } from '../source.js';
import { geometryTables, tileFunctions, type GeometryTable, type TileFunction } from './discover.js';
import { PgFunctionSource } from './function.js';
import { logOnce, type PgPool } from './pool.js';
import { PgTableSource } from './table.js';

/** Opens an out-of-database raster source (src/sources/raster/outdb.ts); given by the state, which owns the raster pool. */
export type OutdbOpener = (cfg: OutdbRasterConfig, fn: TileFunction) => Promise<TileSource> | TileSource;

// Auto-published tables are never writable: editing is opted into per configured table (docs/editing.md).
const TABLE_DEFAULTS = { schema: 'public', extent: 4096, buffer: 64, minzoom: 0, maxzoom: 22 } as const;
const FUNCTION_DEFAULTS = { schema: 'public', minzoom: 0, maxzoom: 22 } as const;

/**
 * Ids of discovered entries: the table (or function) name, qualified with its schema where the name alone would
 * be ambiguous, or would start with `upload-`, the prefix kept for uploaded files (`public.upload-x` instead).
 */
function discoveredIds<T>(items: T[], base: (t: T) => string, qualified: (t: T) => string): Map<T, string> {
  const count = new Map<string, number>();
  for (const t of items) count.set(base(t), (count.get(base(t)) ?? 0) + 1);
  const plain = (t: T) => (count.get(base(t)) ?? 0) === 1 && !base(t).startsWith(UPLOAD_ID_PREFIX);
  return new Map(items.map((t) => [t, plain(t) ? base(t) : qualified(t)] as const));
}

/** Keeps only characters allowed in source ids (config ids are validated; catalogue names are not). */
const safeId = (s: string) => s.replace(/[^A-Za-z0-9_.-]/g, '_').replace(/^[.-]+/, '_');

export async function openDatabaseSources(cfg: PostgresConfig, pool: PgPool, takenIds: ReadonlySet<string>, openOutdb: OutdbOpener | undefined): Promise<TileSource[]> {
  const tables = await geometryTables(pool);
  const functions = await tileFunctions(pool);
  const used = new Set(takenIds);
  const claim = (id: string, what: string) => {
    if (used.has(id)) throw new SourceOpenError(id, `duplicate source id (${what})`);
    used.add(id);
  };
  const opened: TileSource[] = [];
  const discovered: string[] = [];
  try {
    for (const t of cfg.tables) {
      claim(t.id, 'postgres.tables');
      opened.push(await PgTableSource.open(t, findTable(t, tables), pool));
    }
    for (const f of cfg.functions) {
      claim(f.id, 'postgres.functions');
      opened.push(PgFunctionSource.open(f, findFunction(f.id, f.schema, f.function ?? f.id, functions, ['zxy', 'zxy_query']), pool));
    }
    for (const r of cfg.outdb_rasters) {
      claim(r.id, 'postgres.outdb_rasters');
      if (!openOutdb) throw new SourceOpenError(r.id, 'out-of-database rasters need the raster pool, which is not available');
      opened.push(await openOutdb(r, findFunction(r.id, r.schema, r.function ?? r.id, functions, ['outdb'])));
    }
    if (cfg.auto_publish) {
      const configuredTables = new Set(cfg.tables.map((t) => `${t.schema}.${t.table}.${t.geometry_column ?? ''}`));
      const configuredFns = new Set([...cfg.functions.map((f) => `${f.schema}.${f.function ?? f.id}`), ...cfg.outdb_rasters.map((r) => `${r.schema}.${r.function ?? r.id}`)]);
      const candidates = tables.filter(
        (t) => !configuredTables.has(`${t.schema}.${t.table}.${t.geometryColumn}`) && !(t.isFirstGeometry && configuredTables.has(`${t.schema}.${t.table}.`)),
      );
      // A table with several geometry columns gets one source per column; the first keeps the plain name.
      const tableIds = discoveredIds(
        candidates,
        (t) => (t.isFirstGeometry ? t.table : `${t.table}.${t.geometryColumn}`),
        (t) => (t.isFirstGeometry ? `${t.schema}.${t.table}` : `${t.schema}.${t.table}.${t.geometryColumn}`),
      );
      for (const t of candidates) {
        const id = safeId(tableIds.get(t)!);
        if (used.has(id)) continue;
        used.add(id);
        const entry: PgTableConfig = { ...TABLE_DEFAULTS, id, schema: t.schema, table: t.table, geometry_column: t.geometryColumn };
        opened.push(await PgTableSource.open(entry, t, pool));
        discovered.push(`${id} (table ${t.schema}.${t.table}.${t.geometryColumn})`);
      }
      const fnCandidates = functions.filter((f) => f.kind !== 'outdb' && !configuredFns.has(`${f.schema}.${f.name}`));
      const fnIds = discoveredIds(fnCandidates, (f) => f.name, (f) => `${f.schema}.${f.name}`);
      for (const f of fnCandidates) {
        const id = safeId(fnIds.get(f)!);
        if (used.has(id)) continue;
        used.add(id);
        const entry: PgFunctionConfig = { ...FUNCTION_DEFAULTS, id, schema: f.schema, function: f.name };
        opened.push(PgFunctionSource.open(entry, f, pool));
        discovered.push(`${id} (function ${f.schema}.${f.name})`);
      }
      logOnce(`discovered:${cfg.connection_string}:${discovered.join(',')}`, 'info', { sources: discovered }, `postgres auto_publish: ${discovered.length} source(s) discovered`);
    }
  } catch (err) {
    await Promise.all(opened.map((s) => s.close().catch(() => {})));
    throw err;
  }
  return opened;
}

function findTable(t: PgTableConfig, tables: GeometryTable[]): GeometryTable {
  const same = tables.filter((g) => g.schema === t.schema && g.table === t.table);
  if (same.length === 0) throw new SourceOpenError(t.id, `no table or view ${t.schema}.${t.table} with a geometry column that the database role can read`);
  if (!t.geometry_column) return same.find((g) => g.isFirstGeometry) ?? same[0];
  const found = same.find((g) => g.geometryColumn === t.geometry_column);
  if (!found) throw new SourceOpenError(t.id, `${t.schema}.${t.table} has no geometry column "${t.geometry_column}" (it has ${same.map((g) => `"${g.geometryColumn}"`).join(', ')})`);
  return found;
}

function findFunction(id: string, schema: string, name: string, functions: TileFunction[], kinds: TileFunction['kind'][]): TileFunction {
  const found = functions.find((f) => f.schema === schema && f.name === name && kinds.includes(f.kind));
  if (found) return found;
  const want = kinds.includes('outdb')
    ? '(z integer, x integer, y integer, tile_bbox geometry, params json) returning rows with a filepath column'
    : '(z integer, x integer, y integer) or (z integer, x integer, y integer, query json) returning bytea';
  throw new SourceOpenError(id, `no function ${schema}.${name}${want} that the database role can execute`);
}
