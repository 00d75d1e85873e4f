// Which language a request gets a style's labels in: its `lang` parameter, else (when the style opts in) its
// Accept-Language header, else the style's default, else none (the style as written). The style's configured
// `languages` bound what may be asked for; a tag is matched against them by RFC 4647 lookup (`de-AT` is served
// as `de` when only `de` is offered). Shared by style.json and every render route, so a client map and a
// server render of the same request use the same language.
import { lookupChain, parseAcceptLanguage, parseLanguageTag, type LanguageTag } from '../config/language-tag.js';
import type { StyleConfig } from '../config/schema.js';
import type { StyleSpecification } from '@maplibre/maplibre-gl-style-spec';
import { styleReadsNames } from './label-language.js';
import type { LoadedStyle, StyleLanguages } from './loaded-style.js';

export type { StyleLanguages };

/** A generated style (or one without configuration) takes any language; its labels, if any, follow it. */
export const ANY_LANGUAGE: StyleLanguages = { offered: 'all', default: undefined, acceptLanguage: false };

export function styleLanguages(cfg: Pick<StyleConfig, 'languages' | 'default_language' | 'accept_language'>): StyleLanguages {
  const list = cfg.languages ?? ['*'];
  const offered = list.length === 0 ? 'off' : list.includes('*') ? 'all' : new Set(list);
  return { offered, default: cfg.default_language, acceptLanguage: offered !== 'off' && cfg.accept_language === true };
}

export type LanguageChoice =
  /** `lang`: the language to draw labels in, undefined for the style as written; `vary`: the answer depends on Accept-Language. */
  | { ok: true; lang: LanguageTag | undefined; vary: boolean }
  | { ok: false; detail: string };

/** The offered tag a requested one is served as, by lookup; undefined when none matches. */
function match(offered: StyleLanguages['offered'], tag: LanguageTag): LanguageTag | undefined {
  if (offered === 'all') return tag;
  if (offered === 'off') return undefined;
  const hit = lookupChain(tag.tag).find((t) => offered.has(t));
  return hit === undefined ? undefined : parseLanguageTag(hit);
}

/** The language of a request for a style with these settings; a problem names what was wrong with `lang`. */
export function chooseLanguage(settings: StyleLanguages, styleId: string, lang: string | undefined, acceptLanguage: string | undefined): LanguageChoice {
  if (lang !== undefined && lang !== '') {
    const tag = parseLanguageTag(lang);
    if (!tag) return { ok: false, detail: `lang "${lang.slice(0, 80)}" is not a BCP 47 language tag (en, de-CH, zh-Hant, sr-Latn)` };
    if (settings.offered === 'off') return { ok: false, detail: `style "${styleId}" offers no languages (its languages setting is [])` };
    const hit = match(settings.offered, tag);
    if (!hit) return { ok: false, detail: `style "${styleId}" does not offer language "${tag.tag}"; it offers ${[...(settings.offered as ReadonlySet<string>)].join(', ')}` };
    return { ok: true, lang: hit, vary: false };
  }
  const vary = settings.acceptLanguage;
  if (vary && acceptLanguage) {
    for (const { tag } of parseAcceptLanguage(acceptLanguage)) {
      const hit = match(settings.offered, tag);
      if (hit) return { ok: true, lang: hit, vary };
    }
  }
  return { ok: true, lang: settings.default === undefined ? undefined : parseLanguageTag(settings.default), vary };
}

const readsNames = new WeakMap<StyleSpecification, boolean>();

/**
 * The language a style's labels are drawn in for a choice: none when its labels read no name (a generated style,
 * a style of street numbers), so that such a style has one image per view, not one per language asked.
 */
export function labelLanguage(style: LoadedStyle, lang: LanguageTag | undefined): LanguageTag | undefined {
  if (!lang) return undefined;
  let reads = readsNames.get(style.style);
  if (reads === undefined) readsNames.set(style.style, (reads = styleReadsNames(style.style)));
  return reads ? lang : undefined;
}
