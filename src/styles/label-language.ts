// Labels in the reader's language: a style's `text-field`s rewritten so that every reading of a name property
// prefers the name in one language. The result is an ordinary MapLibre expression (a `coalesce` over `get`s),
// so a client map given the rewritten style.json and this server's renderer draw the same labels.
//
// A reading of a name is `["get", P]` (or the token `{P}` of a string) where P is `name`, `name:*` or `name_*`:
// the keys OpenMapTiles (`name`, `name:xx`, `name_en`, `name_de`, `name_int`, `name:latin`, `name:nonlatin`),
// Protomaps (`name`, `name:xx`) and Shortbread (`name`, `name_en`, `name_de`) tiles use. Each becomes
//   coalesce(name:<tag>, name:<shorter tags>..., name_<language>, [name:latin, name_int], name, P)
// where the Latin fallback is there only for languages written in the Latin script (a reader of German is better
// served by the romanised name than by one in a script they may not read; a reader of Arabic is not). Other text
// (`{ref}`, `{housenumber}`, literals) is left as it is. A label made only of names and separators
// (`{name:latin}\n{name:nonlatin}`, `{name} ({name:en})`) shows one name, the localised one: two readings of the
// same localised name would print it twice.
import type { StyleSpecification } from '@maplibre/maplibre-gl-style-spec';
import { lookupChain, type LanguageTag } from '../config/language-tag.js';

type Json = unknown;

/** Languages whose usual script is not Latin (ISO 639-1, and a few 639-3 codes OSM uses); a script subtag wins. */
const NON_LATIN = new Set(
  (
    'ab am ar as ba be bg bn bo ce ckb cu cv dv dz el fa gu he hi hy iu ja ka kk km kn ko ks ku-Arab ky lo mk ml mn mr my ne ' +
    'or os pa ps ru sa sd si sr ta te tg th ti tt ug uk ur yi zh arz bej bho chr mai new pnb sat syr'
  ).split(' '),
);

/** Whether a language is usually written in the Latin script (a `Latn` script subtag says yes, any other no). */
export function isLatinScript(lang: LanguageTag): boolean {
  if (lang.script) return lang.script === 'Latn';
  return !NON_LATIN.has(lang.language.split('-')[0]);
}

const NAME_KEY = /^name(?:[:_].+)?$/;
export const isNameKey = (key: string) => NAME_KEY.test(key);

/** The localised name expression replacing a reading of `original`. */
export function localizedName(lang: LanguageTag, original = 'name'): Json[] {
  const keys: string[] = [];
  const add = (k: string) => {
    if (!keys.includes(k)) keys.push(k);
  };
  for (const t of lookupChain(lang.tag)) add(`name:${t}`);
  // OpenMapTiles and Shortbread carry a few languages as `name_xx` (name_en, name_de).
  add(`name_${lang.language.split('-')[0]}`);
  if (isLatinScript(lang)) {
    add('name:latin');
    add('name_int');
  }
  add('name');
  add(original);
  return ['coalesce', ...keys.map((k) => ['get', k])];
}

const isExpressionArray = (v: Json): v is Json[] => Array.isArray(v) && typeof v[0] === 'string';

/** Whether a value (an expression, a token string, a legacy function) reads a name property. */
export function readsName(value: Json): boolean {
  if (typeof value === 'string') return tokens(value).some((t) => t.kind === 'token' && isNameKey(t.text));
  if (isExpressionArray(value)) {
    if (value[0] === 'literal') return false;
    if (value[0] === 'get' && value.length === 2 && typeof value[1] === 'string') return isNameKey(value[1]);
    return value.slice(1).some(readsName);
  }
  if (value && typeof value === 'object' && Array.isArray((value as { stops?: unknown }).stops)) {
    return ((value as { stops: [unknown, Json][] }).stops).some((s) => Array.isArray(s) && readsName(s[1]));
  }
  return false;
}

type Piece = { kind: 'text'; text: string } | { kind: 'token'; text: string };

/** A `text-field` string split into literal text and `{token}`s (MapLibre's token syntax: no nesting). */
function tokens(s: string): Piece[] {
  const out: Piece[] = [];
  let last = 0;
  for (const m of s.matchAll(/\{([^{}]+)\}/g)) {
    if (m.index! > last) out.push({ kind: 'text', text: s.slice(last, m.index) });
    out.push({ kind: 'token', text: m[1] });
    last = m.index! + m[0].length;
  }
  if (last < s.length) out.push({ kind: 'text', text: s.slice(last) });
  return out;
}

/** Text that separates names and says nothing itself: white space and punctuation. */
const isSeparator = (v: Json) => typeof v === 'string' && /^[\s\p{P}]*$/u.test(v);

const sameJson = (a: Json, b: Json) => JSON.stringify(a) === JSON.stringify(b);

class Rewriter {
  readonly name: Json[];
  constructor(private readonly lang: LanguageTag) {
    this.name = localizedName(lang);
  }

  /** A token string as an expression; unchanged when it reads no name. */
  tokenString(s: string): Json {
    if (!tokens(s).some((p) => p.kind === 'token' && isNameKey(p.text))) return s;
    return this.tokensAsExpression(s);
  }

  /** A token string as the expression it means (inside an expression, `{x}` would be literal text). */
  private tokensAsExpression(s: string): Json {
    const pieces = tokens(s);
    if (!pieces.some((p) => p.kind === 'token')) return s;
    // MapLibre replaces a token of a missing property with "": `to-string` of null is "".
    const parts: Json[] = pieces.map((p) => (p.kind === 'text' ? p.text : isNameKey(p.text) ? this.named(p.text) : ['to-string', ['get', p.text]]));
    return this.joined(parts);
  }

  private named(key: string): Json[] {
    return key === 'name' ? this.name : localizedName(this.lang, key);
  }

  /** Parts of a concatenation: one name when they are only names and separators, else a `concat`. */
  private joined(parts: Json[]): Json {
    const names = parts.filter((p) => this.isNameReading(p));
    if (names.length > 0 && parts.every((p) => this.isNameReading(p) || isSeparator(p))) return names[0];
    const kept = parts.filter((p) => p !== '');
    return kept.length === 1 && typeof kept[0] !== 'string' ? kept[0] : ['concat', ...kept];
  }

  /** A localised reading of any name key (they all coalesce to the same names, ending in their own key). */
  private isNameReading = (v: Json) => Array.isArray(v) && v[0] === 'coalesce' && v.length >= 2 && sameJson(v.slice(0, this.name.length - 1), this.name.slice(0, -1));

  expression(e: Json): Json {
    if (!isExpressionArray(e)) return e;
    const op = e[0] as string;
    if (op === 'literal') return e;
    if (op === 'get' && e.length === 2 && typeof e[1] === 'string') return isNameKey(e[1]) ? this.named(e[1]) : e;
    const args = e.slice(1).map((a) => this.expression(a));
    if (op === 'coalesce' && args.length > 0 && args.every((a) => this.isNameReading(a))) return args[0];
    if (op === 'concat' && args.some((a) => this.isNameReading(a))) return this.joined(args);
    if (op === 'format') return this.format(args);
    return [op, ...args];
  }

  /** `["format", text, options, text, options, ...]`: a label of names and separators keeps its first name's section. */
  private format(args: Json[]): Json {
    const sections: [Json, Json][] = [];
    for (let i = 0; i < args.length; i++) {
      const next = args[i + 1];
      // Options are an object (not an expression array); a section may omit them.
      if (next !== undefined && next !== null && typeof next === 'object' && !Array.isArray(next)) {
        sections.push([args[i], next]);
        i++;
      } else sections.push([args[i], undefined]);
    }
    const contents = sections.map((s) => s[0]);
    const onlyNames = contents.some((c) => this.isNameReading(c)) && contents.every((c) => this.isNameReading(c) || isSeparator(c));
    if (!onlyNames) return ['format', ...args];
    const first = sections.find((s) => this.isNameReading(s[0]))!;
    return ['format', first[0], ...(first[1] === undefined ? [] : [first[1]])];
  }

  /** A legacy zoom function of token strings (`{"stops": [[2, "{ABBREV}"], [4, "{name}"]]}`) as a `step` expression. */
  legacyFunction(f: { stops: [number, Json][]; property?: unknown; type?: unknown; base?: unknown }): Json {
    if (f.property !== undefined || (f.type !== undefined && f.type !== 'interval') || f.stops.length === 0) return f;
    const values = f.stops.map(([, value]) => (typeof value === 'string' ? this.tokensAsExpression(value) : value));
    const out: Json[] = ['step', ['zoom'], values[0]];
    f.stops.slice(1).forEach(([zoom], i) => out.push(zoom, values[i + 1]));
    return out;
  }

  textField(value: Json): Json {
    if (typeof value === 'string') return this.tokenString(value);
    if (isExpressionArray(value)) return this.expression(value);
    if (value && typeof value === 'object' && Array.isArray((value as { stops?: unknown }).stops)) return this.legacyFunction(value as { stops: [number, Json][] });
    return value;
  }
}

/** Whether any symbol layer of a style reads a name in its `text-field` (else a language changes nothing). */
export function styleReadsNames(style: StyleSpecification): boolean {
  return style.layers.some((l) => l.type === 'symbol' && readsName((l.layout as Record<string, unknown> | undefined)?.['text-field']));
}

/** The style with every name reading of its symbol layers' `text-field`s localised; the input is not modified. */
export function localizeStyle<S extends StyleSpecification>(style: S, lang: LanguageTag): S {
  const rewriter = new Rewriter(lang);
  const layers = style.layers.map((layer) => {
    const layout = layer.layout as Record<string, unknown> | undefined;
    const field = layout?.['text-field'];
    if (layer.type !== 'symbol' || field === undefined || !readsName(field)) return layer;
    return { ...layer, layout: { ...layout, 'text-field': rewriter.textField(field) } } as typeof layer;
  });
  return { ...style, layers };
}
