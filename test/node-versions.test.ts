// `make ... NODE=24` (docs/testing.md, "Other Node.js versions"): scripts/node-select.sh swaps the tree's
// node_modules for the one built for that Node and puts the machine's own back afterwards, and
// scripts/node-fetch.sh takes only a version as its argument. Both run here on a scratch copy of the scripts
// folder (they work relative to it), so the checkout's own node_modules and .node/ are never touched, and no
// Node is downloaded: a version whose .node/VERSION/bin/node exists is not fetched again.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import fc from './helpers/fast-check.js';
import { tempDir } from './helpers/foundation.js';
import { ROOT } from './helpers/server.js';

/** A tree holding only scripts/<name>, as the checkout has it. */
function scratchTree(...scripts: string[]): string {
  const dir = tempDir('tsts-node-versions-');
  mkdirSync(path.join(dir, 'scripts'));
  for (const s of scripts) copyFileSync(path.join(ROOT, 'scripts', s), path.join(dir, 'scripts', s));
  return dir;
}

function sh(tree: string, script: string, args: string[]): { code: number | null; out: string } {
  const r = spawnSync(path.join(tree, 'scripts', script), args, { encoding: 'utf8', cwd: tree });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

test('node-select links node_modules to the chosen version and moves the tree\'s own back, the same directory', () => {
  const tree = scratchTree('node-select.sh');
  const own = path.join(tree, 'node_modules');
  mkdirSync(own);
  writeFileSync(path.join(own, 'marker'), 'machine');
  const inode = statSync(own).ino;

  assert.deepEqual(sh(tree, 'node-select.sh', ['24']), { code: 0, out: '' });
  assert.ok(lstatSync(own).isSymbolicLink());
  assert.equal(readlinkSync(own), '.node/24/node_modules');
  assert.equal(statSync(path.join(tree, '.node/machine/node_modules')).ino, inode, 'parked, not copied');

  // From one version to another: the link changes, the parked tree stays.
  assert.deepEqual(sh(tree, 'node-select.sh', ['26']), { code: 0, out: '' });
  assert.equal(readlinkSync(own), '.node/26/node_modules');
  assert.equal(statSync(path.join(tree, '.node/machine/node_modules')).ino, inode);

  // Plain make: the very directory is back, nothing left parked.
  assert.deepEqual(sh(tree, 'node-select.sh', []), { code: 0, out: '' });
  assert.ok(!lstatSync(own).isSymbolicLink());
  assert.equal(statSync(own).ino, inode);
  assert.ok(!existsSync(path.join(tree, '.node/machine/node_modules')));
  // Again: nothing to do.
  assert.deepEqual(sh(tree, 'node-select.sh', []), { code: 0, out: '' });
  assert.equal(statSync(own).ino, inode);
});

test('node-select leaves a node_modules link it did not make alone without NODE, and parks it with NODE', () => {
  const tree = scratchTree('node-select.sh');
  const shared = tempDir('tsts-node-versions-shared-');
  const own = path.join(tree, 'node_modules');
  spawnSync('ln', ['-s', shared, own]);
  assert.deepEqual(sh(tree, 'node-select.sh', []), { code: 0, out: '' });
  assert.equal(readlinkSync(own), shared);
  assert.deepEqual(sh(tree, 'node-select.sh', ['22']), { code: 0, out: '' });
  assert.equal(readlinkSync(path.join(tree, '.node/machine/node_modules')), shared);
  assert.deepEqual(sh(tree, 'node-select.sh', []), { code: 0, out: '' });
  assert.equal(readlinkSync(own), shared);
});

test('node-select refuses to park a node_modules over one already parked', () => {
  const tree = scratchTree('node-select.sh');
  mkdirSync(path.join(tree, 'node_modules'));
  mkdirSync(path.join(tree, '.node/machine/node_modules'), { recursive: true });
  const r = sh(tree, 'node-select.sh', ['24']);
  assert.equal(r.code, 1);
  assert.match(r.out, /both node_modules and \.node\/machine\/node_modules exist/);
  assert.ok(!lstatSync(path.join(tree, 'node_modules')).isSymbolicLink());
});

test('node-fetch takes a major, major.minor or exact release and refuses anything else before reaching npm', () => {
  const tree = scratchTree('node-fetch.sh');
  // A Node already in place is not fetched again, so a valid version exits 0 here without the network.
  const present = (v: string) => {
    mkdirSync(path.join(tree, '.node', v, 'bin'), { recursive: true });
    const bin = path.join(tree, '.node', v, 'bin', 'node');
    writeFileSync(bin, '#!/bin/sh\n');
    chmodSync(bin, 0o755);
  };
  const version = fc.array(fc.nat({ max: 40 }), { minLength: 1, maxLength: 3 }).map((parts) => parts.join('.'));
  fc.assert(
    fc.property(version, (v) => {
      present(v);
      assert.deepEqual(sh(tree, 'node-fetch.sh', [v]), { code: 0, out: '' });
    }),
    { numRuns: 15 },
  );
  const notVersion = fc.string({ minLength: 1, maxLength: 12 }).filter((s) => !/^\d+(\.\d+){0,2}$/.test(s) && !s.includes('\0'));
  fc.assert(
    fc.property(fc.oneof(notVersion, fc.constantFrom('1..2', '.2', '24.', '24.1.2.3', '24\n26', '../24', '24 ', 'v24')), (v) => {
      const r = sh(tree, 'node-fetch.sh', [v]);
      assert.equal(r.code, 2, `${JSON.stringify(v)}: ${r.out}`);
      assert.match(r.out, /is not a Node\.js version/);
    }),
    { numRuns: 25 },
  );
});

/** A node_modules holding gdal-async's package.json and the two C++ files scripts/patch-gdal-async.mjs edits. */
function scratchGdalAsync(edit?: (file: string, text: string) => string): string {
  const modules = tempDir('tsts-gdal-async-');
  const from = path.join(ROOT, 'node_modules', 'gdal-async');
  mkdirSync(path.join(modules, 'gdal-async', 'src'), { recursive: true });
  for (const file of ['package.json', 'src/gdal_common.hpp', 'src/node_gdal.cpp']) {
    const text = readFileSync(path.join(from, file), 'utf8');
    writeFileSync(path.join(modules, 'gdal-async', file), edit ? edit(file, text) : text);
  }
  return modules;
}

const patchGdalAsync = (modules: string) => {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'patch-gdal-async.mjs'), modules], { encoding: 'utf8' });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
};

test('the installed gdal-async was edited for Node.js 26 before it was built, and editing again changes nothing', () => {
  const common = readFileSync(path.join(ROOT, 'node_modules/gdal-async/src/gdal_common.hpp'), 'utf8');
  const main = readFileSync(path.join(ROOT, 'node_modules/gdal-async/src/node_gdal.cpp'), 'utf8');
  // Every accessor macro takes the access setting that exists on the V8 it is compiled for...
  assert.match(common, /#define NODE_GDAL_ACCESS_DEFAULT Nan::DEFAULT\n#else\n#define NODE_GDAL_ACCESS_DEFAULT v8::DEFAULT/);
  assert.doesNotMatch(common, /[^:\w]DEFAULT,/, 'no bare DEFAULT argument left');
  // ...and start-up reaches its context without v8::Object::GetIsolate.
  assert.doesNotMatch(main, /target->GetIsolate\(\)/);
  assert.match(main, /GetCurrentEnvironment\(Nan::GetCurrentContext\(\)\)/);

  const modules = scratchGdalAsync();
  const before = readFileSync(path.join(modules, 'gdal-async/src/gdal_common.hpp'), 'utf8');
  assert.deepEqual(patchGdalAsync(modules), { code: 0, out: '' });
  assert.equal(readFileSync(path.join(modules, 'gdal-async/src/gdal_common.hpp'), 'utf8'), before);
});

test('a gdal-async release whose lines differ from the expected ones is refused, naming the file, and left as it was', () => {
  // A release that changed the start-up line: not the edit's target any more.
  const modules = scratchGdalAsync((file, text) =>
    file === 'src/node_gdal.cpp' ? text.replace(/GetCurrentEnvironment\([^;]*\)/, 'SomethingElse(target)') : text,
  );
  const before = readFileSync(path.join(modules, 'gdal-async/src/node_gdal.cpp'), 'utf8');
  const r = patchGdalAsync(modules);
  assert.equal(r.code, 1);
  assert.match(r.out, /gdal-async \d+\.\d+\.\d+'s src\/node_gdal\.cpp has 0 of the 1 expected/);
  assert.equal(readFileSync(path.join(modules, 'gdal-async/src/node_gdal.cpp'), 'utf8'), before);

  const none = tempDir('tsts-gdal-async-none-');
  const missing = patchGdalAsync(none);
  assert.equal(missing.code, 1);
  assert.match(missing.out, /no gdal-async in/);
});
