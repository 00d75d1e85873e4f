// Sprites over HTTP: 1x and 2x sheets and metadata from the files beside the style (named after the sprite URL's
// basename, or sprite.*), 404 when missing, 400 for what is not a sprite file name, and no way out of the
// style's folder.
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { rawGet } from './helpers/raw-http.js';
import { fixture, startServer, type TestServer } from './helpers/server.js';

const LIBERTY = fixture('styles/osm-liberty');
const sheet = (name: string) => readFileSync(path.join(LIBERTY, 'sprites', name));
const SECRET = Buffer.from('{"secret": "outside the style folder"}');

const tmp = mkdtempSync(path.join(os.tmpdir(), 'tsts-sprites-'));
/** Writes a style folder with the given sprite URL and sprite files copied from OSM Liberty's. */
function styleDir(name: string, sprite: string | undefined, files: Record<string, string>): string {
  const dir = path.join(tmp, name);
  mkdirSync(dir, { recursive: true });
  for (const [to, from] of Object.entries(files)) copyFileSync(path.join(LIBERTY, 'sprites', from), path.join(dir, to));
  const file = path.join(dir, 'style.json');
  writeFileSync(file, JSON.stringify({ version: 8, ...(sprite ? { sprite } : {}), sources: {}, layers: [{ id: 'bg', type: 'background' }] }));
  return file;
}
const BESIDE = styleDir('beside', 'https://cdn.example.org/a/b/mysprite', {
  'mysprite.json': 'osm-liberty.json',
  'mysprite.png': 'osm-liberty.png',
  'mysprite@2x.json': 'osm-liberty@2x.json',
  'mysprite@2x.png': 'osm-liberty@2x.png',
});
const FALLBACK = styleDir('fallback', 'https://cdn.example.org/x/icons', { 'sprite.json': 'osm-liberty.json', 'sprite.png': 'osm-liberty.png' });
const NONE = styleDir('none', undefined, {});
// A relative sprite URL pointing out of the style's folder, at files that do exist there.
const ESCAPE = styleDir('escape/inner', '../secret', {});
writeFileSync(path.join(tmp, 'escape', 'secret.json'), SECRET);
writeFileSync(path.join(tmp, 'escape', 'secret.png'), SECRET);

let server: TestServer;
before(async () => {
  const styles = { 'osm-liberty': path.join(LIBERTY, 'style.json'), beside: BESIDE, fallback: FALLBACK, none: NONE, escape: ESCAPE };
  server = await startServer({ toml: Object.entries(styles).map(([id, p]) => `[[styles]]\nid = "${id}"\npath = "${p}"\n`).join('') });
});
after(async () => {
  await server?.stop();
});

async function bytes(url: string, type: string): Promise<Buffer> {
  const res = await fetch(`${server.url}${url}`);
  assert.equal(res.status, 200, url);
  assert.match(res.headers.get('content-type') ?? '', new RegExp(`^${type}`), url);
  return Buffer.from(await res.arrayBuffer());
}

async function assertProblem(url: string, status: number): Promise<void> {
  const res = await fetch(`${server.url}${url}`);
  assert.equal(res.status, status, url);
  assert.equal(res.headers.get('content-type'), 'application/problem+json', url);
}

test('OSM Liberty sprites at 1x and 2x: the files beside the style, with their content types', async () => {
  assert.deepEqual(await bytes('/styles/osm-liberty/sprite.png', 'image/png'), sheet('osm-liberty.png'));
  assert.deepEqual(await bytes('/styles/osm-liberty/sprite@2x.png', 'image/png'), sheet('osm-liberty@2x.png'));
  assert.deepEqual(await bytes('/styles/osm-liberty/sprite.json', 'application/json'), sheet('osm-liberty.json'));
  const meta2x = JSON.parse((await bytes('/styles/osm-liberty/sprite@2x.json', 'application/json')).toString()) as Record<string, { pixelRatio: number }>;
  assert.ok(Object.keys(meta2x).length > 200);
  assert.equal(Object.values(meta2x)[0].pixelRatio, 2);
});

test('sprite files are found by the basename of the sprite URL, else as sprite.*; the served style points here', async () => {
  assert.deepEqual(await bytes('/styles/beside/sprite@2x.png', 'image/png'), sheet('osm-liberty@2x.png'));
  assert.deepEqual(await bytes('/styles/fallback/sprite.json', 'application/json'), sheet('osm-liberty.json'));
  for (const id of ['beside', 'fallback']) {
    const style = (await (await fetch(`${server.url}/styles/${id}/style.json?key=k`)).json()) as { sprite: string };
    assert.equal(style.sprite, `${server.url}/styles/${id}/sprite?key=k`);
  }
});

test('missing sprites: 404 for a scale without files, a style without sprite and an unknown style', async () => {
  await assertProblem('/styles/osm-liberty/sprite@3x.png', 404);
  await assertProblem('/styles/fallback/sprite@2x.json', 404);
  await assertProblem('/styles/none/sprite.png', 404);
  await assertProblem('/styles/nope/sprite.json', 404);
  const none = (await (await fetch(`${server.url}/styles/none/style.json`)).json()) as Record<string, unknown>;
  assert.equal('sprite' in none, false, 'a style without sprite does not get one');
});

test('what is not sprite[@2x|@3x].png|json: 400', async () => {
  for (const f of ['sprite@4x.png', 'sprite@1.5x.png', 'sprite@0x.json', 'sprite.svg', 'sprite.jpg', 'sprite@2x', 'sprite', 'sprite.png.json%00']) {
    await assertProblem(`/styles/osm-liberty/${f}`, 400);
  }
});

test('no sprite file outside the style folder is ever served', async () => {
  const escape = (await (await fetch(`${server.url}/styles/escape/style.json`)).json()) as { sprite: string };
  assert.equal(escape.sprite, '../secret', 'the sprite is not served from here, so its URL stays as written');
  const attempts = [
    '/styles/escape/sprite.json',
    '/styles/escape/sprite.png',
    '/styles/..%2Fescape/sprite.json',
    '/styles/%2E%2E/sprite.json',
    '/styles/osm-liberty/sprite.json%2F..%2F..%2Fstyle.json',
    '/styles/osm-liberty/sprite%2F..%2F..%2F..%2Fescape%2Fsecret.json',
    '/styles/osm-liberty/../../escape/secret.json',
    '/styles/osm-liberty/sprite@2x.json/../../../../../etc/passwd',
  ];
  for (const p of attempts) {
    const res = await rawGet(server.url, p);
    assert.ok(res.status === 400 || res.status === 404, `${p}: ${res.status}`);
    assert.equal(res.headers['content-type'], 'application/problem+json', p);
    assert.ok(!res.body.includes(SECRET) && !res.body.includes('root:'), p);
  }
});
