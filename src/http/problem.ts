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

export function problem(c: Context, status: number, title: string, detail: string, extra: Record<string, unknown> = {}): Response {
  return new Response(JSON.stringify(problemBody(status, title, detail, extra)), {
    status,
    headers: { 'Content-Type': 'application/problem+json' },
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
