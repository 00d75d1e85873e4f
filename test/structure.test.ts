// The import structure of src/: no module imports itself back through others, the configuration imports only
// itself, and every import points down the layers of the data flow (config → tiles → sources → styles → state →
// serve → render → http → cluster; the full order is LAYERS below), so shared types live below every area that
// uses them.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { ROOT } from './helpers/server.js';

const SRC = path.join(ROOT, 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) return sourceFiles(p);
    return p.endsWith('.ts') ? [p] : [];
  });
}

/** Module (relative to src/, no extension) → the src modules it imports, type-only imports, re-exports and dynamic imports included. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const text = readFileSync(file, 'utf8');
    const deps: string[] = [];
    // Static imports and re-exports, and `import('./...')` (cli.ts loads each subcommand's modules so).
    const specs = [...text.matchAll(/^\s*(?:import|export)\b[^;]*?\bfrom\s+'(\.{1,2}\/[^']+)'/gms), ...text.matchAll(/\bimport\(\s*'(\.{1,2}\/[^']+)'\s*\)/g)];
    for (const m of specs) deps.push(path.relative(SRC, path.resolve(path.dirname(file), m[1])).replace(/\.js$/, ''));
    graph.set(path.relative(SRC, file).replace(/\.ts$/, ''), deps);
  }
  return graph;
}

/** Strongly connected components with more than one module, or a module importing itself (Tarjan). */
function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

test('the cycle finder finds a planted cycle (so that an empty answer means something)', () => {
  const planted = new Map([
    ['a', ['b']],
    ['b', ['c']],
    ['c', ['a']],
    ['d', ['a']],
  ]);
  assert.deepEqual(cycles(planted), [['a', 'b', 'c']]);
});

test('the graph reads every module and its imports, type imports included', () => {
  const graph = importGraph();
  assert.ok(graph.size > 50, `${graph.size} modules`);
  assert.ok(graph.get('state/app-state')?.includes('sources/source'), 'type-only imports are edges');
  assert.ok(graph.get('cli/serve')?.includes('config/load'));
  assert.ok(graph.get('cli')?.includes('cli/mbtiles'), 'dynamic imports are edges');
});

test('no import cycles in src/', () => {
  assert.deepEqual(cycles(importGraph()), []);
});

test('config/ imports only config/', () => {
  for (const [mod, deps] of importGraph()) {
    if (!mod.startsWith('config/')) continue;
    for (const d of deps) assert.ok(d.startsWith('config/'), `${mod} imports ${d}`);
  }
});

/**
 * The areas of src/ from the bottom up (the README's Layout lists them in this order). A module imports only from
 * its own area and from areas in earlier rows; areas in one row do not import each other. An area is a folder of
 * src/ or a top-level module.
 */
const LAYERS: readonly (readonly string[])[] = [
  ['config'],
  ['log-format', 'version', 'runtime'],
  ['log', 'problem'],
  ['tiles', 'grid', 'cql2'],
  ['raster', 'terrain'],
  ['sources'],
  ['styles'],
  ['state'],
  ['shared-cache', 'uploads'],
  ['expire'],
  ['serve'],
  ['spatial', 'ogc'],
  ['render', 'mcp'],
  ['telemetry'],
  ['routes'],
  ['auth'],
  ['limits'],
  ['http'],
  ['server', 'seed'],
  ['mbtiles'],
  ['cluster'],
  ['cli'],
];

const areaOf = (mod: string) => mod.split('/')[0];

/** Imports that go sideways or up the layers, and modules whose area has no row. */
function layerViolations(graph: Map<string, string[]>, layers: readonly (readonly string[])[]): string[] {
  const rank = new Map(layers.flatMap((row, i) => row.map((area) => [area, i] as const)));
  const out: string[] = [];
  for (const [mod, deps] of graph) {
    const from = areaOf(mod);
    if (!rank.has(from)) {
      out.push(`${mod}: area "${from}" has no layer`);
      continue;
    }
    for (const d of deps) {
      const to = areaOf(d);
      if (to === from || !graph.has(d)) continue;
      if (!rank.has(to) || rank.get(to)! >= rank.get(from)!) out.push(`${mod} imports ${d}`);
    }
  }
  return out;
}

test('the layer check finds an import that goes up, one that goes sideways, and an area with no layer', () => {
  const planted = new Map([
    ['tiles/a', ['config/b', 'tiles/c']],
    ['config/b', []],
    ['tiles/c', ['state/d']],
    ['state/d', ['tiles/a']],
    ['shared-cache/e', ['uploads/f']],
    ['uploads/f', []],
    ['newarea/g', []],
  ]);
  assert.deepEqual(layerViolations(planted, LAYERS).sort(), ['newarea/g: area "newarea" has no layer', 'shared-cache/e imports uploads/f', 'tiles/c imports state/d']);
});

test('every import in src/ points down the layers', () => {
  const graph = importGraph();
  assert.deepEqual(layerViolations(graph, LAYERS), []);
  // Every row names an area that exists, so the order stays a description of src/.
  const areas = new Set([...graph.keys()].map(areaOf));
  for (const area of LAYERS.flat()) assert.ok(areas.has(area), `the layer "${area}" has no module`);
});

test('shared-cache/ takes only config/, log and version, and types of state and styles', () => {
  let checked = 0;
  for (const [mod, deps] of importGraph()) {
    if (!mod.startsWith('shared-cache/')) continue;
    checked++;
    for (const d of deps) assert.ok(/^(config\/|shared-cache\/|state\/app-state$|styles\/loaded-style$|log$|version$)/.test(d), `${mod} imports ${d}`);
  }
  assert.ok(checked >= 2, `only ${checked} shared-cache modules were checked`);
});

/** The bare packages and the scripts of dist/ that `script` (a file of dist/) imports statically, there and in each chunk it imports so. */
function staticImports(script: string): { packages: Set<string>; scripts: Set<string> } {
  const packages = new Set<string>();
  const scripts = new Set<string>();
  const visit = (file: string) => {
    if (scripts.has(file)) return;
    scripts.add(file);
    const text = readFileSync(path.join(ROOT, 'dist', file), 'utf8');
    for (const m of text.matchAll(/^import\s(?:[^;]*?\sfrom\s+)?"([^"]+)";?$/gm)) {
      if (m[1].startsWith('./')) visit(m[1].slice(2));
      else packages.add(m[1]);
    }
  };
  visit(script);
  return { packages, scripts };
}

/** The chunk of dist/ that dist/cli.js loads with `import()` for the module src/cli/NAME.ts. */
function lazyChunk(name: string): string {
  const cli = readFileSync(path.join(ROOT, 'dist/cli.js'), 'utf8');
  const found = [...cli.matchAll(/\bimport\("\.\/([^"]+)"\)/g)].map((m) => m[1]).filter((f) => f.startsWith(`${name}-`));
  assert.equal(found.length, 1, `dist/cli.js imports one chunk for ${name}: ${found.join(', ')}`);
  return found[0];
}

test('the bundle loads Chromium\'s driver, OpenTelemetry, the Redis client and the storage SDKs only when they are used, not at every start', () => {
  // Imported at the top, playwright-core and the OpenTelemetry packages (with gRPC) took about 0.7 s of each
  // process's start, in every worker, though only render threads launch browsers and only a configured push
  // exports. `make test` builds dist/ before the tests run. What a server loads at start: dist/cli.js, the chunk
  // of src/cli/serve.ts, and every chunk these import statically.
  const served = staticImports(lazyChunk('serve'));
  const started = staticImports('cli.js');
  const topLevel = [...started.packages, ...served.packages];
  const bundle = [...started.scripts, ...served.scripts].map((f) => readFileSync(path.join(ROOT, 'dist', f), 'utf8')).join('\n');
  assert.ok(topLevel.includes('hono'), `the bundle's static imports were read: ${topLevel.length}`);
  // The AWS and Azure SDKs took about 0.4 s and 0.5 s to load: only a process with an s3://, gs:// or az:// source pays it.
  // Likewise the MCP SDK and jose (about 0.2 s and 0.06 s), needed only with [mcp] enabled, and Google's auth
  // library, needed only by a gs:// source with GOOGLE_APPLICATION_CREDENTIALS.
  const eager = topLevel.filter((spec) => spec === 'playwright-core' || spec === 'ioredis' || spec === 'jose' || spec === 'google-auth-library' || /^@(opentelemetry|grpc|aws-sdk|azure|modelcontextprotocol)\//.test(spec));
  assert.deepEqual(eager, []);
  // ioredis (about 45 ms of start-up) is loaded when `[cache] shared` is set.
  assert.ok(bundle.includes('import("ioredis")'), 'ioredis is still imported where the shared cache connects');
  for (const spec of ['@aws-sdk/client-s3', '@azure/storage-blob', 'google-auth-library']) assert.ok(bundle.includes(`import("${spec}")`), `${spec} is imported where a source needs it`);
  for (const spec of ['@opentelemetry/api', '@opentelemetry/exporter-trace-otlp-grpc', '@modelcontextprotocol/sdk/server/index.js', 'jose']) assert.ok(bundle.includes(`import("${spec}")`), `${spec} is still imported where it is used`);
  // The render thread's bundle launches the browsers: it loads the driver when it starts the first one.
  const renderThread = readFileSync(path.join(ROOT, 'dist/workers/render.js'), 'utf8');
  assert.ok(renderThread.includes('import("playwright-core")'), 'the render thread imports playwright-core where it launches a browser');
});

test('`tileserver-ts mbtiles`, `convert`, `key`, `expire` and `--help` load none of the server: each subcommand its own chunks', () => {
  // Loaded whole, the server took 0.5 s and 135 MB of every `tileserver-ts mbtiles` run on an idle machine (3-4 s
  // when busy): more than a diff or patch of a 1 GB archive costs by itself.
  const server = ['hono', '@hono/node-server', 'sharp', 'pg', 'prom-client', 'valibot'];
  const serverPackages = (scripts: string[]) => scripts.flatMap((s) => [...staticImports(s).packages]).filter((p) => server.includes(p));
  assert.deepEqual(serverPackages(['cli.js']), [], 'dist/cli.js itself (--help, --version) loads no server package');
  for (const name of ['mbtiles', 'key', 'expire']) assert.deepEqual(serverPackages([lazyChunk(name)]), [], `the ${name} subcommand loads no server package`);
  assert.ok(staticImports(lazyChunk('mbtiles')).packages.has('better-sqlite3'), 'the mbtiles chunk was read');
  assert.ok(serverPackages([lazyChunk('serve')]).includes('hono'), 'the server chunk loads the server');
});
