// Problem responses (RFC 9457) for route handlers; the body shape and HttpProblem are in src/problem.ts.
import type { Context } from 'hono';
import { problemBody } from '../problem.js';

/**
 * A problem response. Extra headers (Retry-After) go in at construction: @hono/node-server's lightweight
 * Response does not carry headers set on it afterwards to the wire.
 */
export function problem(
  c: Context,
  status: number,
  title: string,
  detail: string,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify(problemBody(status, title, detail, extra)), {
    status,
    headers: { 'Content-Type': 'application/problem+json', ...headers },
  });
}
