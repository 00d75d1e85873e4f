// /mcp and `tileserver-ts mcp-stdio`, driven by the MCP SDK's own client: the tools are listed, each is called
// with valid input (its answer checked against what the HTTP route answers) and with invalid input (a tool error
// naming the argument, never a crash: the next call still works); the static bearer token is required, with
// WWW-Authenticate; `[mcp]` settings that cannot go together stop start-up with one line naming the key.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { decode } from './helpers/render.js';
import { tempDir, waitFor } from './helpers/foundation.js';
import { CLI, fixture, osmLibertyToml, runCli, startServer, writeTempConfig, type TestServer } from './helpers/server.js';

const TOKEN = 'mcp-test-token-0123456789';
const CITIES = `
[[sources]]
id = "cities"
type = "mbtiles"
path = "${fixture('vector/world_cities.mbtiles')}"
`;

type CallResult = { content: { type: string; text?: string; data?: string; mimeType?: string }[]; isError?: boolean };

const textOf = (r: CallResult) => {
  assert.equal(r.content[0]?.type, 'text', JSON.stringify(r).slice(0, 300));
  return r.content[0].text!;
};

/** Valid and invalid arguments of every tool; `route` is the HTTP request whose JSON the valid call must equal. */
const CASES: { tool: string; valid: Record<string, unknown>; route?: string; invalid: Record<string, unknown>; says: RegExp }[] = [
  { tool: 'list_sources', valid: {}, route: '/data.json', invalid: { extra: 1 }, says: /extra/ },
  { tool: 'list_styles', valid: {}, route: '/styles.json', invalid: { style: 'x' }, says: /style/ },
  { tool: 'get_tilejson', valid: { source: 'cities' }, route: '/data/cities.json', invalid: { source: 42 }, says: /source: a source id/ },
  { tool: 'get_source_schema', valid: { source: 'cities' }, route: '/api/spatial/schema/cities', invalid: {}, says: /source/ },
  { tool: 'get_source_stats', valid: { source: 'cities' }, route: '/api/spatial/stats/cities', invalid: { source: '' }, says: /source: a source id is not empty/ },
  { tool: 'query_features', valid: { source: 'cities', bbox: [-10, 35, 30, 60], zoom: 3, limit: 5 }, invalid: { source: 'cities', bbox: [10, 0, 0, 0] }, says: /bbox: west must be <= east/ },
  { tool: 'get_tile_geojson', valid: { source: 'cities', z: 1, x: 1, y: 0 }, route: '/data/cities/1/1/0.geojson', invalid: { source: 'cities', z: 23, x: 0, y: 0 }, says: /z: zoom 0\.\.22/ },
  { tool: 'render_static_map', valid: { style: 'osm-liberty', lon: 0, lat: 20, zoom: 0.5, width: 96, height: 64 }, invalid: { style: 'osm-liberty', lon: 200, lat: 0, zoom: 1 }, says: /lon: longitudes are -180\.\.180/ },
];

async function connect(url: string, token: string | undefined): Promise<Client> {
  const client = new Client({ name: 'mcp-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), token ? { requestInit: { headers: { authorization: `Bearer ${token}` } } } : {});
  await client.connect(transport, { timeout: 15_000 });
  return client;
}

describe('/mcp with a static bearer token', () => {
  let server: TestServer;
  let client: Client;
  before(async () => {
    server = await startServer({
      toml: osmLibertyToml(`${CITIES}\n[render]\npool_size = 1\n[cache]\ndir = "${tempDir('tsts-mcp-')}"\n[mcp]\nenabled = true\nauth_token = "\${MCP_TOKEN}"\n`),
      env: { MCP_TOKEN: TOKEN },
    });
    client = await connect(server.url, TOKEN);
  });
  after(async () => {
    await client?.close();
    await server?.stop();
  });

  test('tools/list names every tool with an input schema from its valibot definition', async () => {
    const { tools } = await client.listTools(undefined, { timeout: 10_000 });
    assert.deepEqual(tools.map((t) => t.name).sort(), CASES.map((c) => c.tool).sort());
    const query = tools.find((t) => t.name === 'query_features')!;
    assert.equal(query.inputSchema.type, 'object');
    assert.deepEqual(Object.keys(query.inputSchema.properties ?? {}).sort(), ['bbox', 'layers', 'limit', 'source', 'zoom']);
    assert.deepEqual(query.inputSchema.required, ['source']);
  });

  for (const c of CASES.filter((x) => x.route)) {
    test(`${c.tool}: valid arguments answer what ${c.route} answers; invalid ones are a tool error naming the argument`, async () => {
      const ok = (await client.callTool({ name: c.tool, arguments: c.valid }, undefined, { timeout: 15_000 })) as CallResult;
      assert.ok(!ok.isError, JSON.stringify(ok).slice(0, 300));
      const viaHttp = await fetch(server.url + c.route!, { signal: AbortSignal.timeout(10_000) });
      assert.equal(viaHttp.status, 200);
      assert.deepEqual(JSON.parse(textOf(ok)), await viaHttp.json());
      const bad = (await client.callTool({ name: c.tool, arguments: c.invalid }, undefined, { timeout: 10_000 })) as CallResult;
      assert.equal(bad.isError, true);
      assert.match(textOf(bad), c.says);
      assert.match(textOf(bad), new RegExp(`invalid arguments for ${c.tool}`));
    });
  }

  test('query_features: the features in the box, as the spatial query answers; a bad box is a tool error', async () => {
    const c = CASES.find((x) => x.tool === 'query_features')!;
    const ok = (await client.callTool({ name: c.tool, arguments: c.valid }, undefined, { timeout: 15_000 })) as CallResult;
    assert.ok(!ok.isError, JSON.stringify(ok).slice(0, 300));
    const viaHttp = await fetch(`${server.url}/api/spatial/query`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(c.valid), signal: AbortSignal.timeout(10_000) });
    const expected = (await viaHttp.json()) as { features: unknown[] };
    const got = JSON.parse(textOf(ok)) as { features: { layer: string; properties: Record<string, unknown> }[] };
    assert.deepEqual(got, expected);
    assert.ok(got.features.length > 0 && got.features.length <= 5, `${got.features.length} features`);
    const bad = (await client.callTool({ name: c.tool, arguments: c.invalid }, undefined, { timeout: 10_000 })) as CallResult;
    assert.equal(bad.isError, true);
    assert.match(textOf(bad), c.says);
  });

  test('an unknown source is a tool error with the route\'s own words, not a crash', async () => {
    const r = (await client.callTool({ name: 'get_tilejson', arguments: { source: 'nowhere' } }, undefined, { timeout: 10_000 })) as CallResult;
    assert.equal(r.isError, true);
    assert.match(textOf(r), /get_tilejson failed \(404\)/);
    assert.match(textOf(r), /nowhere/);
    // Arguments that are not an object: the SDK's server checks every request against its schema before any
    // handler runs, and answers a JSON-RPC error -32603 naming params.arguments; then a tool that does not exist.
    await assert.rejects(client.callTool({ name: 'get_tilejson', arguments: [1, 2] as unknown as Record<string, unknown> }, undefined, { timeout: 10_000 }), /MCP error -32603: [^]*"arguments"[^]*expected record, received array/);
    await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }, undefined, { timeout: 10_000 }), /MCP error -32602: unknown tool "no_such_tool"/);
    const still = (await client.callTool({ name: 'list_styles', arguments: {} }, undefined, { timeout: 10_000 })) as CallResult;
    assert.ok(!still.isError);
  });

  test('render_static_map returns a PNG of the asked size; bad arguments are a tool error', async () => {
    const c = CASES.find((x) => x.tool === 'render_static_map')!;
    // The renderer starts in the background: a 503 (a tool error saying so) until it is up.
    const ok = await waitFor('a rendered static map', async () => {
      const r = (await client.callTool({ name: c.tool, arguments: c.valid }, undefined, { timeout: 60_000 })) as CallResult;
      return r.isError ? undefined : r;
    }, 90_000);
    assert.equal(ok.content[0].type, 'image');
    assert.equal(ok.content[0].mimeType, 'image/png');
    const img = await decode(Buffer.from(ok.content[0].data!, 'base64'));
    assert.deepEqual([img.width, img.height], [96, 64]);
    const bad = (await client.callTool({ name: c.tool, arguments: c.invalid }, undefined, { timeout: 10_000 })) as CallResult;
    assert.equal(bad.isError, true);
    assert.match(textOf(bad), c.says);
  });

  test('without the token, or with another, /mcp answers 401 with WWW-Authenticate and problem JSON', async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const none = await fetch(`${server.url}/mcp`, { method: 'POST', headers, body, signal: AbortSignal.timeout(10_000) });
    assert.equal(none.status, 401);
    assert.equal(none.headers.get('www-authenticate'), 'Bearer realm="mcp"');
    assert.equal(none.headers.get('content-type'), 'application/problem+json');
    const wrong = await fetch(`${server.url}/mcp`, { method: 'POST', headers: { ...headers, authorization: `Bearer ${TOKEN}x` }, body, signal: AbortSignal.timeout(10_000) });
    assert.equal(wrong.status, 401);
    assert.match(wrong.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
    await assert.rejects(connect(server.url, 'not-the-token-at-all'), /401/);
    const right = await fetch(`${server.url}/mcp`, { method: 'POST', headers: { ...headers, authorization: `Bearer ${TOKEN}` }, body, signal: AbortSignal.timeout(10_000) });
    assert.equal(right.status, 200);
  });
});

describe('/mcp is stateless: GET and DELETE', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ toml: `${CITIES}\n[server]\ndisable_render = true\n[mcp]\nenabled = true\nauth_token = "${TOKEN}"\n` });
  });
  after(async () => {
    await server?.stop();
  });

  test('GET and DELETE /mcp answer 405 with Allow: POST and problem JSON, after the token check', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(`${server.url}/mcp`, { method, headers: { authorization: `Bearer ${TOKEN}`, accept: 'text/event-stream' }, signal: AbortSignal.timeout(10_000) });
      assert.equal(res.status, 405, method);
      assert.equal(res.headers.get('allow'), 'POST', method);
      assert.equal(res.headers.get('content-type'), 'application/problem+json', method);
      assert.match(((await res.json()) as { detail: string }).detail, new RegExp(`^${method} is not allowed on /mcp: the endpoint is stateless`));
      const anonymous = await fetch(`${server.url}/mcp`, { method, headers: { accept: 'text/event-stream' }, signal: AbortSignal.timeout(10_000) });
      assert.equal(anonymous.status, 401, `${method} without a token`);
      assert.equal(anonymous.headers.get('www-authenticate'), 'Bearer realm="mcp"');
    }
  });

  test('an SDK client connected and idle for 3 s asks for the event stream once (405) and never again', async () => {
    // Every request the SDK's transport makes, with the status it got: the client side of a counting proxy.
    const seen: string[] = [];
    const counting = async (url: string | URL, init?: RequestInit): Promise<Response> => {
      const res = await fetch(url, init);
      seen.push(`${init?.method ?? 'GET'} ${res.status}`);
      return res;
    };
    const client = new Client({ name: 'mcp-idle-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } }, fetch: counting }), { timeout: 15_000 });
    try {
      // The SDK opens its GET stream once initialization is done; wait for that first attempt, then stay idle.
      await waitFor('the first GET /mcp', () => seen.some((r) => r.startsWith('GET ')) || undefined);
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      assert.deepEqual(seen.filter((r) => r.startsWith('GET ')), ['GET 405'], seen.join(', '));
      // Still connected and working.
      const r = (await client.callTool({ name: 'list_styles', arguments: {} }, undefined, { timeout: 10_000 })) as CallResult;
      assert.ok(!r.isError);
    } finally {
      await client.close();
    }
  });
});

describe('/mcp off', () => {
  test('without [mcp] enabled, /mcp is 404 like any unknown path', async () => {
    const server = await startServer({ toml: CITIES });
    try {
      const res = await fetch(`${server.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}', signal: AbortSignal.timeout(10_000) });
      assert.equal(res.status, 404);
      const wk = await fetch(`${server.url}/.well-known/oauth-authorization-server`, { signal: AbortSignal.timeout(10_000) });
      assert.equal(wk.status, 404);
    } finally {
      await server.stop();
    }
  });
});

describe('[mcp] settings', () => {
  test('a static token together with [mcp.oauth] enabled stops start-up with one line naming the key', async () => {
    const file = writeTempConfig(`${CITIES}\n[mcp]\nenabled = true\nauth_token = "${TOKEN}"\n[mcp.oauth]\nenabled = true\nconsent_secret = "operator-secret"\n`);
    const r = await runCli(['--config', file]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /mcp\.auth_token: a static token and \[mcp\.oauth\] enabled cannot both be set/);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  });

  test('[mcp.oauth] enabled without a consent secret, and a short token, are refused with the key named', async () => {
    const noSecret = await runCli(['--config', writeTempConfig(`${CITIES}\n[mcp]\nenabled = true\n[mcp.oauth]\nenabled = true\n`)]);
    assert.equal(noSecret.code, 1);
    assert.match(noSecret.stderr, /mcp\.oauth\.consent_secret: required when \[mcp\.oauth\] is enabled/);
    const short = await runCli(['--config', writeTempConfig(`${CITIES}\n[mcp]\nenabled = true\nauth_token = "short"\n`)]);
    assert.equal(short.code, 1);
    assert.match(short.stderr, /mcp\.auth_token: at least 16 characters/);
    const unset = await runCli(['--config', writeTempConfig(`${CITIES}\n[mcp]\nenabled = true\nauth_token = "\${MCP_TEST_UNSET_VAR}"\n`)]);
    assert.equal(unset.code, 1);
    assert.match(unset.stderr, /mcp\.auth_token: environment variable MCP_TEST_UNSET_VAR is not set/);
  });

  test('an OAuth store that cannot be opened stops start-up with one line naming mcp.oauth.store_path', async () => {
    // A path under a regular file: no directory can be made there.
    const file = writeTempConfig(`${CITIES}\n[cache]\ndir = "${tempDir('tsts-mcp-store-')}"\n[mcp]\nenabled = true\n[mcp.oauth]\nenabled = true\nconsent_secret = "operator-secret"\nstore_path = "config.toml/oauth.sqlite"\n`);
    const r = await runCli(['--config', file, '--port', '0']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^tileserver-ts: mcp\.oauth\.store_path: cannot open \/.+\/config\.toml\/oauth\.sqlite: /);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  });
});

describe('tileserver-ts mcp-stdio with server.disable_render', () => {
  let client: Client;
  let transport: StdioClientTransport;
  let stderr = '';
  before(async () => {
    const file = writeTempConfig(`${CITIES}\n[server]\ndisable_render = true\n`);
    transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp-stdio', '--config', file], env: { ...process.env, LOG_LEVEL: 'info' } as Record<string, string>, stderr: 'pipe' });
    transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    client = new Client({ name: 'mcp-stdio-test', version: '1.0.0' });
    await client.connect(transport, { timeout: 30_000 });
  });
  after(async () => {
    await client?.close();
  });

  test('lists the data tools (rendering is off) and answers each; bad input is a tool error', async () => {
    const { tools } = await client.listTools(undefined, { timeout: 10_000 });
    assert.deepEqual(tools.map((t) => t.name).sort(), CASES.map((c) => c.tool).filter((t) => t !== 'render_static_map').sort());
    for (const c of CASES.filter((x) => x.tool !== 'render_static_map')) {
      const ok = (await client.callTool({ name: c.tool, arguments: c.valid }, undefined, { timeout: 15_000 })) as CallResult;
      assert.ok(!ok.isError, `${c.tool}: ${JSON.stringify(ok).slice(0, 300)}`);
      assert.ok(JSON.parse(textOf(ok)));
      const bad = (await client.callTool({ name: c.tool, arguments: c.invalid }, undefined, { timeout: 10_000 })) as CallResult;
      assert.equal(bad.isError, true, c.tool);
      assert.match(textOf(bad), c.says);
    }
    const stats = JSON.parse(textOf((await client.callTool({ name: 'get_source_stats', arguments: { source: 'cities' } })) as CallResult)) as { name: string; maxzoom: number };
    assert.equal(stats.name, 'Major cities from Natural Earth data');
    assert.equal(stats.maxzoom, 6);
    // TileJSON URLs point where the HTTP service of this configuration would listen.
    const tj = JSON.parse(textOf((await client.callTool({ name: 'get_tilejson', arguments: { source: 'cities' } })) as CallResult)) as { tiles: string[] };
    assert.match(tj.tiles[0], /^http:\/\/localhost:8080\/data\/cities\/\{z\}\/\{x\}\/\{y\}\.pbf/);
  });

  test('closing stdin ends the process', async () => {
    const pid = transport.pid!;
    await client.close();
    await waitFor('mcp-stdio to exit', () => !alive(pid) || undefined);
    assert.match(stderr, /"reason":"stdin closed".*"msg":"mcp-stdio: stopping"/);
    assert.match(stderr, /"msg":"mcp-stdio: stopped"/);
  });
});

/** Whether a process of this id still exists. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Every process below `pid` (a renderer's browsers and their helpers), from /proc. */
function descendants(pid: number): number[] {
  const parentOf = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // The field after the parenthesised command (which may hold spaces) is the state, then the parent's pid.
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      parentOf.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      /* gone meanwhile */
    }
  }
  const found: number[] = [];
  const walk = (p: number) => {
    for (const [child, parent] of parentOf) if (parent === p) found.push(child), walk(child);
  };
  walk(pid);
  return found;
}

describe('tileserver-ts mcp-stdio with a style to render', () => {
  let client: Client;
  let transport: StdioClientTransport;
  let stderr = '';
  const errors: Error[] = [];
  before(async () => {
    const file = writeTempConfig(osmLibertyToml(`[render]\npool_size = 1\n[cache]\ndir = "${tempDir('tsts-mcp-stdio-')}"\n`));
    transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp-stdio', '--config', file], env: { ...process.env, LOG_LEVEL: 'info' } as Record<string, string>, stderr: 'pipe' });
    transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    client = new Client({ name: 'mcp-stdio-render-test', version: '1.0.0' });
    // A line on stdout that is not a JSON-RPC message (a log, a renderer's output) is reported here.
    client.onerror = (err) => errors.push(err);
    await client.connect(transport, { timeout: 30_000 });
  });
  after(async () => {
    await client?.close();
  });

  test('offers render_static_map with the other tools and returns a PNG of the asked size; stdout carries only the protocol', async () => {
    const { tools } = await client.listTools(undefined, { timeout: 10_000 });
    assert.deepEqual(tools.map((t) => t.name).sort(), CASES.map((c) => c.tool).sort());
    const c = CASES.find((x) => x.tool === 'render_static_map')!;
    // The renderer starts in the background, as in the HTTP service: a tool error carrying the 503 until it is up.
    const ok = await waitFor('a rendered static map over stdio', async () => {
      const r = (await client.callTool({ name: c.tool, arguments: c.valid }, undefined, { timeout: 60_000 })) as CallResult;
      return r.isError ? undefined : r;
    }, 90_000);
    assert.equal(ok.content[0].type, 'image');
    assert.equal(ok.content[0].mimeType, 'image/png');
    const img = await decode(Buffer.from(ok.content[0].data!, 'base64'));
    assert.deepEqual([img.width, img.height], [96, 64]);
    const bad = (await client.callTool({ name: c.tool, arguments: c.invalid }, undefined, { timeout: 10_000 })) as CallResult;
    assert.equal(bad.isError, true);
    assert.match(textOf(bad), c.says);
    assert.deepEqual(errors.map((e) => e.message), []);
    assert.match(stderr, /"rendering":true.*"msg":"mcp-stdio: serving the MCP tools on stdin\/stdout"/);
  });

  test('SIGTERM ends the process and its renderers', async () => {
    const pid = transport.pid!;
    const below = descendants(pid);
    assert.ok(below.length > 0, 'the renderer runs browser processes below mcp-stdio');
    process.kill(pid, 'SIGTERM');
    await waitFor('mcp-stdio and its renderers to exit', () => (![pid, ...below].some(alive) ? true : undefined), 30_000);
    assert.match(stderr, /"reason":"SIGTERM".*"msg":"mcp-stdio: stopping"/);
    assert.match(stderr, /"msg":"mcp-stdio: stopped"/);
  });
});
