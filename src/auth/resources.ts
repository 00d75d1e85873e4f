// What a request touches, read from the declaration of the route it is routed to (src/routes/public-routes.ts):
// the source(s) and style(s) named by its path parameters (an ad-hoc composite `a+b` touches each member, read
// by src/sources/source-ids.ts as the router reads it; an OGC layer collection `{source}:{layer}` touches its
// source only, so that it is exactly as open as the source whose file it reads, whatever its layer is named),
// and the service's shared things. A request that no route matches touches nothing: it is answered 404.
// Listings touch nothing here: they filter themselves (src/http/access-gate.ts `visibleTo`), and a POST whose
// body names its source (`/api/spatial/query`) is checked by its route.
import type { IncomingMessage } from 'node:http';
import { splitLayerCollectionId } from '../ogc/layer-ids.js';
import type { RouteMatch } from '../routes/match.js';
import { matchPublic, routeOf } from '../routes/request-route.js';
import { compositeMembers } from '../sources/source-ids.js';
import { parseUploadIdParam, sourceIdOf } from '../uploads/names.js';

export type Target = { kind: 'source'; id: string } | { kind: 'style'; id: string } | { kind: 'shared' };

/**
 * What a path parameter names, as the path says it: the kind of its route's read (a layer collection
 * `{source}:{layer}` is a collection, a style path a style even when it leads to a source's generated style). An id
 * the request may not see is answered by this, so that the answer depends on the path only, never on what the id
 * turned out to be (docs/access.md, "Closed means unseen").
 */
export interface Named {
  kind: 'source' | 'collection' | 'style';
}

export interface PathTargets {
  targets: Target[];
  /** Whether a bearer header may carry this service's credentials (not on /mcp and the OAuth routes, whose bearer is MCP's). */
  bearer: boolean;
  /** A listing (`/data.json`, `/styles.json`, `/`, OGC collections...): it filters itself by what the credentials allow. */
  listing: boolean;
  /** For each of `targets`, the path parameter it came from (undefined for the shared things). */
  named: readonly (Named | undefined)[];
}

const NONE: PathTargets = { targets: [], bearer: true, listing: false, named: [] };
const SHARED: Target = { kind: 'shared' };

const sources = (id: string): Target[] => compositeMembers(id).map((m) => ({ kind: 'source' as const, id: m }));

/** What a matched route touches. */
export function targetsOf(m: RouteMatch | undefined): PathTargets {
  if (!m) return NONE;
  const { route } = m;
  if (route.reads.length === 0) return route.bearer && !route.listing ? NONE : { targets: [], bearer: route.bearer, listing: route.listing, named: [] };
  const targets: Target[] = [];
  const named: (Named | undefined)[] = [];
  for (const r of route.reads) {
    if (r.kind === 'shared') {
      targets.push(SHARED);
      named.push(undefined);
      continue;
    }
    let id = m.param(r.param);
    if (id === undefined) continue;
    if ('suffix' in r && r.suffix !== undefined) id = id.endsWith(r.suffix) ? id.slice(0, -r.suffix.length) : id;
    const before = targets.length;
    if (r.kind === 'upload') {
      // The route takes the bare UUID too: the source it removes is `upload-<uuid>`, so that is the one looked for.
      const uuid = parseUploadIdParam(id);
      targets.push({ kind: 'source', id: uuid === undefined ? id : sourceIdOf(uuid) });
    } else if (r.kind === 'style') targets.push({ kind: 'style', id });
    else if (r.kind === 'source') targets.push(...sources(id));
    else {
      const layer = splitLayerCollectionId(id);
      targets.push(...(layer ? [{ kind: 'source' as const, id: layer.source }] : sources(id)));
    }
    const name: Named = { kind: r.kind === 'upload' ? 'source' : r.kind };
    for (let i = before; i < targets.length; i++) named.push(name);
  }
  return { targets, bearer: route.bearer, listing: route.listing, named };
}

/** What `method target` touches (an in-process request, a test). */
export function pathTargets(method: string, target: string | undefined): PathTargets {
  return target === undefined ? NONE : targetsOf(matchPublic(method, target));
}

/** What a node:http request touches (its route matched once, shared with the rate limiter). */
export function requestTargets(req: IncomingMessage): PathTargets {
  return targetsOf(routeOf(req));
}
