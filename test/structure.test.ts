// The import structure of src/: no module imports itself back through others, the configuration imports only
// itself, and the areas below HTTP (state, sources, styles, tiles, render, raster, spatial, uploads, telemetry) never
// import from http/ or cluster/ (imports point down the data flow; shared types live below every area that uses them).
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

/** Module (relative to src/, no extension) → the src modules it imports, type-only imports and re-exports included. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const text = readFileSync(file, 'utf8');
    const deps: string[] = [];
    for (const m of text.matchAll(/^\s*(?:import|export)\b[^;]*?\bfrom\s+'(\.{1,2}\/[^']+)'/gms)) {
      deps.push(path.relative(SRC, path.resolve(path.dirname(file), m[1])).replace(/\.js$/, ''));
    }
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
  assert.ok(graph.get('cli')?.includes('config/load'));
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

test('the areas below HTTP never import from http/, cluster/, cli or server', () => {
  const below = /^(state|sources|styles|tiles|render|raster|spatial|uploads|telemetry|shared-cache|mcp)\//;
  let checked = 0;
  for (const [mod, deps] of importGraph()) {
    if (!below.test(mod)) continue;
    checked++;
    for (const d of deps) assert.ok(!/^(http|cluster)\//.test(d) && d !== 'cli' && d !== 'server', `${mod} imports ${d}`);
  }
  assert.ok(checked > 40, `only ${checked} modules below HTTP were checked`);
});

test('shared-cache/ sits below tiles and render: it imports only config/, log and version, and types of state and styles', () => {
  let checked = 0;
  for (const [mod, deps] of importGraph()) {
    if (!mod.startsWith('shared-cache/')) continue;
    checked++;
    for (const d of deps) assert.ok(/^(config\/|shared-cache\/|state\/app-state$|styles\/loaded-style$|log$|version$)/.test(d), `${mod} imports ${d}`);
  }
  assert.ok(checked >= 2, `only ${checked} shared-cache modules were checked`);
});

test('the bundle loads Chromium\'s driver, OpenTelemetry, the Redis client and the storage SDKs only when they are used, not at every start', () => {
  // Imported at the top, playwright-core and the OpenTelemetry packages (with gRPC) took about 0.7 s of each
  // process's start, in every worker, though only render threads launch browsers and only a configured push
  // exports. `make test` builds dist/ before the tests run.
  const bundle = readFileSync(path.join(ROOT, 'dist/cli.js'), 'utf8');
  const topLevel = [...bundle.matchAll(/^import\s[^;]*?\sfrom\s+"([^"]+)";?$/gm)].map((m) => m[1]);
  assert.ok(topLevel.includes('hono'), `the bundle's static imports were read: ${topLevel.length}`);
  // The AWS and Azure SDKs took about 0.4 s and 0.5 s to load: only a process with an s3://, gs:// or az:// source pays it.
  // Likewise the MCP SDK and jose (about 0.2 s and 0.06 s), needed only with [mcp] enabled.
  const eager = topLevel.filter((spec) => spec === 'playwright-core' || spec === 'ioredis' || spec === 'jose' || /^@(opentelemetry|grpc|aws-sdk|azure|modelcontextprotocol)\//.test(spec));
  assert.deepEqual(eager, []);
  // ioredis (about 45 ms of start-up) is loaded when `[cache] shared` is set.
  assert.ok(bundle.includes('import("ioredis")'), 'ioredis is still imported where the shared cache connects');
  for (const spec of ['@aws-sdk/client-s3', '@azure/storage-blob']) assert.ok(bundle.includes(`import("${spec}")`), `${spec} is imported where a source needs it`);
  for (const spec of ['@opentelemetry/api', '@opentelemetry/exporter-trace-otlp-grpc', '@modelcontextprotocol/sdk/server/index.js', 'jose']) assert.ok(bundle.includes(`import("${spec}")`), `${spec} is still imported where it is used`);
  // The render thread's bundle launches the browsers: it loads the driver when it starts the first one.
  const renderThread = readFileSync(path.join(ROOT, 'dist/workers/render.js'), 'utf8');
  assert.ok(renderThread.includes('import("playwright-core")'), 'the render thread imports playwright-core where it launches a browser');
});
