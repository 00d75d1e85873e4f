// Header names are case-insensitive (RFC 9110, 5.1), and the Fetch API's Headers, which Hono answers with, spell
// every name in lower case. Some clients compare them exactly all the same: QGIS's OGC API - Features provider
// before 3.44 (Debian 13 ships 3.40) reads the id of a feature it has just created only from a header spelled
// `Location` (qgis/QGIS#61729), and reports the create as failed when it finds `location`.
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';

/**
 * Makes `res` send its Location header under that spelling. Only the answers to requests that may create
 * something need it (POST), so GET and HEAD, the tile traffic, pay nothing.
 */
export function spellLocation(res: ServerResponse): void {
  const writeHead = res.writeHead;
  res.writeHead = function (this: ServerResponse, ...args: unknown[]) {
    // writeHead(status, headers) or writeHead(status, message, headers); headers as an object (Hono's adapter) or
    // a flat list, which keeps whatever spelling it was given.
    const headers = args.at(-1);
    if (headers !== null && typeof headers === 'object' && !Array.isArray(headers) && 'location' in headers) {
      const h = headers as OutgoingHttpHeaders;
      h.Location = h.location;
      delete h.location;
    }
    return (writeHead as (...a: unknown[]) => ServerResponse).apply(this, args);
  } as typeof res.writeHead;
}
