// HTTP request metrics and spans, where every request passes: the node:http 'request' listener, in front of the
// tile fast lane, the front's checks and Hono. The route label is the template the access log names (noted by
// the router for each route and by the fast lane for tiles); a request no route answered is UNMATCHED_ROUTE.
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { UNMATCHED_ROUTE } from '../telemetry/labels.js';
import type { Telemetry } from '../telemetry/recorder.js';
import { notedRoute, targetPath } from './access-log.js';

/**
 * Wraps the server's request listener: in-flight count, then on the end of the answer (or the client leaving)
 * the request counter, its duration and its span. `inner` unchanged when telemetry is off.
 */
export function instrumentListener(t: Telemetry, inner: RequestListener): RequestListener {
  if (!t.on) return inner;
  const otel = t.otel;
  return (req: IncomingMessage, res: ServerResponse) => {
    const started = performance.now();
    const method = req.method ?? 'GET';
    const span = otel?.startSpan(method, Date.now());
    t.requestStarted();
    res.once('close', () => {
      const route = notedRoute(res) ?? UNMATCHED_ROUTE;
      // A client that left before any answer: 499, as proxies log it (status_class 4xx).
      const status = res.headersSent ? res.statusCode : 499;
      t.requestDone(route, status, (performance.now() - started) / 1000);
      if (span) otel!.endSpan(span, method, route, targetPath(req.url), status);
    });
    inner(req, res);
  };
}
