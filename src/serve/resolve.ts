// Finds the source a request names: a configured source, a named composite, or an ad-hoc composite `a+b+c`
// (its members read by src/sources/source-ids.ts, as the access gate reads them). Ad-hoc composites are
// remembered per state.
import type { AppState } from '../state/app-state.js';
import { CompositeError, CompositeSource } from '../sources/composite.js';
import type { TileSource } from '../sources/source.js';
import { compositeMembers, isCompositeId } from '../sources/source-ids.js';

export interface SourceProblem {
  kind: 'problem';
  status: 400 | 404;
  title: string;
  detail: string;
}

/** Ad-hoc composites kept per state; a bound keeps arbitrary member lists from growing it without limit. */
const AD_HOC_LIMIT = 256;
const adHoc = new WeakMap<AppState, Map<string, { composite: CompositeSource; members: (TileSource | undefined)[] }>>();

/** A member as the state serves it now. Uploads come and go within a state, so a remembered composite is checked. */
const memberOf = (state: AppState, id: string): TileSource | undefined => state.sources.get(id) ?? state.composites.get(id);

function adHocComposite(state: AppState, id: string): CompositeSource | SourceProblem {
  let known = adHoc.get(state);
  const ids = compositeMembers(id);
  const hit = known?.get(id);
  if (hit && hit.members.every((m, i) => m === memberOf(state, ids[i]))) return hit.composite;
  const unknown = ids.filter((m) => !state.sources.has(m) && !state.composites.has(m));
  if (unknown.length) {
    return { kind: 'problem', status: 404, title: 'Source not found', detail: `composite "${id}": no source with id ${unknown.map((u) => `"${u}"`).join(', ')}` };
  }
  const repeated = ids.filter((m, i) => ids.indexOf(m) !== i);
  if (repeated.length) return { kind: 'problem', status: 400, title: 'Invalid composite', detail: `composite "${id}": "${repeated[0]}" is listed more than once` };
  try {
    const members = ids.map((m) => memberOf(state, m));
    const composite = new CompositeSource(id, members.map((m) => m!), state.config);
    if (!known) adHoc.set(state, (known = new Map()));
    if (known.size >= AD_HOC_LIMIT && !known.has(id)) known.delete(known.keys().next().value!);
    known.set(id, { composite, members });
    return composite;
  } catch (err) {
    if (err instanceof CompositeError) return { kind: 'problem', status: err.status, title: err.title, detail: err.message };
    throw err;
  }
}

/** The source named `id`, or the problem to answer. */
export function resolveSource(state: AppState, id: string): TileSource | SourceProblem {
  const found = state.sources.get(id) ?? state.composites.get(id);
  if (found) return found;
  if (isCompositeId(id)) return adHocComposite(state, id);
  return { kind: 'problem', status: 404, title: 'Source not found', detail: `no source with id "${id}"` };
}

export const isProblem = (r: TileSource | SourceProblem): r is SourceProblem => 'kind' in r;
