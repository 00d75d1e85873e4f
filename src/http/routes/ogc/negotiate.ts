// What OGC API routes share: `f=json|html` and Accept negotiation of the JSON documents, the answer in the
// chosen form, the documented query parameters, and the switch that unmounts them all (server.disable_ogc).
import type { Context } from 'hono';
import * as v from 'valibot';
import { htmlPage } from '../../../ogc/html.js';
import type { AppState } from '../../../state/app-state.js';
import { problem } from '../../problem.js';
import { METADATA_CACHE_CONTROL, sendBytes } from '../../respond.js';
import { KEY_QUERY, type Absence } from '../../router.js';
import { renderAbsence } from '../render-answer.js';

export const PROBLEM = { 'application/problem+json': true as const };

/** The OGC routes are not mounted while server.disable_ogc is set. */
export const ogcAbsence: Absence = (state) => (state.config.server.disable_ogc ? 'server.disable_ogc is set' : undefined);
/** Map tiles of styles also need rendering. */
export const ogcMapAbsence: Absence = (state) => ogcAbsence(state) ?? renderAbsence(state);

export const DOC_QUERY = {
  f: { schema: v.picklist(['json', 'html']), description: 'response format; without it, the Accept header decides (JSON unless text/html is preferred)' },
  ...KEY_QUERY,
};

/** The q-value a media range in Accept gives `type` (0 when none matches); exact types win over wildcards. */
function qualityOf(accept: string, type: string): number {
  let best = -1;
  let bestSpecificity = -1;
  const [major] = type.split('/');
  for (const part of accept.split(',')) {
    const [range, ...params] = part.trim().toLowerCase().split(';');
    const r = range.trim();
    const specificity = r === type ? 2 : r === `${major}/*` ? 1 : r === '*/*' ? 0 : -1;
    if (specificity < 0 || specificity < bestSpecificity) continue;
    const qp = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const q = qp ? Number(qp.slice(2)) : 1;
    bestSpecificity = specificity;
    best = Number.isFinite(q) ? q : 0;
  }
  return Math.max(0, best);
}

/** `html`, `json`, or the 400 of an unknown `f`. */
export function chooseForm(c: Context, jsonTypes: string[]): 'json' | 'html' | Response {
  const f = c.req.query('f');
  if (f !== undefined) {
    if (f === 'json' || f === 'html') return f;
    return problem(c, 400, 'Invalid parameter', `f=${JSON.stringify(f)} is not json or html`, { parameter: 'f' });
  }
  return prefersHtml(c.req.header('accept'), jsonTypes) ? 'html' : 'json';
}

/** Whether an Accept header ranks text/html above every JSON type (ties, and no header, give JSON). */
export function prefersHtml(accept: string | undefined, jsonTypes: string[]): boolean {
  if (!accept) return false;
  const html = qualityOf(accept, 'text/html');
  const json = Math.max(...jsonTypes.map((t) => qualityOf(accept, t)));
  return html > json;
}

/** A document as JSON (of `type`) or as HTML, as the request asks. */
export function sendDoc(c: Context, state: AppState, title: string, doc: unknown, type = 'application/json', headers: Record<string, string> = {}, cacheControl = METADATA_CACHE_CONTROL): Response {
  const form = chooseForm(c, [type, 'application/json']);
  if (form instanceof Response) return form;
  // The form follows Accept: caches must keep one copy per Accept.
  const vary = { ...headers, Vary: 'Accept-Encoding, Accept' };
  return form === 'html'
    ? sendBytes(c, state, Buffer.from(htmlPage(title, doc)), 'text/html; charset=utf-8', cacheControl, 200, vary)
    : sendBytes(c, state, Buffer.from(JSON.stringify(doc)), `${type}; charset=utf-8`, cacheControl, 200, vary);
}
