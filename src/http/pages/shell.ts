// The frame of every page: head with the library (import map, integrity-checked links), the shared style sheet,
// the page's options as a JSON block and its one script module; and the response with its security headers.
import type { Context } from 'hono';
import { contentSecurityPolicy, escapeHtml, jsonForScript, libraryHead, newNonce, type PageLibrary } from './html.js';

export interface PageSpec {
  title: string;
  /** Base URL of this service (urlContext): page assets are loaded from it. */
  base: string;
  lib: PageLibrary;
  /** Read by the page's script from the JSON block (client/common.js readConfig). */
  config: unknown;
  /** File under /assets/pages/ the page runs, e.g. `embed.js`. */
  script: string;
  bodyClass: string;
  /** Markup of the body, already escaped. */
  body: string;
  /** A fixed theme; absent: the script follows the client's preference. */
  theme?: 'light' | 'dark';
  /** Origins the page's map must reach besides this service and the library (those its styles name). */
  connect?: readonly string[];
}

/** Where a page's own files are served: the page scripts and the shared style sheet. */
export const PAGE_ASSET_PREFIX = '/assets/pages/';

export function renderPage(c: Context, spec: PageSpec): Response {
  const nonce = newNonce();
  const pageAsset = (name: string) => escapeHtml(`${spec.base}${PAGE_ASSET_PREFIX}${name}`);
  const theme = spec.theme ? ` data-theme="${spec.theme}"` : '';
  const html = `<!doctype html>
<html lang="en"${theme}>
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${escapeHtml(spec.title)}</title>
<link rel="icon" href="data:,">
${libraryHead(spec.lib, nonce, spec.base)}
<link rel="stylesheet" href="${pageAsset('pages.css')}">
<script type="application/json" id="page-config">${jsonForScript(spec.config)}</script>
<script type="module" src="${pageAsset(spec.script)}"></script>
</head>
<body class="${escapeHtml(spec.bodyClass)}">
${spec.body}
</body>
</html>
`;
  const self = new URL(spec.base).origin;
  const csp = contentSecurityPolicy(spec.lib.mode, nonce, [self, ...(spec.connect ?? [])], self);
  return c.html(html, 200, {
    'Content-Security-Policy': csp,
    'Cache-Control': 'no-cache',
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'strict-origin-when-cross-origin',
  });
}
