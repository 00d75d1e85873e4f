// What a request path touches, read the way the routes will read it: the source(s) of `/data/{id}/...`,
// `/api/elevation/{id}`, `/api/spatial/{schema|stats}/{id}` and `/ogc/collections/{id}/...` (an ad-hoc composite
// `a+b` touches each member), the style of `/styles/{id}/...`, `/embed/{id}`, `/og/{id}` and
// `/ogc/styles/{id}/...`, and the service's shared things (`/files/`, uploads). Listings and everything else
// touch nothing here: listings filter themselves (src/http/access-gate.ts `visibleTo`), and a POST whose body
// names its source (`/api/spatial/query`) is checked by its route.
//
// The path is normalised as @hono/node-server and Hono do it (dot segments resolved by URL, then each segment
// percent-decoded), so that `/data/os%6D/...` or `/x/../data/osm/...` cannot reach a source under another name.
// Nothing here throws. An OGC layer collection `{source}:{layer}` (src/ogc/layer-ids.ts) touches its source only,
// so that it is exactly as open as the source whose file it reads, whatever its layer is named.

import { splitLayerCollectionId } from '../ogc/layer-ids.js';

export type Target = { kind: 'source'; id: string } | { kind: 'style'; id: string } | { kind: 'shared' };

export interface PathTargets {
  targets: Target[];
  /** Whether a bearer header may carry this service's credentials (not on /mcp and the OAuth routes, whose bearer is MCP's). */
  bearer: boolean;
  /** A listing (`/data.json`, `/styles.json`, `/`, OGC collections...): it filters itself by what the credentials allow. */
  listing: boolean;
}

const NONE: PathTargets = { targets: [], bearer: true, listing: false };
const LISTING: PathTargets = { targets: [], bearer: true, listing: true };
const MCP: PathTargets = { targets: [], bearer: false, listing: true };
const OAUTH: PathTargets = { targets: [], bearer: false, listing: false };
const SHARED: Target = { kind: 'shared' };

function decodeSegment(s: string): string {
  if (!s.includes('%')) return s;
  try {
    return decodeURIComponent(s);
  } catch {
    // As Hono: what can be decoded is, the rest stays.
    return s.replace(/(?:%[0-9A-Fa-f]{2})+/g, (m) => {
      try {
        return decodeURIComponent(m);
      } catch {
        return m;
      }
    });
  }
}

/** The path of a request target as the router sees it, split into decoded segments (the first is ""). */
export function pathSegments(url: string): string[] | undefined {
  let path: string;
  const q = url.indexOf('?');
  const raw = q < 0 ? url : url.slice(0, q);
  if (raw.startsWith('/') && !raw.includes('%') && !raw.includes('/.') && !raw.includes('#')) {
    path = raw;
  } else {
    try {
      // As @hono/node-server builds it: the scheme and host, then the target as sent.
      path = raw.startsWith('/') ? new URL(`http://h${raw}`).pathname : new URL(raw).pathname;
    } catch {
      return undefined;
    }
  }
  const segs = path.split('/');
  for (let i = 1; i < segs.length; i++) segs[i] = decodeSegment(segs[i]);
  return segs;
}

/** Members of a source id: an ad-hoc composite `a+b` (or `a,b`) is each of them. */
function sources(id: string | undefined): Target[] {
  if (id === undefined || id === '') return [];
  if (!id.includes('+') && !id.includes(',')) return [{ kind: 'source', id }];
  return id.split(/[+,]/).filter((m) => m !== '').map((m) => ({ kind: 'source' as const, id: m }));
}

const withTargets = (targets: Target[]): PathTargets => (targets.length ? { targets, bearer: true, listing: false } : NONE);

/** `x.json` as the id `x`, or the segment itself. */
const jsonId = (seg: string, last: boolean) => (last && seg.endsWith('.json') ? seg.slice(0, -5) : seg);

/** What a request touches. An unreadable target touches nothing here (the front answers it 400). */
export function pathTargets(url: string | undefined): PathTargets {
  if (url === undefined) return NONE;
  const segs = pathSegments(url);
  if (!segs) return NONE;
  const [, first, second, third, fourth] = segs;
  const last = (i: number) => segs.length === i + 1;
  switch (first) {
    case 'data':
      // /data/{id}.json, /data/{id}/{z}/{x}/{y}.{fmt}, /data/{id}/hillshade/..., /data/{id}/elevation/...
      return withTargets(sources(second === undefined ? undefined : jsonId(second, last(2))));
    case 'styles':
      return second === undefined ? NONE : withTargets([{ kind: 'style', id: jsonId(second, last(2)) }]);
    case 'embed':
    case 'og':
      return second === undefined || second === '' ? NONE : withTargets([{ kind: 'style', id: second }]);
    case 'api':
      if (second === 'elevation') return withTargets(sources(third));
      if (second === 'spatial' && (third === 'schema' || third === 'stats')) return withTargets(sources(fourth));
      if (second === 'upload') return withTargets([SHARED, ...sources(third)]);
      return NONE;
    case 'ogc':
      if (second === 'collections') {
        if (third === undefined || third === '') return LISTING;
        const layer = splitLayerCollectionId(third);
        return withTargets(sources(layer ? layer.source : third));
      }
      if (second === 'styles') return third === undefined || third === '' ? LISTING : withTargets([{ kind: 'style', id: third }]);
      if (second === 'map') return LISTING;
      return NONE;
    case 'files':
      return withTargets([SHARED]);
    case '':
    case 'index.json':
    case 'data.json':
    case 'styles.json':
      return segs.length === 2 ? LISTING : NONE;
    case 'mcp':
      return MCP;
    case 'oauth':
    case '.well-known':
      return OAUTH;
    default:
      return NONE;
  }
}
