// The parsers of the rate limits under generated input: addresses and CIDR ranges (IPv4, IPv6, mapped, ports,
// zones, garbage), X-Forwarded-For walked from the right (forged hops, huge lists, garbage), the budgets of a rate
// class (schema and the window they are counted in); and the limiter itself without a server: a principal's budget
// (set as the access gate will set it), its headers and its 429.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as v from 'valibot';
import fc from './helpers/fast-check.js';
import { cidrContains, formatIp, parseCidr, parseIp } from '../src/config/cidr.js';
import { RateBudgetSchema, RateLimitsSchema } from '../src/config/schema.js';
import { addressKey, clientAddress, MAX_HOPS } from '../src/limits/client.js';
import { bucketShape } from '../src/limits/budget.js';
import { RateLimits } from '../src/limits/limits.js';
import { classify } from '../src/limits/classify.js';
import { setPrincipal } from '../src/auth/principal.js';
import type { AppState } from '../src/state/app-state.js';
import type { CacheConfig } from '../src/config/schema.js';
import { loadConfigFile } from '../src/config/load.js';
import { writeTempConfig } from './helpers/server.js';

const v4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((b) => b.join('.'));
const v6Full = fc.array(fc.nat(0xffff), { minLength: 8, maxLength: 8 }).map((g) => g.map((x) => x.toString(16)).join(':'));
const port = fc.integer({ min: 1, max: 65535 });
const garbage = fc.oneof(fc.string({ maxLength: 60 }), fc.constantFrom('', ' ', 'unknown', '_hidden', '1.2.3', '1.2.3.4.5', '256.1.1.1', '::g', '[::1', '1.2.3.4:', '1.2.3.4:99999', '[::1]x', 'a'.repeat(500)));

describe('addresses and ranges', () => {
  test('any IPv4 address, bare, with a port, quoted or in the mapped IPv6 form, reads as the same IPv4 address', () => {
    fc.assert(
      fc.property(v4, port, (a, p) => {
        for (const text of [a, `${a}:${p}`, ` ${a} `, `"${a}"`, `::ffff:${a}`, `[::ffff:${a}]:${p}`]) {
          const ip = parseIp(text);
          assert.ok(ip, text);
          assert.equal(ip.v, 4, text);
          assert.equal(formatIp(ip), a.split('.').map(Number).join('.'), text);
        }
      }),
    );
  });

  test('any IPv6 address reads the same bare, bracketed, with a port or a zone, and in its compressed form', () => {
    fc.assert(
      fc.property(v6Full, port, (a, p) => {
        const ip = parseIp(a);
        assert.ok(ip, a);
        const mapped = a.startsWith('0:0:0:0:0:ffff:');
        if (mapped) return;
        assert.equal(ip.v, 6);
        assert.equal(formatIp(ip), a);
        const compressed = a.replace(/(^|:)0(:0)+(:|$)/, '::');
        for (const text of [`[${a}]`, `[${a}]:${p}`, `${a}%eth0`, compressed]) assert.deepEqual(parseIp(text), ip, text);
      }),
    );
  });

  test('garbage is no address and no range, and never throws', () => {
    fc.assert(
      fc.property(garbage, (s) => {
        const ip = parseIp(s);
        if (ip) assert.ok(ip.bytes.length === (ip.v === 4 ? 4 : 16));
        const r = parseCidr(s);
        if (r) assert.ok(r.prefix <= (r.v === 4 ? 32 : 128));
      }),
    );
    for (const s of ['', 'unknown', '1.2.3', '256.0.0.0', '10.0.0.0/33', '::/129', '10.0.0.0/-1', '10.0.0.0/', '[::1]/64', '1.2.3.4:80/32', 'a'.repeat(200)]) {
      assert.equal(parseCidr(s), undefined, s);
    }
  });

  test('a range contains exactly the addresses that share its first prefix bits (IPv4 and IPv6; mapped addresses in IPv4 ranges)', () => {
    fc.assert(
      fc.property(v4, v4, fc.integer({ min: 0, max: 32 }), (base, probe, prefix) => {
        const range = parseCidr(`${base}/${prefix}`)!;
        const ip = parseIp(probe)!;
        const toInt = (s: string) => s.split('.').reduce((n, x) => n * 256 + Number(x), 0);
        const mask = prefix === 0 ? 0 : 2 ** 32 - 2 ** (32 - prefix);
        const expected = (toInt(base) & mask) >>> 0 === (toInt(probe) & mask) >>> 0;
        assert.equal(cidrContains(range, ip), expected);
        assert.equal(cidrContains(range, parseIp(`::ffff:${probe}`)!), expected);
        // The mapped form of a range is the IPv4 range.
        assert.equal(cidrContains(parseCidr(`::ffff:${base}/${96 + prefix}`)!, ip), expected);
      }),
    );
    fc.assert(
      fc.property(v6Full, v6Full, fc.integer({ min: 0, max: 128 }), (base, probe, prefix) => {
        const range = parseCidr(`${base}/${prefix}`)!;
        const ip = parseIp(probe)!;
        if (range.v !== 6 || ip.v !== 6) return;
        const bits = (s: string) => s.split(':').map((g) => parseInt(g, 16).toString(2).padStart(16, '0')).join('');
        assert.equal(cidrContains(range, ip), bits(base).slice(0, prefix) === bits(probe).slice(0, prefix));
      }),
    );
    assert.equal(cidrContains(parseCidr('10.0.0.0/8')!, parseIp('2001:db8::1')!), false);
  });
});

describe('X-Forwarded-For', () => {
  const trusted = ['10.0.0.0/8', 'fd00::/8'].map((s) => parseCidr(s)!);

  test('from an untrusted peer the header is ignored, whatever it says', () => {
    fc.assert(
      fc.property(v4.filter((a) => !a.startsWith('10.')), fc.array(fc.oneof(v4, v6Full, garbage), { maxLength: 50 }), (peer, hops) => {
        const ip = clientAddress(peer, hops.join(', '), trusted);
        assert.equal(formatIp(ip!), formatIp(parseIp(peer)!));
      }),
    );
  });

  test('from a trusted peer the client is the rightmost hop that is not a trusted proxy; forged hops left of it do not matter', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(v4, v6Full, garbage), { maxLength: 20 }),
        v4.filter((a) => !a.startsWith('10.')),
        fc.array(fc.oneof(fc.nat(255).map((n) => `10.0.0.${n}`), fc.constant('fd00::1'), fc.constant('[fd00::2]:8080')), { maxLength: 5 }),
        fc.constantFrom('10.1.2.3', '::ffff:10.1.2.3', 'fd00::9'),
        (forged, client, proxies, peer) => {
          const header = [...forged, `${client}:5555`, ...proxies].join(' , ');
          assert.equal(formatIp(clientAddress(peer, header, trusted)!), client);
        },
      ),
    );
  });

  test('an unreadable hop ends the walk at the nearest trusted proxy; only trusted hops: the leftmost; several header lines read as one list', () => {
    assert.equal(formatIp(clientAddress('10.0.0.1', 'garbage', trusted)!), '10.0.0.1');
    assert.equal(formatIp(clientAddress('10.0.0.1', '1.2.3.4, garbage, 10.0.0.7', trusted)!), '10.0.0.7');
    assert.equal(formatIp(clientAddress('10.0.0.1', '10.0.0.5, 10.0.0.6', trusted)!), '10.0.0.5');
    assert.equal(formatIp(clientAddress('10.0.0.1', ['7.7.7.7', '10.0.0.6'], trusted)!), '7.7.7.7');
    assert.equal(formatIp(clientAddress('10.0.0.1', '', trusted)!), '10.0.0.1');
    assert.equal(clientAddress(undefined, '1.2.3.4', trusted), undefined);
    // No trusted proxies: the header is never read.
    assert.equal(formatIp(clientAddress('10.0.0.1', '1.2.3.4', [])!), '10.0.0.1');
  });

  test(`a huge list of trusted hops is read ${MAX_HOPS} hops deep at most, in bounded time`, () => {
    const header = ['6.6.6.6', ...new Array(100_000).fill('10.0.0.9')].join(',');
    const started = performance.now();
    const ip = clientAddress('10.0.0.1', header, trusted)!;
    assert.ok(performance.now() - started < 200);
    assert.equal(formatIp(ip), '10.0.0.9');
  });

  test('IPv6 clients are counted by their /64, IPv4 by their address', () => {
    fc.assert(
      fc.property(v6Full, fc.array(fc.nat(0xffff), { minLength: 4, maxLength: 4 }), (a, low) => {
        const ip = parseIp(a)!;
        if (ip.v !== 6) return;
        const sibling = parseIp([...a.split(':').slice(0, 4), ...low.map((x) => x.toString(16))].join(':'))!;
        assert.equal(addressKey(sibling), addressKey(ip));
        assert.match(addressKey(ip), /::\/64$/);
      }),
    );
    assert.equal(addressKey(parseIp('::ffff:192.0.2.1')!), '192.0.2.1');
  });
});

describe('budgets', () => {
  test('any valid budget is counted in a whole-second window of at least one point, close to its rate', () => {
    fc.assert(
      fc.property(fc.double({ min: 0.001, max: 100_000, noNaN: true }), fc.double({ min: 1, max: 1000, noNaN: true }), (rate, factor) => {
        const burst = Math.max(1, Math.ceil(rate * factor));
        const parsed = v.safeParse(RateBudgetSchema, { rate, burst });
        if (burst / rate > 86_400) return assert.equal(parsed.success, false);
        assert.ok(parsed.success, JSON.stringify(parsed.issues));
        const { points, duration } = bucketShape(parsed.output);
        assert.ok(Number.isInteger(points) && points >= 1);
        assert.ok(Number.isInteger(duration) && duration >= 1 && duration <= 86_400);
        // Rounding to whole seconds and points: the rate is kept within half a point per window.
        assert.ok(Math.abs(points / duration - rate) <= Math.max(0.5 / duration, rate * 1e-9) + 1e-9, `${rate}/${burst}: ${points}/${duration}`);
      }),
    );
    assert.deepEqual(bucketShape({ rate: 100, burst: 200 }), { points: 200, duration: 2 });
    assert.deepEqual(bucketShape({ rate: 200 }), { points: 200, duration: 1 });
    assert.deepEqual(bucketShape({ rate: 0.5, burst: 1 }), { points: 1, duration: 2 });
  });

  test('rate-class settings of any shape are refused with a message, never thrown on', () => {
    const anyValue = fc.oneof(fc.string(), fc.double(), fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.string(), { maxLength: 3 }));
    fc.assert(
      fc.property(
        fc.dictionary(fc.constantFrom('enabled', 'classes', 'default_class', 'anonymous_class', 'trusted_proxies', 'redis', 'shared', 'redis_timeout_ms'), fc.oneof(anyValue, fc.dictionary(fc.string({ maxLength: 8 }), fc.dictionary(fc.constantFrom('cheap', 'expensive'), fc.dictionary(fc.constantFrom('rate', 'burst'), anyValue))))),
        (input) => {
          const r = v.safeParse(RateLimitsSchema, input);
          if (!r.success) assert.ok(r.issues.every((i) => typeof i.message === 'string' && i.message.length > 0));
        },
      ),
    );
  });

  test('the schema refuses what cannot be counted and names unknown classes and bad proxies', () => {
    const bad = (input: unknown, pattern: RegExp) => {
      const r = v.safeParse(RateLimitsSchema, input);
      assert.equal(r.success, false, JSON.stringify(input));
      assert.match(r.issues!.map((i) => i.message).join('; '), pattern);
    };
    bad({ classes: { a: { cheap: { rate: 10, burst: 5 } } } }, /burst \(5\) must be at least the rate/);
    bad({ classes: { a: { cheap: { rate: 0 } } } }, /at least 0.001/);
    bad({ classes: { a: {} }, default_class: 'b' }, /default_class "b" is not a class.*classes: a/);
    bad({ anonymous_class: 'x' }, /none is configured/);
    bad({ trusted_proxies: ['10.0.0.0/8', 'lb.example.com', '10.0.0.0/40'] }, /"lb.example.com", "10.0.0.0\/40"/);
    bad({ redis: 'http://x' }, /Redis URL/);
    const ok = v.safeParse(RateLimitsSchema, { classes: { free: { cheap: { rate: 5 } } }, anonymous_class: 'free', trusted_proxies: ['::ffff:10.0.0.0/104', '2001:db8::/32', '192.0.2.7'] });
    assert.ok(ok.success);
    assert.equal(ok.output.enabled, true);
    assert.equal(ok.output.shared, true);
  });
});

test('a typo inside a class is warned about with a suggestion, not taken silently as "no limit"', () => {
  const file = writeTempConfig(`[rate_limits]\nanonymous_class = "anon"\n[rate_limits.classes.anon]\ncheep = { rate = 3 }\nexpensive = { rate = 1, brust = 3 }\n`);
  const { warnings, config } = loadConfigFile(file, {});
  assert.ok(warnings.some((w) => /unknown key rate_limits\.classes\.anon\.cheep .*did you mean "cheap"/.test(w)), warnings.join('\n'));
  assert.ok(warnings.some((w) => /rate_limits\.classes\.anon\.expensive\.brust .*did you mean "burst"/.test(w)), warnings.join('\n'));
  assert.deepEqual(config.rate_limits?.classes.anon, { expensive: { rate: 1 } });
  // No section: no rate limits at all.
  assert.equal(loadConfigFile(writeTempConfig('[server]\nport = 8080\n'), {}).config.rate_limits, undefined);
});

describe('cheap and expensive (the table of docs/rate-limits.md)', () => {
  const source = (type: string, format: string) => ({ info: { type, format } });
  const routes = {
    sources: new Map([
      ['omt', source('pmtiles', 'pbf')],
      ['mlt', source('pmtiles', 'mlt')],
      ['cities', source('mbtiles', 'pbf')],
      ['sat', source('pmtiles', 'png')],
      ['cog', source('cog', 'png')],
      ['pg', source('postgres-table', 'pbf')],
      ['fn', source('postgres-function', 'pbf')],
    ]),
    composites: new Map([['both', {}]]),
  } as unknown as AppState;
  const table: [method: string, path: string, kind: 'cheap' | 'expensive'][] = [
    ['GET', '/data/omt/3/1/2.pbf', 'cheap'],
    ['GET', '/data/omt/3/1/2.mvt', 'cheap'],
    ['HEAD', '/data/cities/0/0/0.pbf', 'cheap'],
    ['GET', '/data/sat/1/0/0.png', 'cheap'],
    ['GET', '/data/mlt/3/1/2.mlt', 'cheap'],
    ['GET', '/data/omt/3/1/2.mlt', 'expensive'],
    ['GET', '/data/mlt/3/1/2.pbf', 'expensive'],
    ['GET', '/data/omt/3/1/2.geojson', 'expensive'],
    ['GET', '/data/omt+cities/3/1/2.pbf', 'expensive'],
    ['GET', '/data/omt%2Bcities/3/1/2.pbf', 'expensive'],
    ['GET', '/data/both/3/1/2.pbf', 'expensive'],
    ['GET', '/data/cog/10/500/300.webp', 'expensive'],
    ['GET', '/data/pg/10/500/300.pbf', 'expensive'],
    ['GET', '/data/fn/10/500/300.pbf', 'expensive'],
    ['GET', '/data/nope/3/1/2.pbf', 'cheap'],
    ['GET', '/data/omt.json', 'cheap'],
    ['GET', '/data.json', 'cheap'],
    ['GET', '/data/cog/hillshade/10/500/300.png', 'expensive'],
    ['GET', '/data/cog/hillshade/10/500/300@2x.webp', 'expensive'],
    ['GET', '/data/cog/hillshade.json', 'cheap'],
    ['GET', '/data/cog/hillshade/wmts.xml', 'cheap'],
    ['GET', '/data/cog/contours/10/500/300.pbf', 'expensive'],
    ['GET', '/data/cog/contours.json', 'cheap'],
    ['GET', '/data/cog/elevation/10/500/300', 'cheap'],
    ['POST', '/data/cog/elevation', 'expensive'],
    ['GET', '/api/elevation/cog', 'cheap'],
    ['POST', '/api/elevation/cog', 'expensive'],
    ['POST', '/api/elevation/cog/profile', 'expensive'],
    ['POST', '/api/upload', 'expensive'],
    ['GET', '/api/upload', 'cheap'],
    ['DELETE', '/api/upload/0f0f', 'cheap'],
    ['POST', '/api/spatial/query', 'expensive'],
    ['GET', '/api/spatial/stats/omt', 'expensive'],
    ['GET', '/api/spatial/schema/omt', 'cheap'],
    ['GET', '/styles.json', 'cheap'],
    ['GET', '/styles/osm/style.json', 'cheap'],
    ['GET', '/styles/osm.json', 'cheap'],
    ['GET', '/styles/osm/wmts.xml', 'cheap'],
    ['GET', '/styles/osm/sprite@2x.png', 'cheap'],
    ['GET', '/styles/osm/sprite.json', 'cheap'],
    ['GET', '/styles/osm/', 'cheap'],
    ['GET', '/styles/osm/3/1/2.png', 'expensive'],
    ['GET', '/styles/osm/3/1/2@2x.webp', 'expensive'],
    ['GET', '/styles/osm/256/3/1/2.jpg', 'expensive'],
    ['GET', '/styles/osm/512/3/1/2@2x.png', 'expensive'],
    ['GET', '/styles/osm/300/3/1/2.png', 'cheap'],
    ['GET', '/styles/osm/static/10,45,3/300x200.png', 'expensive'],
    ['POST', '/styles/osm/static/auto/300x200@2x.png', 'expensive'],
    ['GET', '/og/osm', 'expensive'],
    ['GET', '/ogc', 'cheap'],
    ['GET', '/ogc/collections/omt/tiles/WebMercatorQuad/3/2/1', 'cheap'],
    ['GET', '/ogc/collections/cog/tiles/WebMercatorQuad/3/2/1', 'expensive'],
    ['GET', '/ogc/collections/cog.hillshade/tiles/WebMercatorQuad/3/2/1', 'expensive'],
    ['GET', '/ogc/collections/cog.contours/tiles/WebMercatorQuad/3/2/1', 'expensive'],
    ['GET', '/ogc/collections/omt/tiles/WebMercatorQuad', 'cheap'],
    ['GET', '/ogc/collections/pg/items', 'expensive'],
    ['GET', '/ogc/collections/pg/items/17', 'expensive'],
    // No route serves the dataset's map tiles (only its tileset list): answered 404, cheap.
    ['GET', '/ogc/map/tiles/WebMercatorQuad/3/2/1', 'cheap'],
    ['GET', '/ogc/styles/osm/map/tiles/WebMercatorQuad/3/2/1', 'expensive'],
    ['GET', '/ogc/styles/osm/map/tiles', 'cheap'],
    ['POST', '/mcp', 'expensive'],
    ['GET', '/fonts/Noto%20Sans%20Regular/0-255.pbf', 'cheap'],
    ['GET', '/files/a/b.geojson', 'cheap'],
    ['GET', '/', 'cheap'],
    ['GET', '/ping', 'cheap'],
    ['GET', '/openapi.json', 'cheap'],
    ['GET', '/embed/osm', 'cheap'],
  ];
  test('every route family', () => {
    for (const [method, path, kind] of table) assert.equal(classify(routes, method, path), kind, `${method} ${path}`);
  });
  test('any path is classified without throwing', () => {
    fc.assert(
      fc.property(fc.constantFrom('GET', 'POST', 'HEAD', 'DELETE'), fc.oneof(fc.string(), fc.webPath(), fc.constantFrom('/data/%E0%A4%A/1/2/3.pbf', '/data//1/2/3.pbf', '/styles//static/', '/ogc/collections/%/tiles/x/1/2/3')), (method, path) => {
        assert.ok(['cheap', 'expensive'].includes(classify(routes, method, path.startsWith('/') ? path : `/${path}`)));
      }),
    );
  });
});

/** A request as node:http hands it over, enough for the limiter. */
function fakeRequest(url: string, remote = '192.0.2.10', headers: Record<string, string> = {}): IncomingMessage {
  return { method: 'GET', url, headers, socket: { remoteAddress: remote } } as unknown as IncomingMessage;
}

interface FakeResponse {
  res: ServerResponse;
  headers: Record<string, string>;
  status: number | undefined;
  body: string | undefined;
}

function fakeResponse(): FakeResponse {
  const out: FakeResponse = { res: undefined as unknown as ServerResponse, headers: {}, status: undefined, body: undefined };
  const res = Object.assign(new EventEmitter(), {
    headersSent: false,
    writableEnded: false,
    setHeader(name: string, value: string) {
      out.headers[name.toLowerCase()] = value;
    },
    writeHead(status: number, headers: Record<string, string>) {
      out.status = status;
      for (const [k, val] of Object.entries(headers)) out.headers[k.toLowerCase()] = val;
    },
    end(body?: string) {
      out.body = body;
    },
  });
  out.res = res as unknown as ServerResponse;
  return out;
}

const noCors = () => ({ headers: { 'access-control-allow-origin': '*' }, varyOrigin: false });
const silent = { info() {}, warn() {}, error() {}, debug() {} } as never;
const cache = { shared: undefined } as unknown as CacheConfig;
const state = { sources: new Map(), composites: new Map() } as unknown as AppState;

describe('the limiter without a server', () => {
  test("a principal spends its key's class (or the default class); requests without one spend the anonymous class by address", async () => {
    const limits = new RateLimits();
    const cfg = v.parse(RateLimitsSchema, {
      classes: { gold: { cheap: { rate: 3 } }, basic: { cheap: { rate: 1 } }, anon: { cheap: { rate: 2 } } },
      default_class: 'basic',
      anonymous_class: 'anon',
    });
    await limits.configure(cfg, cache, silent);
    const run = async (req: IncomingMessage) => {
      const r = fakeResponse();
      const go = await limits.limitRequest(req, r.res, state, noCors);
      return { go, ...r };
    };
    const keyed = (name: string, rateClass: string | undefined) => {
      const req = fakeRequest('/data/x/0/0/0.pbf');
      setPrincipal(req, { name, via: 'key', rateClass });
      return req;
    };
    const gold = [];
    for (let i = 0; i < 4; i++) gold.push(await run(keyed('alice', 'gold')));
    assert.deepEqual(gold.map((g) => g.go), [true, true, true, false]);
    assert.equal(gold[0].headers['ratelimit-policy'], '"cheap";q=3;w=1');
    assert.equal(gold[2].headers.ratelimit, '"cheap";r=0;t=1');
    assert.equal(gold[3].status, 429);
    assert.equal(gold[3].headers['retry-after'], '1');
    assert.equal(gold[3].headers['access-control-allow-origin'], '*');
    assert.equal(JSON.parse(gold[3].body!).status, 429);
    // Another key of the same class has its own budget; a key without a class (or an unknown one) spends the default.
    assert.equal((await run(keyed('bob', 'gold'))).go, true);
    assert.deepEqual([(await run(keyed('carol', undefined))).go, (await run(keyed('carol', 'gone'))).go], [true, false]);
    // Anonymous: per address, two each.
    const anon = [];
    for (let i = 0; i < 3; i++) anon.push((await run(fakeRequest('/styles.json', '198.51.100.1'))).go);
    assert.deepEqual(anon, [true, true, false]);
    assert.equal((await run(fakeRequest('/styles.json', '198.51.100.2'))).go, true);
    // Probes and preflights are never counted.
    assert.equal(await limits.limitRequest(fakeRequest('/health', '198.51.100.1'), fakeResponse().res, state, noCors), true);
    await limits.close();
  });

  test('without [rate_limits], or with enabled = false, nothing is counted and no header is set', async () => {
    const limits = new RateLimits();
    for (const cfg of [undefined, v.parse(RateLimitsSchema, { enabled: false, classes: { a: { cheap: { rate: 1 } } }, anonymous_class: 'a' })]) {
      await limits.configure(cfg, cache, silent);
      for (let i = 0; i < 5; i++) {
        const r = fakeResponse();
        assert.equal(limits.limitRequest(fakeRequest('/data/x/0/0/0.pbf'), r.res, state, noCors), true);
        assert.deepEqual(r.headers, {});
      }
    }
  });
});
