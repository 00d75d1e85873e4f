// Finds the declaration a request is routed to, the way the router will: the request target made a URL as
// @hono/node-server makes it (dot segments resolved), the path read by Hono's own `getPath` (decodeURI, reserved
// characters kept encoded), matched by Hono's rules (first declared wins; `:name` one segment, `:name{re}` what
// `re` matches, a trailing `/*` anything below the prefix and the prefix itself), and parameters decoded as Hono
// decodes them (decodeURIComponent, what cannot be decoded kept). So `/data/os%6D/...` and `/x/../data/osm/...` are
// source `osm` here exactly when they are to the route; test/route-agreement.property.test.ts holds it to Hono.
// Nothing here throws on what a client sends.
//
// Why not Hono's own router: over this table Hono's SmartRouter settles on its TrieRouter (the RegExpRouter
// refuses patterns such as `:file{.+\.json}` beside `:source`), which measured 1.1-2.4 µs a match here, where the
// hand-written classifier it replaces cost 0.15 µs; the limiter matches every request. One regular expression per
// method, its alternatives in table order (a regular expression tries alternatives in order, as Hono tries
// routes), costs a fraction of that.
import { getPath, tryDecodeURIComponent } from 'hono/utils/url';
import type { Params, RouteDeclaration } from './declaration.js';

/** A request matched to a route, with its path parameters (read on demand: most requests read one or none). */
export class RouteMatch implements Params {
  constructor(
    readonly route: RouteDeclaration,
    private readonly names: readonly string[],
    private readonly groups: RegExpExecArray | undefined,
    private readonly first: number,
  ) {}

  /** The parameter `name` as it is in the path. */
  rawParam(name: string): string | undefined {
    const i = this.names.indexOf(name);
    return i < 0 ? undefined : this.groups![this.first + i];
  }

  /** The parameter `name`, decoded as Hono decodes it (what cannot be decoded kept). */
  param(name: string): string | undefined {
    const raw = this.rawParam(name);
    return raw !== undefined && raw.includes('%') ? tryDecodeURIComponent(raw) : raw;
  }
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The segments of a Hono pattern after its leading `/`; a `/` inside a parameter's `{pattern}` splits nothing. */
function segments(pattern: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of pattern.slice(1)) {
    if (ch === '/' && depth === 0) {
      out.push(current);
      current = '';
      continue;
    }
    if (ch === '{') depth++;
    else if (ch === '}') depth--;
    current += ch;
  }
  out.push(current);
  return out;
}

/** A Hono pattern as a regular expression source, and the names of its parameters in group order. */
function compile(hono: string): { source: string; names: string[] } {
  const names: string[] = [];
  let source = '';
  let rest = hono;
  if (rest.endsWith('/*')) rest = rest.slice(0, -2);
  for (const seg of segments(rest)) {
    const m = /^:(\w+)(?:\{(.+)\})?$/.exec(seg);
    if (m) {
      names.push(m[1]);
      // A parameter's own pattern must not capture: its groups would shift the ones counted here.
      source += `/(${m[2] ? m[2].replace(/\((?!\?)/g, '(?:') : '[^/]+'})`;
    } else source += `/${escape(seg)}`;
  }
  if (hono.endsWith('/*')) source += '(?:|/.*)';
  return { source: source === '' ? '/' : source, names };
}

interface Alternative {
  route: RouteDeclaration;
  /** Group index of the empty marker that says this alternative matched; its parameters are the groups before it. */
  marker: number;
  names: string[];
}

interface Group {
  re: RegExp;
  byMarker: Map<number, Alternative>;
}

/** The routes of one method, grouped by the literal first segment of their patterns. */
interface MethodTable {
  groups: Map<string, Group>;
  /** Set when some pattern starts with a parameter: then one group holds every route, tried in order. */
  all: Group | undefined;
}

function group(routes: readonly RouteDeclaration[]): Group {
  const byMarker = new Map<number, Alternative>();
  let count = 0;
  const parts = routes.map((route) => {
    const { source, names } = compile(route.hono);
    count += names.length + 1;
    byMarker.set(count, { route, marker: count, names });
    return `${source}()`;
  });
  return { re: new RegExp(`^(?:${parts.join('|')})$`), byMarker };
}

/** The first segment of a path or pattern (`data` of `/data/x`). */
function firstSegment(path: string): string {
  const end = path.indexOf('/', 1);
  return end < 0 ? path.slice(1) : path.slice(1, end);
}

/** The routes of one listener, matched as Hono matches them. */
export class RouteMatcher {
  private readonly methods = new Map<string, MethodTable>();
  /** `headAsGet`: HEAD is routed as GET (Hono's rule; the admin listener has no such rule). */
  constructor(
    readonly routes: readonly RouteDeclaration[],
    private readonly headAsGet = true,
  ) {
    const byMethod = new Map<string, RouteDeclaration[]>();
    for (const r of routes) {
      const m = r.method.toUpperCase();
      byMethod.set(m, [...(byMethod.get(m) ?? []), r]);
    }
    for (const [method, list] of byMethod) {
      // Routes under different literal first segments never match the same path, so each group keeps the
      // table's order among the routes that can compete; a smaller expression is a quicker match.
      const literal = list.every((r) => !/^[:*{]/.test(firstSegment(r.hono)));
      const groups = new Map<string, Group>();
      if (literal) {
        const by = new Map<string, RouteDeclaration[]>();
        for (const r of list) by.set(firstSegment(r.hono), [...(by.get(firstSegment(r.hono)) ?? []), r]);
        for (const [first, rs] of by) groups.set(first, group(rs));
      }
      this.methods.set(method, { groups, all: literal ? undefined : group(list) });
    }
  }

  /** The first route of `method` (HEAD as GET, as Hono answers it) that matches `path`, a path as Hono routes it. */
  match(method: string, path: string): RouteMatch | undefined {
    const table = this.methods.get(method === 'HEAD' && this.headAsGet ? 'GET' : method);
    const g = table && (table.all ?? table.groups.get(firstSegment(path)));
    const m = g?.re.exec(path);
    if (!m) return undefined;
    // The matched alternative's marker is the first group that matched the empty string after its parameters.
    const marker = m.indexOf('', 1);
    const alt = g!.byMarker.get(marker)!;
    return alt.names.length === 0 ? new RouteMatch(alt.route, alt.names, undefined, 0) : new RouteMatch(alt.route, alt.names, m, marker - alt.names.length);
  }

  /** The methods (upper case, in declaration order) of the routes that match `path`: a 405's `Allow`. */
  methodsAt(path: string): string[] {
    return [...this.methods.keys()].filter((m) => this.match(m, path) !== undefined);
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
