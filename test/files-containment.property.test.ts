// Property tests of /files path containment. A temp directory holds the files directory and, beside it, files
// that must never be served: symlinks inside point out (relative and absolute, to files and folders, to a
// sibling whose name starts with the root's name) and back in. Paths are generated — traversal in every
// spelling (percent-encoded, double-encoded, overlong UTF-8, backslashes, NUL, absolute, doubled slashes) mixed
// with real names — and sent to the real containment function and, raw, to the real server. Whatever the path,
// nothing outside is served: an answer is 404 problem+json or the exact bytes of a file inside. Paths to inside
// files, written with any percent-encoding, serve exactly the file an independent walk of the tree finds.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import fc from './helpers/fast-check.js';
import { resolveInside } from '../src/http/routes/files.js';
import { FormCounter } from './helpers/forms.js';
import { rawGet } from './helpers/raw-http.js';
import { startServer, type TestServer } from './helpers/server.js';

fc.configureGlobal({ ...fc.readConfigureGlobal(), includeErrorInReport: true });

// ---- The tree, as data: created on disk from this and walked by the model ---------------------------------------

type Node = { file: true } | { link: string } | { dir: Record<string, Node> };
const FILE: Node = { file: true };
const link = (to: string): Node => ({ link: to });
const dir = (entries: Record<string, Node>): Node => ({ dir: entries });

const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'tsts-files-prop-')));
const ROOT = path.join(base, 'root');

const TREE: Record<string, Node> = {
  'secret.txt': FILE,
  'outside-dir': dir({ 'secret2.txt': FILE, 'a.txt': FILE }),
  // A sibling whose name begins with the root's: a prefix check without the separator would let it in.
  'root-evil': dir({ 's3.txt': FILE }),
  root: dir({
    'a.txt': FILE,
    'with space é.txt': FILE,
    '100%.txt': FILE,
    sub: dir({ 'b.txt': FILE, deeper: dir({ 'c.json': FILE }), up: link('..'), upup: link('../..') }),
    'link-in': link('sub/b.txt'),
    'link-in-dir': link('sub'),
    'link-out-file': link('../secret.txt'),
    'link-out-dir': link('../outside-dir'),
    'link-evil': link('../root-evil/s3.txt'),
    'link-evil-dir': link('../root-evil'),
    'link-abs': link('/etc'),
    'link-abs-secret': link(path.join(base, 'secret.txt')),
    'link-broken': link('nowhere.txt'),
  }),
};

/** Every file's bytes: a marker saying inside or outside, its place, and random bytes. */
const CONTENT = new Map<string, Buffer>();
function create(entries: Record<string, Node>, at: string): void {
  for (const [name, node] of Object.entries(entries)) {
    const p = path.join(at, name);
    if ('file' in node) {
      const inside = p.startsWith(ROOT + path.sep);
      const bytes = Buffer.concat([Buffer.from(`${inside ? 'INSIDE' : 'OUTSIDE'}:${path.relative(base, p)}:`), randomBytes(16)]);
      writeFileSync(p, bytes);
      CONTENT.set(p, bytes);
    } else if ('dir' in node) {
      mkdirSync(p);
      create(node.dir, p);
    } else symlinkSync(node.link, p);
  }
}

/** The model: walks the tree (following links, resolving their `..`) to the file a decoded path names. */
function walk(decoded: string): string | undefined {
  if (decoded.includes('\0') || decoded.startsWith('/') || decoded.split(/[\\/]/).includes('..')) return undefined;
  const names = decoded.split('/').filter((s) => s !== '' && s !== '.');
  let at: string[] = ['root'];
  const nodeAt = (parts: string[]): Node | undefined => {
    let n: Node = dir(TREE);
    for (const p of parts) {
      if (!('dir' in n) || !Object.hasOwn(n.dir, p)) return undefined;
      n = n.dir[p];
    }
    return n;
  };
  /** Follows links until a file or folder; undefined when it leaves the temp dir or dangles. */
  const settle = (parts: string[], depth = 0): string[] | undefined => {
    const n = nodeAt(parts);
    if (!n || depth > 8) return undefined;
    if (!('link' in n)) return parts;
    if (path.isAbsolute(n.link)) {
      if (!n.link.startsWith(base + path.sep)) return undefined;
      return settle(path.relative(base, n.link).split(path.sep), depth + 1);
    }
    const target = [...parts.slice(0, -1)];
    for (const seg of n.link.split('/')) {
      if (seg === '..') {
        if (target.length === 0) return undefined;
        target.pop();
      } else target.push(seg);
    }
    return settle(target, depth + 1);
  };
  for (const name of names) {
    const next = settle([...at, name]);
    if (!next) return undefined;
    at = next;
  }
  const node = nodeAt(at);
  if (!node || !('file' in node) || at[0] !== 'root') return undefined;
  // A trailing "/" after a file name is not a file (path.join keeps it; the file system refuses it).
  if (decoded.endsWith('/')) return undefined;
  return path.join(base, ...at);
}

// ---- Generators ------------------------------------------------------------------------------------------------

/** Paths to files inside, through folders, links in and out-and-back, with "." segments and doubled slashes. */
const ROUTES = [
  'a.txt',
  'with space é.txt',
  '100%.txt',
  'sub/b.txt',
  'sub/deeper/c.json',
  'link-in',
  'link-in-dir/b.txt',
  'link-in-dir/deeper/c.json',
  'sub/up/a.txt',
  'sub/up/sub/up/link-in',
  'sub/upup/root/a.txt',
];

/** One character as a client may write it: itself (when a URL may carry it) or %XX in either case. */
const writeChar = (c: string, how: 'raw' | 'lower' | 'upper'): string => {
  const safe = /^[A-Za-z0-9._~!$&'()*+,;=:@/-]$/.test(c);
  if (how === 'raw' && safe) return c;
  const hex = [...Buffer.from(c, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
  return how === 'upper' ? hex.toUpperCase() : hex;
};

const validPath = fc
  .record({
    route: fc.constantFrom(...ROUTES),
    dots: fc.array(fc.nat(), { maxLength: 2 }),
    doubled: fc.option(fc.nat(), { nil: undefined }),
    enc: fc.array(fc.constantFrom<'raw' | 'lower' | 'upper'>('raw', 'raw', 'lower', 'upper'), { minLength: 40, maxLength: 40 }),
  })
  .map(({ route, dots, doubled, enc }) => {
    const segs = route.split('/');
    for (const d of dots) segs.splice(d % segs.length, 0, '.');
    if (doubled !== undefined && segs.length > 1) segs.splice(1 + (doubled % (segs.length - 1)), 0, '');
    // Never "./" then "/" at the start: a client's URL parser drops the "./" and leaves "//a.txt", an absolute path.
    let lead = 0;
    while (segs[lead] === '.') lead++;
    if (lead > 0 && segs[lead] === '') segs.splice(lead, 1);
    const logical = segs.join('/');
    // "/" stays a separator (written raw or as %2F, which is decoded once like any other character).
    const written = [...logical].map((c, i) => writeChar(c, enc[i % enc.length])).join('');
    return { route, logical, written };
  });

const NAMES = ['a.txt', 'sub', 'b.txt', 'deeper', 'up', 'upup', 'root', 'secret.txt', 'outside-dir', 'secret2.txt', 'root-evil', 's3.txt', 'link-in', 'link-in-dir', 'link-out-file', 'link-out-dir', 'link-evil', 'link-evil-dir', 'link-abs', 'link-abs-secret', 'link-broken', 'etc', 'passwd', 'hostname', 'tmp'];
/** Ways to write "..", ".", "/" and NUL that decoders disagree about. */
const DOTDOT = ['..', '%2e%2e', '%2E%2E', '.%2e', '%2e.', '%252e%252e', '%c0%ae%c0%ae', '..%00', '...', '.. '.replace(' ', '%20')];
const SEPARATORS = ['/', '/', '%2f', '%2F', '\\', '%5c', '%5C', '//', '%252f', '/./'];

const attackPath = fc
  .record({
    segs: fc.array(
      fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom(...NAMES) },
        { weight: 2, arbitrary: fc.constantFrom('link-out-file', 'link-out-dir', 'link-evil', 'link-evil-dir', 'link-abs', 'link-abs-secret', 'upup') },
        { weight: 2, arbitrary: fc.constantFrom(...DOTDOT) },
        fc.constantFrom('.', '%2e', '', 'nope'),
      ),
      { minLength: 1, maxLength: 6 },
    ),
    seps: fc.array(fc.constantFrom(...SEPARATORS), { minLength: 6, maxLength: 6 }),
    lead: fc.constantFrom('', '', '/', '%2f', '\\', `${base}/`.replace(/^\//, '')),
    tail: fc.constantFrom('', '', '%00', '%00.txt', '/', '%2500'),
    enc: fc.array(fc.constantFrom<'raw' | 'lower' | 'upper'>('raw', 'raw', 'raw', 'lower', 'upper'), { minLength: 60, maxLength: 60 }),
  })
  .map(({ segs, seps, lead, tail, enc }) => {
    // Names may be percent-encoded too; the traversal spellings are used as they are.
    const body = segs.map((s, i) => (NAMES.includes(s) ? [...s].map((c, j) => writeChar(c, enc[(i * 7 + j) % enc.length])).join('') : s) + (i < segs.length - 1 ? seps[i] : '')).join('');
    return lead + body + tail;
  });

const tryDecode = (s: string): string | undefined => {
  try {
    return decodeURIComponent(s);
  } catch {
    return undefined;
  }
};

describe('/files containment (properties)', () => {
  let server: TestServer;
  let inside: Set<string>;

  before(async () => {
    create(TREE, base);
    inside = new Set([...CONTENT.entries()].filter(([p]) => p.startsWith(ROOT + path.sep)).map(([, b]) => b.toString('latin1')));
    server = await startServer({ toml: `files = "${ROOT}"\n[server]\ndisable_render = true\n` });
  });
  after(async () => {
    await server?.stop();
    rmSync(base, { recursive: true, force: true });
  });

  test('the model itself: the tree walk finds what the tree says (hand-checked cases)', () => {
    assert.equal(walk('sub/upup/root/a.txt'), path.join(ROOT, 'a.txt'));
    assert.equal(walk('link-in'), path.join(ROOT, 'sub/b.txt'));
    assert.equal(walk('link-out-file'), undefined);
    assert.equal(walk('sub/upup/secret.txt'), undefined);
    assert.equal(walk('link-abs-secret'), undefined);
    assert.equal(walk('link-evil'), undefined);
    assert.equal(walk('sub'), undefined);
    assert.equal(walk('a.txt/'), undefined);
  });

  test('paths to files inside, in any percent-encoding, resolve to the file the tree walk finds', async () => {
    const forms = new FormCounter();
    await fc.assert(
      fc.asyncProperty(validPath, async ({ route, logical, written }) => {
        forms.hit(route);
        if (written.includes('%')) forms.hit('encoded');
        if (logical.includes('/./') || logical.startsWith('./')) forms.hit('dot-segment');
        if (logical.includes('//')) forms.hit('doubled-slash');
        const expected = walk(logical);
        assert.ok(expected, `the model finds ${logical}`);
        assert.equal(await resolveInside(ROOT, written), expected, written);
      }),
      { numRuns: 600 },
    );
    for (const r of ROUTES) assert.ok(forms.count(r) >= 20, `${r}: ${forms.count(r)}`);
    forms.assertEach(['encoded', 'dot-segment', 'doubled-slash'], 50);
  });

  test('generated traversal paths: resolveInside agrees with the tree walk and never leaves the directory', async () => {
    const forms = new FormCounter();
    await fc.assert(
      // Paths to files inside are mixed in, so both answers are common.
      fc.asyncProperty(fc.oneof(attackPath, attackPath, validPath.map((v) => v.written)), async (raw) => {
        const got = await resolveInside(ROOT, raw);
        const decoded = tryDecode(raw);
        const expected = decoded === undefined ? undefined : walk(decoded);
        forms.hit(got ? 'inside-file' : 'refused');
        if (decoded?.split(/[\\/]/).includes('..')) forms.hit('dotdot');
        if (/%(25)?(2e|2f|5c|c0)/i.test(raw)) forms.hit('encoded-traversal');
        if (decoded?.includes('\0')) forms.hit('nul');
        if (raw.includes('link-out') || raw.includes('link-abs') || raw.includes('link-evil') || raw.includes('upup')) forms.hit('link-out');
        assert.equal(got, expected, `${raw} (decoded ${JSON.stringify(decoded)})`);
        if (got) {
          assert.ok(got.startsWith(ROOT + path.sep), got);
          assert.ok(CONTENT.get(got)?.subarray(0, 7).equals(Buffer.from('INSIDE:')), got);
        }
      }),
      { numRuns: 3000 },
    );
    forms.assertEach(['inside-file', 'refused', 'dotdot', 'encoded-traversal', 'nul', 'link-out'], 30);
  });

  test('through the server, raw: 200 only with the bytes of a file inside, else 404 problem+json; valid paths get their file', async () => {
    const forms = new FormCounter();
    await fc.assert(
      fc.asyncProperty(fc.oneof(attackPath.map((p) => ({ p, valid: undefined as string | undefined })), validPath.map((v) => ({ p: v.written, valid: walk(v.logical) }))), async ({ p, valid }) => {
        const res = await rawGet(server.url, `/files/${p}`);
        forms.hit(`${valid ? 'valid' : 'attack'}-${res.status}`);
        assert.ok(!res.body.includes('OUTSIDE:'), `${p}: bytes from outside were served`);
        // A URL parser removes dot segments: "/files/.." is the home page, another route, with no file's bytes.
        const route = new URL(`http://h/files/${p}`).pathname;
        if (!route.startsWith('/files/')) {
          forms.hit('other-route');
          assert.ok(![...CONTENT.values()].some((b) => res.body.includes(b.subarray(0, 20))), `${p}: a file's bytes on another route`);
          return;
        }
        if (valid) {
          assert.equal(res.status, 200, p);
          assert.ok(res.body.equals(CONTENT.get(valid)!), `${p}: the bytes of ${valid}`);
        } else if (res.status === 200) assert.ok(inside.has(res.body.toString('latin1')), `${p}: 200 with bytes that are no file inside`);
        else {
          assert.ok([400, 404].includes(res.status), `${p}: ${res.status}`);
          if (res.status === 404 && res.headers['content-type'] === 'application/problem+json') {
            const body = JSON.parse(res.body.toString()) as { status: number; detail: string };
            assert.equal(body.status, 404);
            forms.hit('problem');
          }
        }
      }),
      { numRuns: 400 },
    );
    forms.assertEach(['valid-200', 'attack-404', 'problem'], 20);
  });
});
