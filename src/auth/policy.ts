// The access rules of one state, compiled once per snapshot (a reload builds a new state, hence new rules; a
// removed key is gone for every request after the swap): the level of every configured source, composite and
// style, the key table and the JWT verifier. Lookups on the request path are Map reads. What the rules hold
// belongs to them: the JWKS fetched from a URL lives in this state's verifier, handed on by a reload that keeps
// the URL and dropped with the old rules by one that changes it.
import type { AccessLevel, Config } from '../config/schema.js';
import { log } from '../log.js';
import type { AppState } from '../state/app-state.js';
import { compositeMembers, terrainProductOf } from '../sources/source-ids.js';
import { sourceRef } from '../styles/source-ref.js';
import { JwtVerifier } from './jwt.js';
import { KeyTable } from './keys.js';

const RANK: Record<AccessLevel, number> = { public: 0, key: 1, closed: 2 };
export const stricter = (a: AccessLevel, b: AccessLevel): AccessLevel => (RANK[a] >= RANK[b] ? a : b);

/** What a style path leads to: a configured style, or a source's generated style (which is the source's to allow). */
export type StyleResolution = { kind: 'style' | 'source'; id: string; level: AccessLevel };

export interface Policy {
  /** Nothing is protected and no credential is configured: the gate lets everything through untouched. */
  readonly open: boolean;
  readonly defaultLevel: AccessLevel;
  readonly keys: KeyTable;
  readonly jwt: JwtVerifier | undefined;
  sourceLevel(id: string): AccessLevel;
  style(id: string): StyleResolution;
}

function explicitSourceLevels(config: Config): Map<string, AccessLevel | undefined> {
  const out = new Map<string, AccessLevel | undefined>();
  for (const s of config.sources) out.set(s.id, s.access);
  const pg = config.postgres;
  if (pg) for (const e of [...pg.tables, ...pg.functions, ...pg.outdb_rasters]) out.set(e.id, e.access);
  return out;
}

function anyAccessSet(config: Config): boolean {
  const pg = config.postgres;
  return [...config.sources, ...config.styles, ...config.composites, ...(pg ? [...pg.tables, ...pg.functions, ...pg.outdb_rasters] : [])].some((e) => e.access !== undefined);
}

/** `previous`: the rules of the state this one replaces, whose remote key set is kept if its URL is unchanged. */
export function compilePolicy(state: AppState, previous?: Policy): Policy {
  const { config } = state;
  const auth = config.auth;
  const defaultLevel: AccessLevel = auth?.default_access ?? 'public';
  const keys = new KeyTable(auth?.keys ?? []);
  const jwt = auth?.jwt ? new JwtVerifier(auth.jwt, { previous: previous?.jwt, log }) : undefined;
  const open = auth === undefined && !anyAccessSet(config);

  const levels = new Map<string, AccessLevel>();
  for (const [id, level] of explicitSourceLevels(config)) levels.set(id, level ?? defaultLevel);
  // A composite serves its members' tiles: unless it says otherwise, it is as strict as the strictest of them.
  const composites = new Map(config.composites.map((c) => [c.id, c] as const));
  const compositeLevel = (id: string, seen: Set<string>): AccessLevel => {
    const c = composites.get(id)!;
    if (c.access) return c.access;
    let level = defaultLevel;
    for (const m of c.sources) {
      if (composites.has(m) && !seen.has(m)) level = stricter(level, compositeLevel(m, new Set([...seen, m])));
      else level = stricter(level, levels.get(m) ?? defaultLevel);
    }
    return level;
  };
  for (const id of composites.keys()) levels.set(id, compositeLevel(id, new Set([id])));

  const sourceLevel = (id: string): AccessLevel => {
    const known = levels.get(id);
    if (known !== undefined) return known;
    // `{dem}.hillshade` and `{dem}.contours` (OGC collections) are products of their elevation source.
    const product = terrainProductOf(id);
    if (product) return sourceLevel(product.source);
    return defaultLevel;
  };

  // A style that does not set its access is as strict as the sources it draws (its renderings show their data).
  const styles = new Map<string, AccessLevel>();
  for (const s of config.styles) {
    if (s.access) {
      styles.set(s.id, s.access);
      continue;
    }
    let level = defaultLevel;
    const loaded = state.styles.get(s.id);
    for (const src of Object.values(loaded?.style.sources ?? {})) {
      const ref = sourceRef((src as { url?: unknown }).url);
      if (ref !== undefined) for (const id of compositeMembers(ref)) level = stricter(level, sourceLevel(id));
    }
    styles.set(s.id, level);
  }

  return {
    open,
    defaultLevel,
    keys,
    jwt,
    sourceLevel,
    style(id) {
      const level = styles.get(id);
      if (level !== undefined) return { kind: 'style', id, level };
      // Not a configured style: the generated style of the source of that id (src/serve/generated.ts), or nothing.
      return { kind: 'source', id, level: sourceLevel(id) };
    },
  };
}

const policies = new WeakMap<AppState, Policy>();

/**
 * The rules of `state`, compiled on first use (the server compiles them when it swaps the state in, handing on
 * `previous`, the rules of the state it replaces; later calls get the same rules whatever they pass).
 */
export function policyOf(state: AppState, previous?: Policy): Policy {
  let p = policies.get(state);
  if (!p) policies.set(state, (p = compilePolicy(state, previous)));
  return p;
}
