// Which configured sources a product is made from, so an expiry of a source reaches everything derived from it:
// a composite's tiles (named or ad hoc) follow each member, a hillshade or contour tile its elevation source, and
// a style's rendered tiles every source the style draws.
import type { AppState } from '../state/app-state.js';
import { compositeMembers, terrainProductOf } from '../sources/source-ids.js';
import { sourceRef } from '../styles/source-ref.js';
import type { LoadedStyle } from '../styles/loaded-style.js';

/**
 * The configured sources behind a source id as a route names it (a source, a composite, a terrain product), and,
 * with `auto_publish`, the names expiries reach database sources by where their ids are not known (a table's, the
 * database's: sources/postgres/expiry-aliases.ts).
 */
export function sourceDependencies(state: AppState, id: string): string[] {
  const out = new Set<string>();
  const aliases = state.config.postgres?.auto_publish === true;
  const add = (source: string) => {
    out.add(source);
    if (aliases) for (const a of state.sources.get(source)?.expiryAliases ?? []) out.add(a);
  };
  for (const member of compositeMembers(id)) {
    const base = terrainProductOf(member)?.source ?? member;
    const named = state.composites.get(base);
    if (named) for (const m of named.members) add(m.info.id);
    else add(base);
  }
  return [...out];
}

// Keyed by the style object, not its id: generated styles of ad-hoc composites (`a+b`) are open-ended, and are
// kept per state only while serve/generated.ts keeps them (bounded there).
const byState = new WeakMap<AppState, WeakMap<LoadedStyle, readonly string[]>>();

/** The configured sources a style draws (found once per state and style). */
export function styleDependencies(state: AppState, style: LoadedStyle): readonly string[] {
  let byStyle = byState.get(state);
  if (!byStyle) byState.set(state, (byStyle = new WeakMap()));
  let deps = byStyle.get(style);
  if (!deps) {
    const out = new Set<string>();
    // A generated style (serve/generated.ts) is named after the source it draws, and holds its sources already in
    // their served form (TileJSON URLs), which name no source the way a configured style's references do.
    const generated = (style.style.metadata as Record<string, unknown> | undefined)?.['tileserver-ts:generated'] === true;
    if (generated) for (const d of sourceDependencies(state, style.id)) out.add(d);
    for (const spec of Object.values(style.style.sources ?? {})) {
      const id = sourceRef((spec as { url?: unknown }).url);
      if (id !== undefined) for (const d of sourceDependencies(state, id)) out.add(d);
    }
    byStyle.set(style, (deps = [...out]));
  }
  return deps;
}
