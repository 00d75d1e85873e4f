// Property tests of the language parsers, called directly: BCP 47 tags (parseLanguageTag) against tags built
// from the RFC 5646 grammar and against mistakes made on purpose; Accept-Language lists; the choice of a style's
// language; and the label rewrite, whose output for any valid tag must pass the style spec's own validator.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { validateStyleMin, type StyleSpecification } from '@maplibre/maplibre-gl-style-spec';
import fc from './helpers/fast-check.js';
import { lookupChain, parseAcceptLanguage, parseLanguageTag } from '../src/config/language-tag.js';
import { chooseLanguage, styleLanguages } from '../src/styles/language-choice.js';
import { localizeStyle } from '../src/styles/label-language.js';
import { negotiateFormat, requestEncoding } from '../src/render/image-encoding.js';
import { fixture } from './helpers/server.js';

fc.configureGlobal({ ...fc.readConfigureGlobal(), includeErrorInReport: true });

const alpha = (min: number, max: number) => fc.stringMatching(new RegExp(`^[a-zA-Z]{${min},${max}}$`));
const alnum = (min: number, max: number) => fc.stringMatching(new RegExp(`^[a-zA-Z0-9]{${min},${max}}$`));

/** A tag from the langtag production, its parts kept for an independent reading. */
const langtag = fc
  .record({
    language: fc.oneof(alpha(2, 3), alpha(5, 8)),
    extlang: fc.array(alpha(3, 3), { maxLength: 3 }),
    script: fc.option(alpha(4, 4), { nil: undefined }),
    region: fc.option(fc.oneof(alpha(2, 2), fc.stringMatching(/^[0-9]{3}$/)), { nil: undefined }),
    variants: fc.uniqueArray(fc.oneof(alnum(5, 8), fc.stringMatching(/^[0-9][a-zA-Z0-9]{3}$/)), { maxLength: 2, selector: (s) => s.toLowerCase() }),
    extensions: fc.uniqueArray(fc.record({ singleton: fc.stringMatching(/^[a-wyzA-WYZ0-9]$/), subtags: fc.array(alnum(2, 8), { minLength: 1, maxLength: 2 }) }), {
      maxLength: 2,
      selector: (e) => e.singleton.toLowerCase(),
    }),
    privateUse: fc.array(alnum(1, 8), { maxLength: 2 }),
  })
  .map((p) => {
    const extlang = p.language.length <= 3 ? p.extlang : [];
    const parts = [p.language, ...extlang, ...(p.script ? [p.script] : []), ...(p.region ? [p.region] : []), ...p.variants, ...p.extensions.flatMap((e) => [e.singleton, ...e.subtags]), ...(p.privateUse.length ? ['x', ...p.privateUse] : [])];
    return { ...p, extlang, text: parts.join('-') };
  })
  .filter((p) => p.text.length <= 64);

describe('BCP 47 language tags (properties)', () => {
  test('every tag of the grammar parses, in canonical case, with its language, script and region', () => {
    fc.assert(
      fc.property(langtag, (p) => {
        const t = parseLanguageTag(p.text);
        assert.ok(t, p.text);
        assert.equal(t.language, [p.language, ...p.extlang].join('-').toLowerCase());
        assert.equal(t.script, p.script && p.script[0].toUpperCase() + p.script.slice(1).toLowerCase());
        assert.equal(t.region, p.region?.toUpperCase());
        assert.equal(t.tag.toLowerCase(), p.text.toLowerCase());
        // Canonical form is stable, and the lookup chain ends at the language.
        assert.equal(parseLanguageTag(t.tag)?.tag, t.tag);
        const chain = lookupChain(t.tag);
        assert.equal(chain[0], t.tag);
        assert.equal(chain.at(-1), p.language.toLowerCase());
        assert.ok(chain.every((c) => parseLanguageTag(c)), chain.join(' '));
      }),
    );
  });

  test('mistakes are refused: empty subtags, bad lengths, repeats, a lone x, underscores, other characters', () => {
    const mistake = fc.oneof(
      langtag.map((p) => `${p.text}-`),
      langtag.map((p) => `-${p.text}`),
      langtag.map((p) => p.text.replace('-', '--')).filter((s) => s.includes('--')),
      langtag.map((p) => p.text.replace(/-/, '_')).filter((s) => s.includes('_')),
      langtag.filter((p) => p.privateUse.length === 0).map((p) => `${p.text}-x`),
      langtag.map((p) => `${p.text}-toolongsubtag`),
      fc.tuple(langtag, fc.constantFrom(' ', '.', '/', 'é', '\u0000', '*')).map(([p, c]) => p.text + c),
      alpha(4, 4),
      alpha(9, 12),
      fc.stringMatching(/^[0-9]{1,3}$/),
      fc.constant(''),
      fc.constant('x-private'),
      fc.constant('i-klingon'),
      fc.tuple(alpha(2, 3), alnum(5, 8)).map(([l, v]) => `${l}-${v}-${v.toUpperCase()}`),
      fc.tuple(alpha(2, 3), alnum(2, 8)).map(([l, s]) => `${l}-u-${s}-u-${s}`),
      fc.tuple(alpha(2, 3), alpha(4, 4), alpha(4, 4)).map(([l, a, b]) => `${l}-${a}-${b}`),
    );
    fc.assert(fc.property(mistake, (text) => assert.equal(parseLanguageTag(text), undefined, text)));
  });

  test('Accept-Language: valid tags with q > 0 in order of q, header order on ties; the rest left out', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ tag: langtag, q: fc.option(fc.integer({ min: 0, max: 1000 }), { nil: undefined }) }), { maxLength: 6 }), fc.array(fc.constantFrom('*', 'no_t', ';q=2'), { maxLength: 2 }), (items, junk) => {
        const header = [...items.map((i) => (i.q === undefined ? i.tag.text : `${i.tag.text};q=${(i.q / 1000).toFixed(3)}`)), ...junk].join(', ');
        const got = parseAcceptLanguage(header).map((a) => `${a.tag.tag.toLowerCase()}@${a.q}`);
        const want = items
          .map((i, at) => ({ text: i.tag.text.toLowerCase(), q: i.q === undefined ? 1 : i.q / 1000, at }))
          .filter((i) => i.q > 0)
          .sort((a, b) => b.q - a.q || a.at - b.at)
          .map((i) => `${i.text}@${i.q}`);
        assert.deepEqual(got, want, header);
      }),
    );
  });

  test('a style offering some languages serves a tag as its longest offered prefix, or refuses it naming it', () => {
    const settings = styleLanguages({ languages: ['de', 'zh-Hant', 'sr-Latn'], default_language: 'de', accept_language: true });
    fc.assert(
      fc.property(langtag, (p) => {
        const r = chooseLanguage(settings, 's', p.text, undefined);
        const hit = lookupChain(parseLanguageTag(p.text)!.tag).find((t) => ['de', 'zh-Hant', 'sr-Latn'].includes(t));
        if (hit) assert.deepEqual(r.ok && r.lang?.tag, hit);
        else assert.ok(!r.ok && r.detail.includes('does not offer'), p.text);
        // Without lang, an Accept-Language naming only that tag gives the same, or the default.
        const h = chooseLanguage(settings, 's', undefined, p.text);
        assert.ok(h.ok && h.vary);
        assert.equal(h.lang?.tag, hit ?? 'de');
      }),
    );
  });

  test('the rewritten OSM Liberty and MapTiler Basic are valid styles for any tag', () => {
    const styles = ['styles/osm-liberty/style.json', 'styles/maptiler-basic/style.json'].map((f) => JSON.parse(readFileSync(fixture(f), 'utf8')) as StyleSpecification);
    fc.assert(
      fc.property(langtag, (p) => {
        for (const style of styles) {
          const errors = validateStyleMin(localizeStyle(style, parseLanguageTag(p.text)!)).filter((e) => e.severity !== 'warning');
          assert.deepEqual(errors.map((e) => e.message), [], p.text);
        }
      }),
      { numRuns: 40 },
    );
  });
});

describe('image encodings (properties)', () => {
  test('quality: integers 1..100 are taken for lossy formats; anything else is refused naming quality', () => {
    const defaults = { jpeg: 85, webp: 85, avif: 50 };
    fc.assert(
      fc.property(fc.constantFrom('jpeg', 'webp', 'avif') as fc.Arbitrary<'jpeg' | 'webp' | 'avif'>, fc.oneof(fc.integer({ min: -5, max: 200 }).map(String), fc.string({ maxLength: 5 })), (format, q) => {
        const r = requestEncoding(format, { quality: q, lossless: undefined, accept: undefined }, defaults);
        const good = /^[0-9]{1,3}$/.test(q) && Number(q) >= 1 && Number(q) <= 100;
        if (q === '') assert.ok(r.ok);
        else if (good) assert.deepEqual(r.ok && r.value.encoding, Number(q) === defaults[format] ? { format } : { format, quality: Number(q) });
        else assert.equal(!r.ok && r.problem.parameter, 'quality', q);
      }),
    );
  });

  test('auto picks a type the Accept header names with the highest q, else PNG', () => {
    const types = ['image/webp', 'image/avif', 'image/png', 'image/jpeg', 'image/*', '*/*', 'text/html'];
    fc.assert(
      fc.property(fc.uniqueArray(fc.record({ type: fc.constantFrom(...types), q: fc.integer({ min: 0, max: 10 }) }), { selector: (i) => i.type, maxLength: 6 }), (items) => {
        const header = items.map((i) => `${i.type};q=${i.q / 10}`).join(', ');
        const f = negotiateFormat(header);
        const named = items.filter((i) => i.type.startsWith('image/') && i.type !== 'image/*' && i.q > 0);
        if (named.length === 0) return assert.equal(f, 'png');
        const best = Math.max(...named.map((i) => i.q));
        const chosen = named.find((i) => i.type === `image/${f}`);
        assert.ok(chosen && chosen.q === best, `${header} gave ${f}`);
      }),
    );
  });
});

describe('the label rewrite of each text-field form', () => {
  const de = parseLanguageTag('de')!;
  const ar = parseLanguageTag('ar')!;
  const field = (textField: unknown, lang = de) => {
    const style = { version: 8, sources: {}, glyphs: 'x/{fontstack}/{range}.pbf', layers: [{ id: 'l', type: 'symbol', source: 's', 'source-layer': 'p', layout: { 'text-field': textField } }] };
    const sources = { s: { type: 'vector', tiles: ['http://x/{z}/{x}/{y}.pbf'] } };
    const out = localizeStyle({ ...style, sources } as unknown as StyleSpecification, lang);
    assert.deepEqual(validateStyleMin(out).filter((e) => e.severity !== 'warning').map((e) => e.message), [], JSON.stringify(textField));
    return (out.layers[0].layout as Record<string, unknown>)['text-field'];
  };
  const NAME_DE = ['coalesce', ['get', 'name:de'], ['get', 'name_de'], ['get', 'name:latin'], ['get', 'name_int'], ['get', 'name']];
  const NAME_AR = ['coalesce', ['get', 'name:ar'], ['get', 'name_ar'], ['get', 'name']];

  test('token strings: names become the localised name, other tokens stay, a bilingual label shows one name', () => {
    assert.deepEqual(field('{name}'), NAME_DE);
    assert.deepEqual(field('{name}', ar), NAME_AR);
    assert.deepEqual(field('{name_en}', ar), [...NAME_AR, ['get', 'name_en']]);
    assert.deepEqual(field('{name:latin}\n{name:nonlatin}'), NAME_DE);
    assert.deepEqual(field('{name} ({name:en})', ar), NAME_AR);
    assert.deepEqual(field('{ref} {name}'), ['concat', ['to-string', ['get', 'ref']], ' ', NAME_DE]);
    assert.equal(field('{housenumber}'), '{housenumber}');
    assert.equal(field('{ref}'), '{ref}');
  });

  test('expressions: get, coalesce, concat, format, case; non-name gets and literals untouched', () => {
    assert.deepEqual(field(['get', 'name']), NAME_DE);
    assert.deepEqual(field(['coalesce', ['get', 'name:en'], ['get', 'name']], ar), [...NAME_AR, ['get', 'name:en']]);
    assert.deepEqual(field(['concat', ['get', 'name:latin'], '\n', ['get', 'name:nonlatin']]), NAME_DE);
    assert.deepEqual(field(['concat', ['get', 'ref'], ' ', ['get', 'name']]), ['concat', ['get', 'ref'], ' ', NAME_DE]);
    assert.deepEqual(field(['format', ['get', 'name:latin'], {}, '\n', {}, ['get', 'name:nonlatin'], { 'font-scale': 0.8 }]), ['format', NAME_DE, {}]);
    assert.deepEqual(field(['format', ['get', 'ele'], {}, ' ', {}, ['get', 'name'], { 'font-scale': 0.8 }]), ['format', ['get', 'ele'], {}, ' ', {}, NAME_DE, { 'font-scale': 0.8 }]);
    assert.deepEqual(field(['case', ['has', 'name'], ['get', 'name'], ['get', 'ref']]), ['case', ['has', 'name'], NAME_DE, ['get', 'ref']]);
    assert.deepEqual(field(['get', 'housenumber']), ['get', 'housenumber']);
    assert.deepEqual(field(['literal', '{name}']), ['literal', '{name}']);
  });

  test('a legacy zoom function of tokens becomes a step expression; a property function is left alone', () => {
    assert.deepEqual(field({ stops: [[2, '{ABBREV}'], [4, '{name}']] }), ['step', ['zoom'], ['to-string', ['get', 'ABBREV']], 4, NAME_DE]);
    const byProperty = { property: 'kind', type: 'categorical', stops: [['a', '{name}']] };
    assert.deepEqual(field(byProperty), byProperty);
  });
});
