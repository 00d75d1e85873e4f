// The language of a request for a style (src/styles/language-choice.ts): from its `lang` query parameter, or its
// Accept-Language header when the style honours it. A tag that is not BCP 47, or one the style does not offer,
// is a 400 naming `lang`.
import type { Context } from 'hono';
import type { LanguageTag } from '../config/language-tag.js';
import { ANY_LANGUAGE, chooseLanguage, labelLanguage } from '../styles/language-choice.js';
import type { LoadedStyle } from '../styles/loaded-style.js';
import { problem } from './problem.js';

export interface RequestLanguage {
  /** The language to draw labels in, or undefined for the style as written. */
  lang: LanguageTag | undefined;
  /** The answer depends on Accept-Language: it must say `Vary: Accept-Language`. */
  vary: boolean;
}

export type RequestLanguageResult = { ok: true; value: RequestLanguage } | { ok: false; res: Response };

export function requestLanguage(c: Context, style: LoadedStyle, lang: string | undefined = c.req.query('lang')): RequestLanguageResult {
  const choice = chooseLanguage(style.languages ?? ANY_LANGUAGE, style.id, lang, c.req.header('accept-language'));
  if (!choice.ok) return { ok: false, res: problem(c, 400, 'Invalid language', choice.detail, { parameter: 'lang' }) };
  return { ok: true, value: { lang: labelLanguage(style, choice.lang), vary: choice.vary } };
}

/** Headers of an answer in a language: what it is in, and what it varied on. */
export function languageHeaders(l: RequestLanguage): Record<string, string> {
  const out: Record<string, string> = {};
  if (l.lang) out['Content-Language'] = l.lang.tag;
  if (l.vary) out.Vary = 'Accept-Language';
  return out;
}
