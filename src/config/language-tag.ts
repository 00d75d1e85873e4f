// Language tags (BCP 47, RFC 5646): the `lang` query parameter and `Accept-Language` of the style and render
// routes, and the `languages` of a `[[styles]]` entry. Parsed here, at the bottom of the layers, because the
// configuration validates its tags with the same rules the routes apply to a request.
//
// Accepted: `language[-script][-region](-variant)*(-extension)*[-x-private]`, the "langtag" production of
// RFC 5646 section 2.1, case-insensitive, at most 64 characters. Not accepted: the grandfathered tags
// (`i-klingon`, `zh-min-nan`, ...) and tags that are only private use (`x-whatever`): map data has no names
// for them. Tags come back in the canonical case of RFC 5646 section 2.1.1 (`zh-Hant-TW`, `sr-Latn`, `de-CH-1996`).

export interface LanguageTag {
  /** The whole tag in canonical case. */
  tag: string;
  /** Primary language subtag (with its extended language subtags), lower case: `de`, `zh`, `zh-yue`. */
  language: string;
  /** Script subtag in title case (`Latn`, `Cyrl`, `Hant`), when the tag has one. */
  script?: string;
  /** Region subtag in upper case (`CH`, `419`), when the tag has one. */
  region?: string;
}

export const MAX_TAG_LENGTH = 64;

const ALPHA = /^[a-z]+$/;
const DIGIT = /^[0-9]$/;
const ALNUM = /^[a-z0-9]+$/;

/** Parses one BCP 47 language tag; undefined when it is not one (the caller says which parameter was wrong). */
export function parseLanguageTag(text: string): LanguageTag | undefined {
  if (text.length === 0 || text.length > MAX_TAG_LENGTH) return undefined;
  const parts = text.toLowerCase().split('-');
  if (parts.some((p) => p.length === 0 || p.length > 8 || !ALNUM.test(p))) return undefined;
  let i = 0;
  const lang = parts[i++];
  if (!ALPHA.test(lang) || lang.length < 2 || lang.length === 4) return undefined;
  const language = [lang];
  // Extended language subtags (up to three of three letters) follow only a two- or three-letter language.
  if (lang.length <= 3) {
    while (language.length < 4 && i < parts.length && parts[i].length === 3 && ALPHA.test(parts[i])) language.push(parts[i++]);
  }
  let script: string | undefined;
  if (i < parts.length && parts[i].length === 4 && ALPHA.test(parts[i])) {
    const s = parts[i++];
    script = s[0].toUpperCase() + s.slice(1);
  }
  let region: string | undefined;
  if (i < parts.length && ((parts[i].length === 2 && ALPHA.test(parts[i])) || (parts[i].length === 3 && /^[0-9]{3}$/.test(parts[i])))) {
    region = parts[i++].toUpperCase();
  }
  const variants = new Set<string>();
  while (i < parts.length && ((parts[i].length >= 5) || (parts[i].length === 4 && DIGIT.test(parts[i][0])))) {
    // RFC 5646 2.2.5: a variant may not repeat.
    if (variants.has(parts[i])) return undefined;
    variants.add(parts[i++]);
  }
  const singletons = new Set<string>();
  const extensions: string[] = [];
  while (i < parts.length && parts[i].length === 1 && parts[i] !== 'x') {
    const singleton = parts[i++];
    // RFC 5646 2.2.6: each singleton at most once, followed by at least one subtag of 2-8 characters.
    if (singletons.has(singleton)) return undefined;
    singletons.add(singleton);
    const subtags: string[] = [];
    while (i < parts.length && parts[i].length >= 2) subtags.push(parts[i++]);
    if (subtags.length === 0) return undefined;
    extensions.push(singleton, ...subtags);
  }
  const privateUse: string[] = [];
  if (i < parts.length && parts[i] === 'x') {
    i++;
    while (i < parts.length) privateUse.push(parts[i++]);
    if (privateUse.length === 0) return undefined;
  }
  if (i !== parts.length) return undefined;
  const all = [...language, ...(script ? [script] : []), ...(region ? [region] : []), ...variants, ...extensions, ...(privateUse.length ? ['x', ...privateUse] : [])];
  const out: LanguageTag = { tag: all.join('-'), language: language.join('-') };
  if (script) out.script = script;
  if (region) out.region = region;
  return out;
}

/**
 * The tags to try for a requested tag, most specific first, as RFC 4647's "lookup" truncates: `zh-Hant-TW`,
 * `zh-Hant`, `zh`. A subtag left dangling by a cut (a singleton, `x`) goes with it.
 */
export function lookupChain(tag: string): string[] {
  const parts = tag.split('-');
  // Subtags after `x` are private use: a one-letter one there is not a singleton.
  const x = parts.indexOf('x', 1);
  const out: string[] = [];
  for (let n = parts.length; n >= 1; n--) {
    if (parts[n - 1].length === 1 && (x < 0 || n - 1 <= x)) continue;
    out.push(parts.slice(0, n).join('-'));
  }
  return out;
}

export interface AcceptedLanguage {
  tag: LanguageTag;
  q: number;
}

/**
 * The languages of an `Accept-Language` header (RFC 9110 12.5.4) in the client's order of preference: highest
 * q first, ties in header order. `*`, entries with q=0 and entries that are not language tags are left out (a
 * header is the browser's, not the user's typing: what cannot be read is ignored, not refused).
 */
export function parseAcceptLanguage(header: string): AcceptedLanguage[] {
  const out: (AcceptedLanguage & { at: number })[] = [];
  const items = header.split(',').slice(0, 64);
  items.forEach((item, at) => {
    const [range, ...params] = item.trim().split(';');
    let q = 1;
    for (const p of params) {
      const m = /^\s*q\s*=\s*(0(?:\.\d{0,3})?|1(?:\.0{0,3})?)\s*$/i.exec(p);
      if (m) q = Number(m[1]);
      else if (/^\s*q\s*=/i.test(p)) q = -1;
    }
    const tag = range.trim() === '*' ? undefined : parseLanguageTag(range.trim());
    if (tag && q > 0) out.push({ tag, q, at });
  });
  return out.sort((a, b) => b.q - a.q || a.at - b.at).map(({ tag, q }) => ({ tag, q }));
}
