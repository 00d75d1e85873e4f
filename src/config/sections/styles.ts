// `[[styles]]` and `[[composites]]`: what is served besides sources, and sources served merged as one.
import * as v from 'valibot';
import { access, id, keyPath, languageTag, nonEmpty } from './common.js';
import { section } from './section.js';

export const StyleSchema = v.pipe(
  v.object({
    id,
    path: nonEmpty,
    name: v.optional(v.string()),
    /** A folder of SVG icons the style's sprite sheets are built from (names: the file names without `.svg`). */
    sprite_dir: v.optional(nonEmpty),
    /** Build the sheets of `sprite_dir` as signed distance fields, so `icon-color` recolours the icons. */
    sdf: v.optional(v.boolean()),
    /** Who may read it and its renderings (docs/access.md); default: auth.default_access, or stricter when a source it uses is. */
    access: v.optional(access),
    /** A text drawn in the bottom-left corner of its static maps (a request's `watermark` replaces it). */
    watermark: v.optional(v.pipe(v.string(), v.maxLength(200))),
    /**
     * The languages its labels may be asked in (`?lang=`, docs/styles.md "Labels in the reader's language"): BCP 47
     * tags, or `"*"` for any; `[]` turns languages off for this style.
     */
    languages: v.optional(v.array(v.union([v.literal('*'), languageTag])), ['*']),
    /** The language of a request that names none (and whose Accept-Language, if honoured, matches none); unset: the style as written. */
    default_language: v.optional(languageTag),
    /** Honour the Accept-Language header when a request has no `lang` (answers then carry `Vary: Accept-Language`). */
    accept_language: v.optional(v.boolean(), false),
  }),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed || !dataset.value.sdf || dataset.value.sprite_dir !== undefined) return;
    addIssue({ message: 'sdf applies to sprites built from sprite_dir; set sprite_dir too', path: keyPath(dataset.value, 'sdf') });
  }),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const { languages, default_language: lang, accept_language: accept } = dataset.value;
    const at = (key: string) => keyPath(dataset.value, key);
    if (languages.length === 0 && lang !== undefined) addIssue({ message: 'default_language needs languages; languages = [] turns them off', path: at('default_language') });
    else if (lang !== undefined && !languages.includes('*') && !languages.includes(lang)) {
      addIssue({ message: `default_language "${lang}" is not one of languages (${languages.join(', ')})`, path: at('default_language') });
    }
    if (languages.length === 0 && accept) addIssue({ message: 'accept_language needs languages; languages = [] turns them off', path: at('accept_language') });
  }),
);

/** A named composite: vector sources served merged as one (`/data/{id}/{z}/{x}/{y}.pbf`). */
export const CompositeSchema = v.object({
  id,
  sources: v.pipe(v.array(id), v.minLength(1, 'a composite needs at least one source')),
  /** Who may read it (docs/access.md); default: the strictest of auth.default_access and its members' access. */
  access: v.optional(access),
});

export const styles = section(v.optional(v.array(StyleSchema), []));
export const composites = section(v.optional(v.array(CompositeSchema), []));
