// HEAD with the headers GET would send. Hono answers HEAD by running the GET handler and dropping the body;
// the Content-Length that @hono/node-server computes from a body is then lost, and clients that use HEAD to
// learn a size (download managers, caches, `curl -I`) get none. The GET body exists at this point anyway, so
// measuring it costs one read.
import type { MiddlewareHandler } from 'hono';

export function headContentLength(): MiddlewareHandler {
  return async (c, next) => {
    await next();
    if (c.req.method !== 'HEAD' || c.res.headers.has('content-length') || c.res.body === null) return;
    const length = (await c.res.clone().arrayBuffer()).byteLength;
    const headers = new Headers(c.res.headers);
    headers.set('Content-Length', String(length));
    c.res = new Response(null, { status: c.res.status, statusText: c.res.statusText, headers });
  };
}
