// Who a request speaks for, once its credentials are checked: the name of its API key or the subject of its JWT
// (never the secret), and the rate class that key or token was given. The access gate records it per request;
// the rate limiter and the usage metrics read it. Requests without credentials have no principal and are limited
// by client address.
import type { IncomingMessage } from 'node:http';

export interface Principal {
  /** The key's configured name, or the JWT's subject: safe to log and to use as a metric label. */
  name: string;
  /** How the request proved it: an API key, or a JWT. */
  via: 'key' | 'jwt';
  /** The rate class (`[rate_limits.classes]`) of the key or token; undefined means the default class. */
  rateClass: string | undefined;
}

const principals = new WeakMap<IncomingMessage, Principal>();

export function setPrincipal(req: IncomingMessage, principal: Principal): void {
  principals.set(req, principal);
}

export function principalOf(req: IncomingMessage): Principal | undefined {
  return principals.get(req);
}
