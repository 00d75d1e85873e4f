#!/usr/bin/env node
// Makes gdal-async's C++ sources build on Node.js 26 as well, before `npm rebuild gdal-async` compiles them.
// gdal-async 3.12.3, its newest release, uses two V8 names that V8 14.2 (Node.js 26) removed:
// - `DEFAULT` of v8::AccessControl, in two accessor macros (nan 2.23+ declares its own Nan::DEFAULT for that V8);
// - v8::Object::GetIsolate(), once, to reach the current context at start-up (Nan::GetCurrentContext() is the same
//   context on every V8).
// Both edits keep the older V8s on exactly what they compiled before. The script is idempotent: sources already
// edited are left as they are. When a gdal-async release changes these lines, it stops with a message instead of
// compiling something half-edited, so whoever upgrades gdal-async sees whether the edit is still needed.
//   node scripts/patch-gdal-async.mjs [node_modules folder]   (default: ./node_modules)
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(process.argv[2] ?? 'node_modules', 'gdal-async');
const MARK = 'NODE_GDAL_ACCESS_DEFAULT';

/** One file's edits: each `from` must occur exactly `count` times in the released source; `done` is in the edited one. */
const EDITS = [
  {
    file: 'src/gdal_common.hpp',
    done: `#define ${MARK} Nan::DEFAULT`,
    replacements: [
      {
        from: '#include "nan-wrapper.h"\n',
        to:
          '#include "nan-wrapper.h"\n\n' +
          '// tileserver-ts: V8 14.2 (Node.js 26) has no v8::AccessControl; nan declares its own DEFAULT there.\n' +
          '#if defined(V8_MAJOR_VERSION) && (V8_MAJOR_VERSION > 14 || (V8_MAJOR_VERSION == 14 && V8_MINOR_VERSION >= 2))\n' +
          `#define ${MARK} Nan::DEFAULT\n` +
          '#else\n' +
          `#define ${MARK} v8::DEFAULT\n` +
          '#endif\n',
        count: 1,
      },
      { from: '    DEFAULT,  ', to: `    ${MARK},  `, count: 1 },
      { from: 'Local<Value>(), DEFAULT, DontEnum', to: `Local<Value>(), ${MARK}, DontEnum`, count: 1 },
    ],
  },
  {
    file: 'src/node_gdal.cpp',
    done: 'GetCurrentEnvironment(Nan::GetCurrentContext())',
    replacements: [
      {
        from: 'GetCurrentEnvironment(target->GetIsolate()->GetCurrentContext())',
        to: 'GetCurrentEnvironment(Nan::GetCurrentContext())',
        count: 1,
      },
    ],
  },
];

let version;
try {
  version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version;
} catch {
  console.error(`patch-gdal-async: no gdal-async in ${root}`);
  process.exit(1);
}

// Every file is checked before any is written, so a release that fails the check is left exactly as it came.
const writes = [];
for (const { file, replacements, done } of EDITS) {
  const path = join(root, file);
  let text = readFileSync(path, 'utf8');
  if (text.includes(done)) continue;
  for (const { from, to, count } of replacements) {
    const found = text.split(from).length - 1;
    if (found !== count) {
      console.error(
        `patch-gdal-async: gdal-async ${version}'s ${file} has ${found} of the ${count} expected "${from.trim()}"; ` +
          'check whether this release builds on Node.js 26 without the edit, and change or remove scripts/patch-gdal-async.mjs',
      );
      process.exit(1);
    }
    text = text.split(from).join(to);
  }
  writes.push({ path, text });
}
for (const { path, text } of writes) writeFileSync(path, text);
if (writes.length > 0) console.log(`patch-gdal-async: gdal-async ${version} edited for Node.js 26 (${writes.length} files)`);
