// Property-based tests of the parsers every request and every configuration goes through: tile coordinates
// and tile file names, Accept-Encoding, configuration validation and `${VAR}` expansion.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from './helpers/fast-check.js';
import { MAX_ZOOM, parseTileCoord, splitTileFile } from '../src/tiles/coords.js';
import { acceptsEncoding, chooseEncoding, parseAcceptEncoding, type ContentEncoding } from '../src/tiles/encoding.js';
import { validateConfig } from '../src/config/load.js';
import { ConfigError } from '../src/config/errors.js';
import { expandString } from '../src/config/env.js';

const RUNS = { numRuns: 2000 };

/** The reference reading of a coordinate segment: canonical decimal digits (no sign, no leading zero). */
const canonical = (s: string) => /^(0|[1-9][0-9]*)$/.test(s);

const validCoord = fc.integer({ min: 0, max: MAX_ZOOM }).chain((z) =>
  fc.record({ z: fc.constant(z), x: fc.integer({ min: 0, max: 2 ** z - 1 }), y: fc.integer({ min: 0, max: 2 ** z - 1 }) }),
);

/** Strings that look almost like numbers: the cases a lax parser (Number(), parseInt) gets wrong. */
const numberish = fc.oneof(
  fc.string(),
  fc.integer({ min: -5, max: 2 ** 23 }).map(String),
  fc.stringMatching(/^[0-9]{0,12}$/),
  fc.constantFrom('', ' 1', '1 ', '01', '00', '+1', '-0', '1e1', '0x1', '1.0', '1.', '.5', 'Infinity', 'NaN', '١', '0b1', '1_0', '4294967296', '9007199254740993'),
);

test('parseTileCoord accepts every in-range coordinate and reads back the same numbers', () => {
  fc.assert(
    fc.property(validCoord, ({ z, x, y }) => {
      const r = parseTileCoord(String(z), String(x), String(y));
      assert.deepEqual(r, { ok: true, coord: { z, x, y } });
    }),
    RUNS,
  );
});

test('parseTileCoord accepts exactly canonical decimal integers in range, and never throws', () => {
  fc.assert(
    fc.property(numberish, numberish, numberish, (zs, xs, ys) => {
      const r = parseTileCoord(zs, xs, ys);
      const z = Number(zs);
      const expected = canonical(zs) && z <= MAX_ZOOM && canonical(xs) && canonical(ys) && Number(xs) < 2 ** z && Number(ys) < 2 ** z;
      assert.equal(r.ok, expected, `${zs}/${xs}/${ys}`);
      if (r.ok) assert.deepEqual(r.coord, { z, x: Number(xs), y: Number(ys) });
      else assert.ok(r.problem.length > 0);
    }),
    RUNS,
  );
});

test('parseTileCoord rejects each coordinate just outside its range', () => {
  fc.assert(
    fc.property(validCoord, ({ z, x, y }) => {
      assert.equal(parseTileCoord(String(z), String(2 ** z), String(y)).ok, false);
      assert.equal(parseTileCoord(String(z), String(x), String(2 ** z)).ok, false);
      assert.equal(parseTileCoord(String(MAX_ZOOM + 1 + z), '0', '0').ok, false);
    }),
    RUNS,
  );
});

test('splitTileFile round-trips {y}.{ext} and {y}@{s}x.{ext}, and never throws', () => {
  const ext = fc.stringMatching(/^[A-Za-z0-9]{1,6}$/);
  const y = fc.stringMatching(/^[0-9]{0,7}$/);
  fc.assert(
    fc.property(y, ext, fc.option(fc.stringMatching(/^[0-9]{1,2}$/), { nil: undefined }), (ys, e, scale) => {
      const segment = scale === undefined ? `${ys}.${e}` : `${ys}@${scale}x.${e}`;
      assert.deepEqual(splitTileFile(segment), { y: ys, scale, ext: e });
    }),
    RUNS,
  );
  // Well-formed names, the same with one character changed, and any text: random text alone almost never has
  // the form, so the accepting branch is fed on purpose and every branch is counted.
  const wellFormed = fc
    .tuple(y, ext, fc.oneof(fc.constant(undefined), fc.stringMatching(/^[0-9]{1,2}$/)))
    .map(([ys, e, scale]) => (scale === undefined ? `${ys}.${e}` : `${ys}@${scale}x.${e}`));
  const mutated = fc.tuple(wellFormed, fc.nat(), fc.constantFrom('', '.', '@', 'x', '/', '%', ' ', '-', 'é')).map(([t, at, c]) => {
    const i = at % (t.length + 1);
    return t.slice(0, i) + c + t.slice(i + 1);
  });
  const seen = { plain: 0, scaled: 0, refused: 0 };
  fc.assert(
    fc.property(fc.oneof(wellFormed, mutated, fc.string()), (segment) => {
      const parts = splitTileFile(segment);
      if (parts) {
        // Whatever it accepts, it splits without losing or inventing characters.
        const rebuilt = parts.scale === undefined ? `${parts.y}.${parts.ext}` : `${parts.y}@${parts.scale}x.${parts.ext}`;
        assert.equal(rebuilt, segment);
        assert.match(parts.ext, /^[A-Za-z0-9]+$/);
        seen[parts.scale === undefined ? 'plain' : 'scaled']++;
      } else {
        // Refused: the segment does not end in ".{letters or digits}" after a y without "." (or "@...x").
        const dot = segment.lastIndexOf('.');
        const head = dot < 0 ? segment : segment.slice(0, dot);
        const wellShaped = dot >= 0 && /^[A-Za-z0-9]+$/.test(segment.slice(dot + 1)) && /^[^.@]*(@[^.]*x)?$/.test(head);
        assert.equal(wellShaped, false, `${JSON.stringify(segment)} has the form and was refused`);
        seen.refused++;
      }
    }),
    RUNS,
  );
  for (const [branch, n] of Object.entries(seen)) assert.ok(n >= 200, `${branch}: ${n} of ${RUNS.numRuns} runs`);
});

const encodingName = fc.constantFrom('gzip', 'br', 'zstd', 'deflate', 'identity', '*', 'compress', 'x-gzip');
/** A q-value as a client writes it (up to three decimals), with the number it means. */
const qvalue = fc.integer({ min: 0, max: 1000 }).map((n) => ({ text: (n / 1000).toFixed(3).replace(/\.?0+$/, '') || '0', value: n / 1000 }));

test('parseAcceptEncoding never throws and keeps every q-value within 0..1', () => {
  fc.assert(
    fc.property(fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.array(fc.constantFrom('gzip', ';', 'q=', ',', '0.5', ' ', '*', 'br', '=', '1.0.0', '-1')).map((a) => a.join(''))), (header) => {
      const parsed = parseAcceptEncoding(header);
      for (const [name, q] of parsed) {
        assert.ok(name.length > 0);
        assert.ok(q >= 0 && q <= 1 && !Number.isNaN(q), `${name};q=${q}`);
      }
    }),
    RUNS,
  );
});

test('parseAcceptEncoding reads the names and q-values a client sends, in any case and spacing', () => {
  fc.assert(
    fc.property(
      fc.uniqueArray(fc.record({ name: encodingName, q: fc.option(qvalue, { nil: undefined }), upper: fc.boolean(), space: fc.constantFrom('', ' ', '  ') }), {
        selector: (e) => e.name,
        maxLength: 6,
      }),
      (entries) => {
        const header = entries
          .map((e) => `${e.space}${e.upper ? e.name.toUpperCase() : e.name}${e.q ? `${e.space};${e.space}q=${e.q.text}` : ''}`)
          .join(',');
        const parsed = parseAcceptEncoding(header);
        assert.equal(parsed.size, entries.length, header);
        for (const e of entries) assert.equal(parsed.get(e.name), e.q ? e.q.value : 1, header);
      },
    ),
    RUNS,
  );
});

test('chooseEncoding never picks what the client refused and prefers its highest q-value', () => {
  const offered: ContentEncoding[] = ['br', 'zstd', 'gzip'];
  fc.assert(
    fc.property(
      fc.dictionary(fc.constantFrom('gzip', 'br', 'zstd', '*', 'deflate'), qvalue.map((q) => q.value)),
      fc.constantFrom<ContentEncoding>('gzip', 'identity'),
      fc.boolean(),
      (qs, stored, recompress) => {
        const accepted = new Map(Object.entries(qs));
        const chosen = chooseEncoding(accepted, stored, recompress);
        if (chosen !== 'identity') assert.ok(acceptsEncoding(accepted, chosen), `${chosen} was refused by ${JSON.stringify(qs)}`);
        if (stored === 'gzip' && acceptsEncoding(accepted, 'gzip')) {
          assert.equal(chosen, 'gzip', 'stored gzip passes through when accepted');
          return;
        }
        if (!recompress) {
          assert.equal(chosen, 'identity');
          return;
        }
        const q = (e: string) => accepted.get(e) ?? accepted.get('*') ?? 0;
        const best = Math.max(...offered.map(q));
        if (best === 0) assert.equal(chosen, 'identity');
        else assert.equal(q(chosen), best, `chose ${chosen} from ${JSON.stringify(qs)}`);
      },
    ),
    RUNS,
  );
});

/** Values shaped like parsed TOML: what validateConfig can be handed. */
const tomlValue = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.string(),
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.date({ noInvalidDate: true }),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.string({ maxLength: 12 }), tie('value'), { maxKeys: 5 }),
  ),
})).value;

/** Documents that get past the top level, so the per-key validation of every section is exercised. */
const configLike = fc.record(
  {
    fonts: tomlValue,
    files: tomlValue,
    server: fc.dictionary(
      fc.constantFrom('host', 'port', 'public_url', 'cors_origins', 'workers', 'admin_bind', 'upload_dir', 'upload_max_size_mb', 'disable_render', 'bogus'),
      tomlValue,
    ),
    sources: fc.array(
      fc.dictionary(fc.constantFrom('id', 'type', 'path', 'name', 'attribution', 'description', 'minzoom', 'maxzoom', 'extra'), fc.oneof(tomlValue, fc.constantFrom('pmtiles', 'mbtiles', 'a-1', '${HOME}', '${SURELY_UNSET_VAR_X}'))),
      { maxLength: 3 },
    ),
    cache: fc.dictionary(fc.constantFrom('enabled', 'max_size_mb', 'ttl_seconds', 'dir', 'size'), tomlValue),
    compression: fc.dictionary(fc.constantFrom('enabled', 'br_quality', 'zstd_level', 'level'), tomlValue),
  },
  { requiredKeys: [] },
);

test('validateConfig returns a config or throws ConfigError, nothing else, for any document', () => {
  fc.assert(
    fc.property(fc.oneof(tomlValue, configLike, fc.anything()), (doc) => {
      try {
        const { config, warnings } = validateConfig(doc, 'prop.toml', '/tmp', { HOME: '/home/x' });
        assert.ok(Array.isArray(config.sources));
        for (const w of warnings) assert.match(w, /^prop\.toml: unknown key /);
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        assert.match(err.message, /^prop\.toml: /m, 'every error line names the file');
      }
    }),
    RUNS,
  );
});

test('${VAR} expansion substitutes set variables verbatim and names an unset one', () => {
  const varName = fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,10}$/);
  // Plain text that cannot itself form a ${...} reference.
  const text = fc.string({ maxLength: 10 }).map((s) => s.replace(/\$\{/g, '$ {'));
  fc.assert(
    fc.property(varName, fc.string({ maxLength: 20 }), text, text, (name, value, before, after) => {
      const env = { [name]: value };
      assert.equal(expandString(`${before}\${${name}}${after}`, env, 'f.toml: k'), `${before}${value}${after}`);
      assert.equal(expandString(`${before}${after}`, env, 'f.toml: k'), `${before}${after}`);
      assert.throws(
        () => expandString(`${before}\${${name}}${after}`, {}, 'f.toml: sources[0].path'),
        (err: unknown) => err instanceof ConfigError && err.message.includes(name) && err.message.includes('sources[0].path'),
      );
    }),
    RUNS,
  );
});
