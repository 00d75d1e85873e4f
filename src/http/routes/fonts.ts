// Fonts: /fonts.json lists the fonts directory (PBF folders and font files); /fonts/{fontstack}/{range}.pbf serves glyph ranges
// (decisions.md: 404 unknown stack, 200 empty PBF for a missing range of a known font, 400 malformed range).
import * as v from 'valibot';
import { readGlyphs } from '../../styles/fonts.js';
import type { ServerContext } from '../context.js';
import { problem } from '../problem.js';
import { sendBytes, sendJson } from '../respond.js';
import { param, type Router } from '../router.js';
import { PUBLIC } from '../../routes/public-routes.js';

const PROBLEM = { 'application/problem+json': true as const };
/** Glyph files change only when fonts are replaced; clients may keep them a day. */
const GLYPHS_CACHE_CONTROL = 'public, max-age=86400';

export function registerFontRoutes(r: Router, ctx: ServerContext): void {
  r.add(
    PUBLIC.fontList,
    {
      summary: 'Names of the fonts in the fonts directory (folders of ranges, and font files by the name they declare)',
      tag: 'Fonts',
      responses: { 200: { description: 'font names, sorted', content: { 'application/json': v.array(v.string()) } } },
    },
    (c) => {
      const state = ctx.holder.current;
      return sendJson(c, state, state.fonts.names);
    },
  );

  r.add(
    PUBLIC.glyphs,
    {
      summary: 'Glyphs of one character range for a font stack',
      tag: 'Fonts',
      description:
        'The stack is one font name or several separated by commas (URL-encoded as needed). A font is a folder of pre-built ranges or a font file (.ttf, .otf, .ttc) whose ranges are generated on demand. The first font of the stack that has the range is used; when fonts of the stack exist but none has the range, an empty glyphs PBF is sent.',
      params: {
        fontstack: { schema: v.string(), description: 'font name or comma-separated fallback stack' },
        range: { schema: v.pipe(v.string(), v.regex(/^\d+-\d+$/)), description: 'N-M with N a multiple of 256 and M = N+255, e.g. 0-255' },
      },
      responses: {
        200: { description: 'glyphs PBF', content: { 'application/x-protobuf': true } },
        400: { description: 'malformed range or font name', content: PROBLEM },
        404: { description: 'no font of the stack exists', content: PROBLEM },
      },
    },
    async (c) => {
      const state = ctx.holder.current;
      const fontstack = param(c, 'fontstack');
      const result = await readGlyphs(state.fonts, fontstack, param(c, 'file').slice(0, -'.pbf'.length));
      switch (result.kind) {
        case 'bad-range':
          return problem(c, 400, 'Invalid glyph range', result.problem);
        case 'bad-font-name':
          return problem(c, 400, 'Invalid font stack', result.problem);
        case 'unknown-font':
          return problem(
            c,
            404,
            'Font not found',
            state.fonts.dir ? `no font of the stack "${result.fonts.join(',')}" is in the fonts directory` : 'no fonts directory is configured',
            { fonts: result.fonts },
          );
        case 'ok':
          return sendBytes(c, state, result.bytes, 'application/x-protobuf', GLYPHS_CACHE_CONTROL);
      }
    },
  );
}
