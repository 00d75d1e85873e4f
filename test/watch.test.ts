// server.watch through the real server: an archive replaced on disk and a style file rewritten are served
// without a SIGHUP or an admin call, with every request of a light load answering 200 while they are swapped;
// a style file written in two halves with a pause between them is never loaded half-way (the reload waits
// until the file's size and mtime are stable); an icon and a font file added are served; with two worker
// processes the primary reloads each once. The log names the file that changed. Partial copies (*.part), swap
// (*.swp) and backup (*~) files start no reload.
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { request, sha256, storedPmtilesTile, tempDir, ungzipIfNeeded, waitFor } from './helpers/foundation.js';
import { fixture, startServer, type TestServer } from './helpers/server.js';

const TTF = fixture('font-files/NotoSans-Regular.ttf');

const FIRST = fixture('vector/test_fixture_1.pmtiles');
const SECOND = fixture('vector/test_fixture_2.pmtiles');

const dir = tempDir('tsts-watch-');
const archive = path.join(dir, 'data.pmtiles');
const styleFile = path.join(dir, 'style.json');
const iconDir = path.join(dir, 'icons');
const fonts = path.join(dir, 'fonts');
mkdirSync(iconDir);
mkdirSync(fonts);
const square = (fill: string) => `<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8" fill="${fill}"/></svg>`;
writeFileSync(path.join(iconDir, 'a.svg'), square('#ff0000'));
const style = (name: string, color: string) =>
  JSON.stringify({
    version: 8,
    name,
    sources: { data: { type: 'vector', url: 'mbtiles://data' } },
    layers: [{ id: 'background', type: 'background', paint: { 'background-color': color } }],
  }, null, 2);

let server: TestServer;

before(async () => {
  copyFileSync(FIRST, archive);
  writeFileSync(styleFile, style('first', '#112233'));
  server = await startServer({
    toml: `fonts = "${fonts}"\n[server]\nwatch = true\ndisable_render = true\n[[sources]]\nid = "data"\ntype = "pmtiles"\npath = "${archive}"\n[[styles]]\nid = "s"\npath = "${styleFile}"\nsprite_dir = "${iconDir}"\n`,
    env: { LOG_LEVEL: 'info', LOG_FORMAT: 'json' },
  });
});

after(() => server?.stop());

const get = (p: string) => request(server.url, p, { timeoutMs: 5_000 });

/** Requests `paths` one after another until stopped; every answer that is not 200 is kept. */
function load(paths: string[]) {
  const failures: string[] = [];
  let n = 0;
  let running = true;
  const done = (async () => {
    while (running) {
      const p = paths[n++ % paths.length];
      const r = await get(p).catch((err: Error) => ({ status: 0, body: Buffer.from(err.message) }));
      if (r.status !== 200) failures.push(`${p}: ${r.status} ${r.body.toString().slice(0, 200)}`);
    }
  })();
  return { failures, count: () => n, stop: async () => ((running = false), await done) };
}

const reloadsLogged = () => server.output().split('\n').filter((l) => l.includes('changed; reloading'));
const failedReloads = () => server.output().split('\n').filter((l) => l.includes('reload failed'));

test('an archive replaced on disk is served at once, with no failed request under load during the swap', { timeout: 60_000 }, async () => {
  const tile = async () => sha256(ungzipIfNeeded((await get('/data/data/0/0/0.pbf')).body));
  const stored = async (file: string) => sha256(ungzipIfNeeded((await storedPmtilesTile(file, 0, 0, 0))!));
  assert.equal(await tile(), await stored(FIRST));
  const wanted = await stored(SECOND);
  assert.notEqual(wanted, await stored(FIRST), 'the two archives differ');
  const traffic = load(['/data/data/0/0/0.pbf', '/data/data.json', '/styles/s/style.json']);
  try {
    // Replaced the way a deployment does it: written beside, then renamed over the served file.
    const temp = path.join(dir, 'data.pmtiles.part');
    copyFileSync(SECOND, temp);
    renameSync(temp, archive);
    await waitFor('the new archive to be served', async () => (await tile()) === wanted || undefined, 20_000);
    await new Promise((r) => setTimeout(r, 300));
  } finally {
    await traffic.stop();
  }
  assert.ok(traffic.count() > 20, `the load ran (${traffic.count()} requests)`);
  assert.deepEqual(traffic.failures, []);
  assert.ok(reloadsLogged().some((l) => l.includes(archive)), `the log names the archive:\n${reloadsLogged().join('\n')}`);
  assert.deepEqual(failedReloads(), []);
});

test('a style file written in two halves with a pause is loaded once, whole, and served', { timeout: 60_000 }, async () => {
  const reloadsBefore = reloadsLogged().length;
  const traffic = load(['/styles/s/style.json', '/data/data/0/0/0.pbf']);
  try {
    // Written in place the way a slow copy writes it: half, a pause shorter than the settle time, the rest.
    const text = style('second', '#445566');
    const cut = Math.floor(text.length / 2);
    writeFileSync(styleFile, text.slice(0, cut));
    await new Promise((r) => setTimeout(r, 500));
    writeFileSync(styleFile, text, { flag: 'w' });
    await waitFor('the new style to be served', async () => {
      const r = await get('/styles/s/style.json');
      return (JSON.parse(r.body.toString()) as { name: string }).name === 'second' || undefined;
    }, 20_000);
  } finally {
    await traffic.stop();
  }
  assert.deepEqual(traffic.failures, []);
  // Had the half file been read, its reload would have failed (invalid JSON) and been logged.
  assert.deepEqual(failedReloads(), [], 'no reload read the half-written style');
  const mine = reloadsLogged().slice(reloadsBefore);
  assert.equal(mine.length, 1, `one reload for the whole write:\n${mine.join('\n')}`);
  assert.ok(mine[0].includes(styleFile));
  assert.equal((JSON.parse(readFileSync(styleFile, 'utf8')) as { name: string }).name, 'second');
});

test('an icon added to the sprite folder and a font file added to the fonts directory are served', { timeout: 60_000 }, async () => {
  const json = async <T>(p: string) => JSON.parse((await get(p)).body.toString()) as T;
  const icons = async () => Object.keys(await json<object>('/styles/s/sprite.json')).sort().join();
  assert.equal(await icons(), 'a');
  assert.deepEqual(await json('/fonts.json'), []);
  writeFileSync(path.join(iconDir, 'b.svg'), square('#0000ff'));
  copyFileSync(TTF, path.join(fonts, 'NotoSans-Regular.ttf'));
  await waitFor('the new icon and font', async () => ((await icons()) === 'a,b' && (await json<string[]>('/fonts.json')).join() === 'Noto Sans Regular') || undefined, 20_000);
  assert.equal((await get('/fonts/Noto%20Sans%20Regular/0-255.pbf')).status, 200);
  assert.deepEqual(failedReloads(), []);
});

test('partial copies, swap and backup files in the watched folders start no reload; the real file that follows does', { timeout: 60_000 }, async () => {
  const before = reloadsLogged().length;
  const transient = [path.join(iconDir, 'c.svg.part'), path.join(iconDir, 'c.svg.swp'), path.join(iconDir, 'a.svg~'), path.join(fonts, 'NotoSans-Bold.ttf.part'), path.join(dir, 'style.json.swp'), path.join(dir, 'data.pmtiles.part')];
  for (const f of transient) writeFileSync(f, 'half');
  // Longer than the debounce (250 ms) and the stable-size wait (1 s) together: a reload would be logged by now.
  await new Promise((r) => setTimeout(r, 3_000));
  assert.deepEqual(reloadsLogged().slice(before), [], 'no reload for transient files');
  // The positive control: the finished file is picked up, and its reload names it alone.
  renameSync(path.join(iconDir, 'c.svg.part'), path.join(iconDir, 'c.svg'));
  writeFileSync(path.join(iconDir, 'c.svg'), square('#00ff00'));
  await waitFor('the renamed icon', async () => (Object.keys(JSON.parse((await get('/styles/s/sprite.json')).body.toString())).includes('c') ? true : undefined), 20_000);
  const mine = reloadsLogged().slice(before);
  assert.equal(mine.length, 1, mine.join('\n'));
  for (const f of transient) assert.ok(!mine[0].includes(`${f}"`), `the reload lists ${f}:\n${mine[0]}`);
  assert.deepEqual(failedReloads(), []);
});

test('with two worker processes a changed style reloads every process once, through the primary', { timeout: 90_000 }, async () => {
  const own = tempDir('tsts-watch-cluster-');
  const file = path.join(own, 'style.json');
  writeFileSync(file, style('one', '#000000'));
  const cluster = await startServer({
    toml: `[server]\nwatch = true\ndisable_render = true\n[[styles]]\nid = "s"\npath = "${file}"\n`,
    workers: 2,
    env: { LOG_LEVEL: 'info', LOG_FORMAT: 'json' },
    timeoutMs: 60_000,
  });
  try {
    const name = async () => (JSON.parse((await request(cluster.url, '/styles/s/style.json', { timeoutMs: 5_000 })).body.toString()) as { name: string }).name;
    const temp = path.join(own, '.style.json.tmp');
    writeFileSync(temp, style('two', '#ffffff'));
    renameSync(temp, file);
    // The reload is over when the primary logs it; until then one process may still have the old style.
    await waitFor('the reload of every process', () => cluster.output().includes('new configuration active in every process') || undefined, 20_000);
    // Fresh connections land on either process: every one answers with the new style.
    for (let i = 0; i < 12; i++) assert.equal(await name(), 'two');
    const lines = cluster.output().split('\n');
    assert.equal(lines.filter((l) => l.includes('changed; reloading')).length, 1, 'one reload, by the primary');
    assert.ok(lines.some((l) => l.includes('"trigger":"watch"') && l.includes('"processes":2')), 'the reload reached both processes');
  } finally {
    await cluster.stop();
  }
});
