// RFC 9457 problem details: every error answer of the service has this shape (decisions.md).
import type { Context } from 'hono';

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  [extension: string]: unknown;
}

export function problemBody(status: number, title: string, detail: string, extra: Record<string, unknown> = {}): Problem {
  return { type: 'about:blank', title, status, detail, ...extra };
}

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

/** Thrown from deep inside a handler to answer with a problem; the app's error handler turns it into a response. */
export class HttpProblem extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly detail: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = 'HttpProblem';
  }
}
