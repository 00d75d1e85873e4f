// The metrics pull listener on `[telemetry] scrape_bind`: `{scrape_path}` in the text exposition format and
// `/metrics/health`. Never on the main listener. With several worker processes it runs in the primary and sums
// what every worker reports (prom-client's AggregatorRegistry over the node:cluster channel).
import { createServer, type Server } from 'node:http';
import { AggregatorRegistry, Registry } from 'prom-client';
import { listenAt, parseBind } from '../config/bind.js';
import type { TelemetryConfig } from '../config/schema.js';
import type { Logger } from '../log.js';
import { registerNotifyMetrics } from './expire-notify.js';

/** Set in the environment once the listener is bound, so that worker processes (forked after) report it in /ping. */
export const SCRAPE_ACTIVE_ENV = 'TILESERVER_TS_SCRAPE_LISTENER';

export interface ScrapeListener {
  address: { host: string; port: number };
  close(): Promise<void>;
}

/**
 * Binds the pull listener when `scrape_bind` is set (else resolves undefined). `metrics` gives the text to
 * serve: this process's registry alone, or the cluster's sum (`clusterMetrics`). Rejects with the listen error.
 */
export async function startScrapeListener(cfg: TelemetryConfig, metrics: () => Promise<string>, log: Logger): Promise<ScrapeListener | undefined> {
  if (cfg.scrape_bind === undefined) return undefined;
  const parsed = parseBind(cfg.scrape_bind);
  if (!parsed.ok) throw new Error(`[telemetry] scrape_bind: ${parsed.problem}`);
  const path = cfg.scrape_path;

  const server: Server = createServer((req, res) => {
    const q = (req.url ?? '/').indexOf('?');
    const reqPath = q < 0 ? (req.url ?? '/') : req.url!.slice(0, q);
    const problem = (status: number, title: string, detail: string, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/problem+json', ...headers });
      res.end(JSON.stringify({ type: 'about:blank', title, status, detail }));
    };
    if (reqPath !== path && reqPath !== '/metrics/health') return problem(404, 'Not found', `the metrics listener serves ${path} and /metrics/health, not ${reqPath}`);
    if (req.method !== 'GET' && req.method !== 'HEAD') return problem(405, 'Method not allowed', `${req.method} is not allowed here; use GET`, { allow: 'GET, HEAD' });
    if (reqPath === '/metrics/health' && path !== '/metrics/health') {
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
      return res.end('OK');
    }
    metrics().then(
      (text) => {
        res.writeHead(200, { 'content-type': Registry.PROMETHEUS_CONTENT_TYPE, 'cache-control': 'no-store' });
        res.end(text);
      },
      (err: Error) => {
        // A worker that does not answer in time (prom-client waits 5 s): say so rather than serve a partial sum.
        log.warn({ err: err.message }, 'metrics scrape failed');
        problem(503, 'Metrics unavailable', `the worker processes did not all report their metrics: ${err.message}`, { 'retry-after': '1' });
      },
    );
  });

  const port = await listenAt(server, parsed.address);
  process.env[SCRAPE_ACTIVE_ENV] = '1';
  log.info({ host: parsed.address.host, port, path }, 'metrics listener up');
  return {
    address: { host: parsed.address.host, port },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/**
 * The cluster's sum, for the primary: every worker's registry, summed by metric and labels, followed by the
 * primary's own counters (the database listener runs there alone; no worker has those metrics).
 */
export function clusterMetrics(): () => Promise<string> {
  const aggregator = new AggregatorRegistry();
  const own = new Registry();
  registerNotifyMetrics([own]);
  return async () => `${await aggregator.clusterMetrics()}\n${await own.metrics()}`;
}

/** Whether this process's metrics listener (or its primary's) is bound. */
export function scrapeListenerActive(): boolean {
  return process.env[SCRAPE_ACTIVE_ENV] === '1';
}
