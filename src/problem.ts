// RFC 9457 problem details: every error answer of the service has this shape (decisions.md). The shape and the
// exception that carries it live below every area, so tiles, spatial queries and sources can refuse a request
// without importing the HTTP layer; src/http/problem.ts turns them into responses.

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
