// Styles: the list (/styles.json), style JSON (configured or generated), raster TileJSON, WMTS capabilities
// and sprites. The logic is in src/styles/; these handlers validate, look up and answer.
import * as v from 'valibot';
import type { Context } from 'hono';
import { generatedStyle, styleById } from '../../serve/generated.js';
import { localizeStyle } from '../../styles/label-language.js';
import { languageHeaders, requestLanguage } from '../request-language.js';
import { findSource, servedStyle, styleJsonUrl } from '../../serve/rewrite.js';
import { parseSpriteFile, readSprite } from '../../styles/sprites.js';
import { styleTileJson } from '../../serve/style-tilejson.js';
import { wmtsCapabilities } from '../../serve/wmts.js';
import { isVector } from '../../tiles/format.js';
import { urlContext, type ServerContext } from '../context.js';
import { visibleTo } from '../access-gate.js';
import { problem } from '../problem.js';
import { METADATA_CACHE_CONTROL, sendBytes, sendJson } from '../respond.js';
import { KEY_QUERY, param, type Router } from '../router.js';
import { PUBLIC } from '../../routes/public-routes.js';
import { renderAbsence } from './render.js';

const PROBLEM = { 'application/problem+json': true as const };
const STYLE_PARAM = { style: { schema: v.string(), description: 'style id' } };
/** Labels in the reader's language (docs/styles.md). */
export const LANG_QUERY = {
  lang: { schema: v.string(), description: "BCP 47 tag: labels prefer the name in this language (name:xx), then a script-aware fallback, then name; else Accept-Language when the style honours it, else the style's default_language" },
};
/** Sprites change only with the style files; clients may keep them a day. */
const SPRITE_CACHE_CONTROL = 'public, max-age=86400';

export const StyleListEntrySchema = v.object({ id: v.string(), name: v.string(), url: v.string() });

const noStyle = (c: Context, id: string) => problem(c, 404, 'Style not found', `no style with id "${id}"`);

export function registerStyleRoutes(r: Router, ctx: ServerContext): void {
  r.add(
    PUBLIC.styleList,
    {
      summary: 'The configured styles',
      tag: 'Styles',
      query: KEY_QUERY,
      responses: { 200: { description: 'style list entries', content: { 'application/json': v.array(StyleListEntrySchema) } } },
    },
    (c) => {
      const state = ctx.holder.current;
      const u = urlContext(c, state);
      const see = visibleTo(c, state);
      return sendJson(c, state, [...state.styles.values()].filter((s) => see('style', s.id)).map((s) => ({ id: s.id, name: s.name, url: styleJsonUrl(s.id, u) })));
    },
  );

  r.add(
    PUBLIC.style,
    {
      summary: 'Style JSON (MapLibre style version 8) with URLs pointing at this service',
      tag: 'Styles',
      description:
        'A configured style, or, when no style has this id but a vector source has, a style generated for that source (one fill, line and circle layer per source-layer).',
      params: STYLE_PARAM,
      query: { ...KEY_QUERY, ...LANG_QUERY },
      responses: {
        200: { description: 'style JSON', content: { 'application/json': true } },
        400: { description: '`lang` is not a BCP 47 tag, or not one the style offers', content: PROBLEM },
        404: { description: 'no such style, or the source of that id is not a vector source', content: PROBLEM },
      },
    },
    (c) => {
      const state = ctx.holder.current;
      const id = param(c, 'style');
      const u = urlContext(c, state);
      const loaded = styleById(state, id);
      const language = loaded ? requestLanguage(c, loaded) : undefined;
      if (language && !language.ok) return language.res;
      const lang = language?.value;
      const style = state.styles.get(id);
      if (style) {
        const served = servedStyle(state, style, u);
        return sendJson(c, state, lang?.lang ? localizeStyle(served, lang.lang) : served, undefined, 200, lang ? languageHeaders(lang) : {});
      }
      const generated = generatedStyle(state, id, u);
      if (generated) return sendJson(c, state, generated, undefined, 200, lang ? languageHeaders(lang) : {});
      const source = findSource(state, id);
      if (source && !isVector(source.info.format)) {
        return problem(c, 404, 'Style not found', `no style with id "${id}"; source "${id}" is ${source.info.format}, and styles are generated for vector sources only`);
      }
      return noStyle(c, id);
    },
  );

  r.add(
    PUBLIC.styleJson,
    {
      summary: 'Raster TileJSON of a style (rendered PNG tiles, 512 px base)',
      tag: 'Styles',
      params: STYLE_PARAM,
      query: KEY_QUERY,
      responses: {
        200: { description: 'TileJSON 3.0.0', content: { 'application/json': true } },
        404: { description: 'no such style', content: PROBLEM },
      },
    },
    (c) => {
      const state = ctx.holder.current;
      const id = param(c, 'file').slice(0, -'.json'.length);
      const style = styleById(state, id);
      if (!style) return noStyle(c, id);
      return sendJson(c, state, styleTileJson(state, style, urlContext(c, state)));
    },
    renderAbsence,
  );

  r.add(
    PUBLIC.styleWmts,
    {
      summary: 'OGC WMTS 1.0.0 GetCapabilities of a style (GoogleMapsCompatible, PNG)',
      tag: 'Styles',
      params: STYLE_PARAM,
      query: KEY_QUERY,
      responses: {
        200: { description: 'capabilities document', content: { 'application/xml': true } },
        404: { description: 'no such style', content: PROBLEM },
      },
    },
    (c) => {
      const state = ctx.holder.current;
      const id = param(c, 'style');
      const style = styleById(state, id);
      if (!style) return noStyle(c, id);
      const body = Buffer.from(wmtsCapabilities(state, style, urlContext(c, state)));
      return sendBytes(c, state, body, 'application/xml; charset=utf-8', METADATA_CACHE_CONTROL);
    },
    renderAbsence,
  );

  r.add(
    PUBLIC.sprite,
    {
      summary: 'Sprite sheet (png) or its metadata (json)',
      tag: 'Styles',
      params: {
        ...STYLE_PARAM,
        scale: { schema: v.picklist(['', '@2x', '@3x']), description: 'empty, @2x or @3x' },
        format: { schema: v.picklist(['png', 'json']) },
      },
      responses: {
        200: { description: 'the sprite file', content: { 'image/png': true, 'application/json': true } },
        400: { description: 'not sprite[@2x|@3x].png or .json', content: PROBLEM },
        404: { description: 'no such style, or the style has no sprite file of this scale', content: PROBLEM },
      },
    },
    async (c) => {
      const state = ctx.holder.current;
      const id = param(c, 'style');
      const parsed = parseSpriteFile(param(c, 'file'));
      if (!parsed.ok) return problem(c, 400, 'Invalid sprite request', parsed.problem);
      const style = styleById(state, id);
      if (!style) return noStyle(c, id);
      const bytes = await readSprite(style, parsed.scale, parsed.ext);
      if (!bytes) return problem(c, 404, 'Sprite not found', `style "${id}" has no ${param(c, 'file')}`);
      // PNG is compressed already; only the metadata JSON is worth re-encoding.
      if (parsed.ext === 'json') return sendBytes(c, state, bytes, 'application/json; charset=utf-8', SPRITE_CACHE_CONTROL);
      return c.body(bytes as Uint8Array<ArrayBuffer>, 200, { 'Content-Type': 'image/png', 'Cache-Control': SPRITE_CACHE_CONTROL });
    },
  );
}
