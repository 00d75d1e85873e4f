// Finds the declaration a request is routed to, the way the router will: the request target made a URL as
// @hono/node-server makes it (dot segments resolved), the path read by Hono's own `getPath` (decodeURI, reserved
// characters kept encoded), matched by the same router Hono mounts routes on (SmartRouter over RegExpRouter and
// TrieRouter, first declared wins), and parameters decoded as Hono decodes them (decodeURIComponent, what cannot
// be decoded kept). So `/data/os%6D/...` and `/x/../data/osm/...` are source `osm` here exactly when they are to
// the route. Nothing here throws on what a client sends.
import { RegExpRouter } from 'hono/router/reg-exp-router';
import { SmartRouter } from 'hono/router/smart-router';
import { TrieRouter } from 'hono/router/trie-router';
import { getPath, tryDecodeURIComponent } from 'hono/utils/url';
import type { Params, RouteDeclaration } from './declaration.js';

export interface RouteMatch {
  route: RouteDeclaration;
  /** Path parameters, decoded. */
  param: Params;
  /** Path parameters as they are in the path. */
  rawParam: Params;
}

const NO_PARAMS: Params = () => undefined;
const decoded = (raw: string | undefined) => (raw !== undefined && raw.includes('%') ? tryDecodeURIComponent(raw) : raw);

/** The routes of one listener, matched by Hono's router. */
export class RouteMatcher {
  private readonly router = new SmartRouter<RouteDeclaration>({ routers: [new RegExpRouter(), new TrieRouter()] });
  private readonly methods: string[];
  /** `headAsGet`: HEAD is routed as GET (Hono's rule; the admin listener has no such rule). */
  constructor(
    readonly routes: readonly RouteDeclaration[],
    private readonly headAsGet = true,
  ) {
    for (const r of routes) this.router.add(r.method.toUpperCase(), r.hono, r);
    this.methods = [...new Set(routes.map((r) => r.method.toUpperCase()))];
  }

  /** The first route of `method` (HEAD as GET, as Hono answers it) that matches `path`, a path as Hono routes it. */
  match(method: string, path: string): RouteMatch | undefined {
    const [handlers, stash] = this.router.match(method === 'HEAD' && this.headAsGet ? 'GET' : method, path);
    const first = handlers[0];
    if (!first) return undefined;
    const [route, params] = first;
    if (route.hono.indexOf(':') < 0 && route.hono.indexOf('*') < 0) return { route, param: NO_PARAMS, rawParam: NO_PARAMS };
    const at = params as Record<string, string | number>;
    const rawParam: Params = (name) => (stash ? stash[at[name] as number] : (at[name] as string | undefined));
    return { route, param: (name) => decoded(rawParam(name)), rawParam };
  }

  /** The methods (upper case, in declaration order) of the routes that match `path`: a 405's `Allow`. */
  methodsAt(path: string): string[] {
    return this.methods.filter((m) => this.router.match(m, path)[0].length > 0);
  }
}

/**
 * The path Hono routes for a request target as node:http hands it over (`req.url`), or undefined when no URL can
 * be made of it (the front answers those 400 before any route runs).
 */
export function routedPath(target: string): string | undefined {
  let url: string;
  if (target.startsWith('/')) {
    // The common case: nothing for the URL parser to resolve.
    const q = target.indexOf('?');
    const path = q < 0 ? target : target.slice(0, q);
    if (!path.includes('%') && !path.includes('/.') && !path.includes('#')) return path;
    try {
      url = new URL(`http://h${target}`).href;
    } catch {
      return undefined;
    }
  } else {
    try {
      url = new URL(target).href;
    } catch {
      return undefined;
    }
  }
  return getPath({ url } as Request);
}
