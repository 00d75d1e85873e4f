// Expiries across the processes of a machine, the machines of a fleet and restarts (src/expire/machine-hub.ts,
// journal.ts, fleet.ts; src/cluster/expire-relay.ts), through real servers and a real redis-server. Expiries are
// given at the admin listener; what a process holds is read from the metrics: each worker's index size
// (`expire_index_tiles`, summed over the workers) against the machine hub's (`expire_hub_index_tiles`).
import assert from 'node:assert/strict';
import { appendFileSync, existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { tempDir, waitFor } from './helpers/foundation.js';
import { childrenOf } from './helpers/processes.js';
import { parseScrape, type Scrape } from './helpers/prom-text.js';
import { startRedis, type RedisServer } from './helpers/redis.js';
import { fixture, freePort, startServer, type TestServer } from './helpers/server.js';

const T = 20_000;

interface Machine {
  server: TestServer;
  dir: string;
  admin: string;
  scrape: string;
  toml: string;
}

async function machineToml(dir: string, redis?: string): Promise<{ toml: string; admin: string; scrape: string }> {
  const adminPort = await freePort();
  const scrapePort = await freePort();
  const toml = `[server]
disable_render = true
admin_bind = "127.0.0.1:${adminPort}"
[[sources]]
id = "omt"
type = "pmtiles"
path = "${fixture('vector/omt-planet-z0-1.pmtiles')}"
[cache]
dir = "${dir}"
${redis ? `shared = "${redis}"` : ''}
[telemetry]
scrape_bind = "127.0.0.1:${scrapePort}"
`;
  return { toml, admin: `http://127.0.0.1:${adminPort}`, scrape: `http://127.0.0.1:${scrapePort}/metrics` };
}

async function startMachine(workers: number, redis?: string, dir = tempDir('tsts-expire-fleet-')): Promise<Machine> {
  const { toml, admin, scrape } = await machineToml(dir, redis);
  const server = await startServer({ toml, workers, timeoutMs: 60_000 });
  return { server, dir, admin, scrape, toml };
}

/** The same machine started again (same cache dir, ports and configuration). */
async function restart(m: Machine, workers = 1): Promise<Machine> {
  const server = await startServer({ toml: m.toml, workers, timeoutMs: 60_000 });
  return { ...m, server };
}

async function metrics(m: Machine): Promise<Scrape | undefined> {
  const res = await fetch(m.scrape).catch(() => undefined);
  return res?.ok ? parseScrape(await res.text()) : undefined;
}

async function expire(m: Machine, lines: string[]): Promise<void> {
  const res = await fetch(`${m.admin}/__admin/expire?source=omt`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: `${lines.join('\n')}\n` });
  assert.equal(res.status, 200, await res.text());
}

/** The machine hub's index size once it holds something, and the workers' summed index size. */
async function sizes(m: Machine): Promise<{ hub: number; processes: number } | undefined> {
  const s = await metrics(m);
  const hub = s?.value('expire_hub_index_tiles');
  const processes = s?.value('expire_index_tiles');
  return hub === undefined || processes === undefined ? undefined : { hub, processes };
}

describe('one machine, two workers', () => {
  let m: Machine;
  before(async () => {
    m = await startMachine(2);
  });
  after(async () => {
    await m?.server.stop();
  });

  test('an expiry at the admin listener reaches both workers, and a worker killed and replaced holds it', async () => {
    // Both workers listen for batches once they are up (/metrics sums both only when both answer).
    await waitFor('two workers', () => (childrenOf(m.server.proc.pid!).length === 2 ? true : undefined), T);
    await waitFor('both workers reporting metrics', async () => ((await sizes(m))?.processes === 0 ? true : undefined), T);
    await expire(m, ['1/0/0', '1/1/1', '6/10/20']);
    const first = await waitFor('each worker to hold the expiry', async () => {
      const s = await sizes(m);
      return s && s.hub > 0 && s.processes === 2 * s.hub ? s : undefined;
    }, T);

    // More batches than the primary keeps for a worker it forks (cluster/expire-relay.ts): the replacement must
    // read the first ones from the journal.
    for (let i = 0; i < 40; i++) await expire(m, [`10/${i}/${i}`]);
    const held = await waitFor('each worker to hold every batch', async () => {
      const s = await sizes(m);
      return s && s.hub > first.hub && s.processes === 2 * s.hub ? s : undefined;
    }, T);

    const [victim] = childrenOf(m.server.proc.pid!);
    process.kill(victim, 'SIGKILL');
    await waitFor('a replacement worker', () => {
      const kids = childrenOf(m.server.proc.pid!);
      return kids.length === 2 && !kids.includes(victim) ? kids : undefined;
    }, T);
    // The replacement read the journal (and got what the primary took since its fork): twice the hub's again.
    const after = await waitFor('the replacement to hold the expiry', async () => {
      const s = await sizes(m);
      return s && s.processes === 2 * held.hub ? s : undefined;
    }, T);
    assert.equal(after.hub, held.hub);

    // A batch given after the replacement started reaches it too.
    await expire(m, ['8/100/100']);
    await waitFor('both workers to hold the second expiry', async () => {
      const s = await sizes(m);
      return s && s.hub > held.hub && s.processes === 2 * s.hub ? s : undefined;
    }, T);
  });
});

describe('two machines sharing Redis, and restarts', () => {
  let redis: RedisServer;
  let a: Machine;
  let b: Machine;
  before(async () => {
    redis = await startRedis();
    [a, b] = await Promise.all([startMachine(1, redis.url), startMachine(1, redis.url)]);
  });
  after(async () => {
    await Promise.all([a?.server.stop(), b?.server.stop()]);
    await redis?.stop();
  });

  /** B holds what A holds (A's index size, B's index size), and B counted `batches` from the fleet. */
  const converged = (batches: number) =>
    waitFor(`machine B to hold machine A's expiries (${batches} batches from the fleet)`, async () => {
      const [sa, sb] = await Promise.all([metrics(a), metrics(b)]);
      const ia = sa?.value('expire_index_tiles');
      const ib = sb?.value('expire_index_tiles');
      const got = sb?.value('expire_fleet_batches_total');
      return ia && ia === ib && got === batches ? { ia, sb: sb! } : undefined;
    }, T);

  test('an expiry at A is applied by B, with its lag observed', async () => {
    // B reads the stream from its end: it must be reading before A publishes (its position is saved once read).
    await waitFor("B's stream position", () => (existsSync(path.join(b.dir, 'expire', 'stream-position')) ? true : undefined), T);
    await expire(a, ['3/1/2', '5/10/11']);
    const { sb } = await converged(1);
    assert.equal(sb.value('expire_fleet_lag_seconds_count'), 1);
    // A's own batch is not read back by A.
    assert.equal((await metrics(a))?.value('expire_fleet_batches_total'), 0);
  });

  test('B stopped, an expiry at A, B started again: B has it from the stream', async () => {
    await b.server.stop();
    await expire(a, ['7/3/4']);
    b = await restart(b);
    // B's index came back from its journal and the batch it missed from the stream: one batch read since start.
    await converged(1);
  });

  test('Redis stopped and started: an expiry accepted meanwhile arrives once it is back', async () => {
    await redis.kill();
    await expire(a, ['9/300/200']);
    await waitFor("the batch waiting in A's outbox", async () => ((await metrics(a))?.value('expire_fleet_outbox_batches') === 1 ? true : undefined), T);
    await redis.restart();
    await converged(2);
    assert.equal((await metrics(a))?.value('expire_fleet_outbox_batches'), 0);
    assert.equal((await metrics(a))?.value('expire_fleet_outbox_dropped_total'), 0);
  });

  test('a restart keeps the index (journal), and a torn tail is dropped with a warning', async () => {
    const before = (await metrics(a))!.value('expire_index_tiles')!;
    assert.ok(before > 0);
    await a.server.stop();
    const journal = path.join(a.dir, 'expire', 'journal');
    const whole = statSync(journal).size;
    // Half a batch, as a crash while writing leaves it.
    appendFileSync(journal, Buffer.from([200, 0, 0, 0, 123, 34]));
    a = await restart(a);
    const s = await waitFor("A's metrics", () => metrics(a), T);
    assert.equal(s.value('expire_index_tiles'), before);
    assert.equal(s.value('expire_journal_bytes'), whole);
    assert.match(a.server.output(), /not a whole batch/);
    assert.equal(statSync(journal).size, whole);
  });

  // Last: afterwards B holds what A does not (the world expired) and lacks A's batch.
  test('B stopped, the entries it missed trimmed from the stream: B expires every source whole', async () => {
    const held = (await metrics(b))!.value('expire_index_tiles')!;
    await b.server.stop();
    await expire(a, ['11/1000/700']);
    // What MAXLEN does to a machine away for more than the stream keeps.
    assert.ok((await redis.client.xtrim('tsts:v1:expire', 'MAXLEN', 0)) > 0);
    b = await restart(b);
    const s = await waitFor('B counting the lost entries', async () => {
      const m = await metrics(b);
      return m?.value('expire_fleet_lost_total') === 1 ? m : undefined;
    }, T);
    // One more entry: the whole world (0/0/0) of source omt, in place of the batch it cannot read.
    assert.equal(s.value('expire_index_tiles'), held + 1);
    assert.equal(s.value('expire_fleet_batches_total'), 0);
    assert.match(b.server.output(), /trimmed from the stream before it read them; every source is expired whole here/);
    // An omt tile B serves now is made afresh (nothing B holds was made after that expiry).
    const res = await fetch(`${b.server.url}/data/omt/1/1/0.pbf`);
    assert.equal(res.status, 200);
  });
});
