// Rate limits against the real server (docs/rate-limits.md): cheap and expensive budgets, 429 with Retry-After,
// the RateLimit headers within budget and on refusals (with CORS), tiles of the fast lane counted, X-Forwarded-For
// believed from trusted proxies only, two servers sharing one budget through a real redis-server (and each
// counting alone while it is killed, sharing again once it is back), a reload changing a class in every worker,
// a reload dropping or changing budgets dropping their counts (in the workers and in the primary), and two worker
// processes counting one budget for the machine. Clients are told apart by the loopback address they connect from
// (127.0.0.x), so that the tests sharing a server never share a budget.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { writeFileSync } from 'node:fs';
import { fixture, freePort, startServer, type TestServer } from './helpers/server.js';
import { startRedis, type RedisServer } from './helpers/redis.js';
import { postJson } from './helpers/reload-load.js';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** Body bytes received. */
  bytes: number;
}

/** GET (or `method`) from the loopback address `from`, on a connection of its own. */
function get(server: TestServer, path: string, from: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: server.port, path, method, headers, agent: false, localAddress: from }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: body.toString(), bytes: body.length });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(20_000, () => req.destroy(new Error(`no answer to ${path}`)));
    req.end();
  });
}

async function statuses(server: TestServer | TestServer[], path: string, from: string, n: number, headers: Record<string, string> = {}): Promise<number[]> {
  const servers = Array.isArray(server) ? server : [server];
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await get(servers[i % servers.length], path, from, headers)).status);
  return out;
}

const ok = (n: number) => new Array<number>(n).fill(200);

function toml(limits: string, extra = ''): string {
  return `[[sources]]
id = "omt"
type = "pmtiles"
path = "${fixture('vector/omt-planet-z0-1.pmtiles')}"
[server]
cors_origins = ["https://app.example"]
${extra}
${limits}
`;
}

/** Cheap: 20 per 20 s window; expensive: 3 per 3 s. Windows long enough that no test straddles two. */
const LIMITS = `[rate_limits]
anonymous_class = "anon"
trusted_proxies = ["127.0.0.100"]
[rate_limits.classes.anon]
cheap = { rate = 1, burst = 20 }
expensive = { rate = 1, burst = 3 }
`;

const TILE = '/data/omt/0/0/0.pbf';

async function until(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 15_000, context: () => string = () => ''): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${context()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const count = (text: string, pattern: RegExp) => text.split('\n').filter((l) => pattern.test(l)).length;

describe('rate limits, one server', () => {
  let server: TestServer;
  let scrape: number;
  before(async () => {
    scrape = await freePort();
    server = await startServer({ toml: toml(LIMITS, `[telemetry]\nscrape_bind = "127.0.0.1:${scrape}"\n`) });
  });
  after(() => server.stop());

  test('the cheap budget: tiles of the fast lane and other cheap routes spend it; then 429 with Retry-After, the RateLimit headers and CORS', async () => {
    const from = '127.0.0.11';
    const first = await get(server, TILE, from);
    assert.equal(first.status, 200);
    assert.equal(first.headers['ratelimit-policy'], '"cheap";q=20;w=20');
    assert.match(String(first.headers.ratelimit), /^"cheap";r=19;t=(19|20)$/);
    assert.deepEqual(await statuses(server, '/data.json', from, 9), ok(9));
    assert.deepEqual(await statuses(server, TILE, from, 10), ok(10));
    const refused = await get(server, TILE, from, { origin: 'https://app.example' });
    assert.equal(refused.status, 429);
    assert.equal(refused.headers['content-type'], 'application/problem+json');
    const retry = Number(refused.headers['retry-after']);
    assert.ok(Number.isInteger(retry) && retry >= 1 && retry <= 20, String(refused.headers['retry-after']));
    assert.equal(refused.headers['ratelimit-policy'], '"cheap";q=20;w=20');
    assert.match(String(refused.headers.ratelimit), /^"cheap";r=0;t=\d+$/);
    assert.equal(refused.headers['access-control-allow-origin'], 'https://app.example');
    assert.match(String(refused.headers['access-control-expose-headers']), /RateLimit,RateLimit-Policy/);
    assert.match(String(refused.headers.vary), /Origin/);
    const problem = JSON.parse(refused.body) as { status: number; title: string; detail: string };
    assert.equal(problem.status, 429);
    assert.match(problem.detail, /cheap budget/);
    // Hono's routes are refused too, and HEAD gets the headers without a body.
    assert.equal((await get(server, '/styles.json', from)).status, 429);
    const head = await get(server, TILE, from, {}, 'HEAD');
    assert.equal(head.status, 429);
    assert.equal(head.body, '');
    // Probes and preflights are never refused.
    assert.equal((await get(server, '/health', from)).status, 200);
    assert.equal((await get(server, TILE, from, { origin: 'https://app.example', 'access-control-request-method': 'GET' }, 'OPTIONS')).status, 204);
  });

  test('the expensive budget is separate: a transcoded tile spends it, not the cheap one', async () => {
    const from = '127.0.0.12';
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await get(server, '/data/omt/0/0/0.mlt', from));
    assert.deepEqual(answers.map((a) => a.status), [200, 200, 200, 429]);
    assert.equal(answers[0].headers['ratelimit-policy'], '"expensive";q=3;w=3');
    assert.equal(answers[3].headers['ratelimit-policy'], '"expensive";q=3;w=3');
    // The cheap budget of this client is untouched.
    const cheap = await get(server, TILE, from);
    assert.equal(cheap.status, 200);
    assert.match(String(cheap.headers.ratelimit), /^"cheap";r=19;/);
  });

  test('X-Forwarded-For from a trusted proxy names the client (forged hops left of it ignored); from any other peer it is ignored', async () => {
    const proxy = '127.0.0.100';
    // Through the proxy, two clients have a budget each.
    assert.deepEqual(await statuses(server, TILE, proxy, 21, { 'x-forwarded-for': '203.0.113.7' }), [...ok(20), 429]);
    assert.deepEqual(await statuses(server, TILE, proxy, 3, { 'x-forwarded-for': '203.0.113.8' }), ok(3));
    // A client that forges hops in front of its own address is still itself.
    assert.equal((await get(server, TILE, proxy, { 'x-forwarded-for': '198.51.100.1, 203.0.113.7' })).status, 429);
    assert.equal((await get(server, TILE, proxy, { 'x-forwarded-for': 'garbage, [2001:db8::1]:443, 203.0.113.7:5000' })).status, 429);
    // A peer that is not a trusted proxy: its header is ignored, so a new forged address every time does not help.
    const direct = '127.0.0.13';
    const forged = [];
    for (let i = 0; i < 21; i++) forged.push((await get(server, TILE, direct, { 'x-forwarded-for': `198.51.100.${i + 10}` })).status);
    assert.deepEqual(forged, [...ok(20), 429]);
  });

  test('usage metrics: requests, bytes, expensive answers and refusals, labelled anonymous for requests without credentials', async () => {
    const metrics = async () => (await fetch(`http://127.0.0.1:${scrape}/metrics`)).text();
    // A series not counted yet is 0: this test reads what its own requests add, whatever ran before it.
    const value = (text: string, series: string) => Number(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
    const added = (before: string, after: string, series: string) => value(after, series) - value(before, series);
    const before = await metrics();
    const from = '127.0.0.14';
    const answers: Answer[] = [];
    // 20 cheap answers and a refusal, then 3 transcoded (expensive) answers and a refusal.
    for (let i = 0; i < 21; i++) answers.push(await get(server, TILE, from));
    for (let i = 0; i < 4; i++) answers.push(await get(server, '/data/omt/0/0/0.mlt', from));
    assert.deepEqual(answers.map((a) => a.status), [...ok(20), 429, 200, 200, 200, 429]);
    // A request is counted when its answer has been sent, which can be a moment after the client has read it.
    let after = '';
    await until('every request counted', async () => added(before, (after = await metrics()), 'usage_requests_total{key="anonymous"}') >= answers.length, 10_000, () => after);
    assert.equal(added(before, after, 'usage_requests_total{key="anonymous"}'), answers.length, after);
    assert.equal(added(before, after, 'usage_sent_bytes_total{key="anonymous"}'), answers.reduce((n, a) => n + a.bytes, 0), 'the body bytes the client received');
    assert.equal(added(before, after, 'usage_renders_total{key="anonymous"}'), 3, 'the expensive answers below 400');
    assert.equal(added(before, after, 'usage_limited_total{key="anonymous",budget="cheap"}'), 1);
    assert.equal(added(before, after, 'usage_limited_total{key="anonymous",budget="expensive"}'), 1);
    // No other label value: no request can add a series.
    assert.deepEqual([...new Set([...after.matchAll(/^usage_\w+\{key="([^"]*)"/gm)].map((m) => m[1]))], ['anonymous']);
  });
});

describe('rate limits shared by a fleet through Redis', () => {
  let redis: RedisServer;
  let a: TestServer;
  let b: TestServer;
  // A generous timeout: on a busy machine (the whole suite on two cores) a count of 50 or 100 ms can go to the
  // local count, and the test of a shared budget would see more than one budget.
  const limits = (url: string) => `[cache]
shared = "${url}"
[rate_limits]
anonymous_class = "anon"
redis_timeout_ms = 500
[rate_limits.classes.anon]
cheap = { rate = 1, burst = 10 }
`;
  const logs = () =>
    [a, b]
      .map((s, i) => `--- server ${'ab'[i]}:\n${(s?.output() ?? '').split('\n').filter((l) => !l.includes('"msg":"request"')).join('\n').slice(-3000)}`)
      .join('\n');
  before(async () => {
    redis = await startRedis();
    // b runs two worker processes: while Redis is down its insurance count is the machine's (the primary's).
    [a, b] = await Promise.all([1, 2].map((workers) => startServer({ toml: toml(limits(redis.url)), workers, env: { LOG_LEVEL: 'info' } })));
    await until('every process connected to Redis', () => count(a.output(), /rate limits: Redis connected/) === 1 && count(b.output(), /rate limits: Redis connected/) === 2, 20_000, logs);
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await redis?.stop();
  });

  test('two servers share one budget; with Redis killed (or paused) each counts alone (logged once) and keeps answering; once Redis is back they share again', async () => {
    const from = '127.0.0.21';
    // One budget of 10 over both servers.
    assert.deepEqual(await statuses([a, b], TILE, from, 12), [...ok(10), 429, 429]);
    const keys = await redis.client.keys('tsts:v1:rl:*');
    assert.ok(keys.length >= 1, 'the budget is counted in Redis');

    await redis.kill();
    await until('every process saw Redis go', () => count(a.output(), /rate limits: Redis unreachable/) === 1 && count(b.output(), /rate limits: Redis unreachable/) === 2, 15_000, logs);
    // Each machine alone: its own 10 (its insurance count starts now), and it keeps answering.
    assert.deepEqual(await statuses(a, TILE, from, 11), [...ok(10), 429]);
    assert.deepEqual(await statuses(b, TILE, from, 11), [...ok(10), 429]);
    assert.equal((await get(a, '/health', from)).status, 200);
    assert.deepEqual((JSON.parse((await get(a, '/ping', '127.0.0.29')).body) as { rate_limits: unknown }).rate_limits, { enabled: true, redis: 'down' });
    // Once per process (each has its own connection): once on a, once in each of b's two workers.
    assert.equal(count(a.output(), /rate limits: Redis unreachable/), 1, a.output().slice(-3000));
    assert.equal(count(b.output(), /rate limits: Redis unreachable/), 2, b.output().slice(-3000));

    await redis.restart();
    await until('every process saw Redis come back', () => count(a.output(), /rate limits: Redis is reachable again/) === 1 && count(b.output(), /rate limits: Redis is reachable again/) === 2, 20_000, logs);
    assert.deepEqual((JSON.parse((await get(b, '/ping', '127.0.0.29')).body) as { rate_limits: unknown }).rate_limits, { enabled: true, redis: 'connected' });
    // The restarted Redis is empty: one new budget of 10, shared by both again.
    const from2 = '127.0.0.22';
    assert.deepEqual(await statuses([a, b], TILE, from2, 12), [...ok(10), 429, 429]);

    // A paused Redis keeps its connection but answers nothing: once counts have taken the whole timeout for a
    // second, the server counts it as down (logged once), answers from its own count at once (no request waits
    // for Redis while it is counted as down: /ping says so), and finds Redis back by itself once it answers again.
    redis.pause();
    const from3 = '127.0.0.23';
    await until('a counting a paused Redis as down', async () => (await get(a, TILE, from3)).status > 0 && count(a.output(), /rate limits: Redis unreachable/) === 2, 15_000, logs);
    assert.match(a.output(), /Redis answered no command within 500 ms/);
    assert.deepEqual((JSON.parse((await get(a, '/ping', '127.0.0.29')).body) as { rate_limits: unknown }).rate_limits, { enabled: true, redis: 'down' });
    // A client new to a: its own count, a budget of 10 (a paused Redis can count nothing).
    assert.deepEqual(await statuses(a, TILE, '127.0.0.24', 11), [...ok(10), 429]);
    redis.resume();
    await until('a finding the paused Redis back', () => count(a.output(), /rate limits: Redis is reachable again/) === 2, 15_000, logs);
    assert.equal(count(a.output(), /rate limits: Redis unreachable/), 2);
    assert.deepEqual((JSON.parse((await get(a, '/ping', '127.0.0.29')).body) as { rate_limits: unknown }).rate_limits, { enabled: true, redis: 'connected' });
  });
});

describe('rate limits, two worker processes', () => {
  let server: TestServer;
  let admin: string;
  before(async () => {
    const adminPort = await freePort();
    admin = `admin_bind = "127.0.0.1:${adminPort}"`;
    server = await startServer({ toml: toml(LIMITS, admin), workers: 2 });
  });
  after(() => server.stop());

  test('the workers of one machine spend one budget (held by the primary), not one each', async () => {
    const from = '127.0.0.31';
    // Each request on a connection of its own: the primary deals connections to the workers in turn.
    assert.deepEqual(await statuses(server, TILE, from, 22), [...ok(20), 429, 429]);
  });

  test('a reload changes a class in every worker', async () => {
    writeFileSync(server.configFile!, toml(LIMITS.replace('cheap = { rate = 1, burst = 20 }', 'cheap = { rate = 2, burst = 8 }'), admin));
    server.proc.kill('SIGHUP');
    const from = '127.0.0.32';
    await until('the new budget', async () => (await get(server, TILE, from)).headers['ratelimit-policy'] === '"cheap";q=8;w=4');
    // Every worker serves the new policy (connections alternate between them).
    for (let i = 0; i < 6; i++) assert.equal((await get(server, '/data.json', `127.0.0.${40 + i}`)).headers['ratelimit-policy'], '"cheap";q=8;w=4');
  });

  test('a reload that drops or changes a budget drops its counts, in the workers and in the primary: the budget back later starts afresh', async () => {
    // Windows of 50 and 20 s: no count ends by itself while the test runs, so only a dropped bucket can start afresh.
    const a = `[rate_limits]
anonymous_class = "anon"
[rate_limits.classes.anon]
cheap = { rate = 0.1, burst = 5 }
expensive = { rate = 0.1, burst = 2 }
`;
    const b = a.replace('cheap = { rate = 0.1, burst = 5 }', 'cheap = { rate = 0.1, burst = 6 }').replace('expensive = { rate = 0.1, burst = 2 }\n', '');
    const reload = async (limits: string) => {
      writeFileSync(server.configFile!, toml(limits, admin));
      // The admin reload answers once every worker has taken the new configuration.
      const res = await postJson(`http://${admin.split('"')[1]}/__admin/reload`);
      assert.equal(res.status, 200, JSON.stringify(res.json));
      assert.equal(res.json.reloaded, true, JSON.stringify(res.json));
    };
    const from = '127.0.0.33';
    const MLT = '/data/omt/0/0/0.mlt';
    await reload(a);
    // Each request on a connection of its own, dealt to the two workers in turn: the machine's one budget.
    assert.deepEqual(await statuses(server, TILE, from, 6), [...ok(5), 429]);
    assert.deepEqual(await statuses(server, MLT, from, 3), [200, 200, 429]);

    await reload(b);
    const cheap = await get(server, TILE, from);
    assert.equal(cheap.status, 200, 'a changed budget: new counts');
    assert.equal(cheap.headers['ratelimit-policy'], '"cheap";q=6;w=60');
    const expensive = await get(server, MLT, from);
    assert.equal(expensive.status, 200, 'a removed budget limits nothing');
    assert.equal(expensive.headers['ratelimit-policy'], undefined);

    // Back to the first budgets: their buckets went with the reload that dropped them, so the counts start afresh.
    await reload(a);
    assert.deepEqual(await statuses(server, TILE, from, 6), [...ok(5), 429]);
    assert.deepEqual(await statuses(server, MLT, from, 3), [200, 200, 429]);
  });
});
