// Which budget a request spends: read from the declaration of the route it is routed to
// (src/routes/public-routes.ts, where the rule and its reasons are; docs/rate-limits.md has the table). A request
// no route matches is cheap: it is answered 404 without work, and so is one the access gate found to name an id
// that is closed or absent (auth/unseen.ts): charged what the route would charge for the closed id, it would tell
// a closed PostGIS table (expensive) from an unknown id (cheap) by the RateLimit header.
import type { IncomingMessage } from 'node:http';
import { unseenOf } from '../auth/unseen.js';
import type { Budget } from '../routes/declaration.js';
import type { RouteMatch } from '../routes/match.js';
import { matchPublic, routeOf } from '../routes/request-route.js';
import type { AppState } from '../state/app-state.js';

export type Kind = Budget;

/** The budget of a matched route under `state`. */
export function budgetOf(state: AppState, m: RouteMatch | undefined): Kind {
  if (!m) return 'cheap';
  const b = m.route.budget;
  return typeof b === 'string' ? b : b(state, m);
}

/** The budget `method target` spends under `state`. */
export function classify(state: AppState, method: string, target: string): Kind {
  return budgetOf(state, matchPublic(method, target));
}

/** The budget a node:http request spends (its route matched once, shared with the access gate). */
export function requestBudget(state: AppState, req: IncomingMessage): Kind {
  return unseenOf(req) ? 'cheap' : budgetOf(state, routeOf(req));
}
