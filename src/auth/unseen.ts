// The unseen 404 of a request, kept between the access gate that decides it and the answer written after the rate
// limiter (src/http/access-gate.ts `answerUnseen`). It is not sent by the gate because an unknown id's request is
// counted by the limiter and carries its RateLimit headers like any other; a closed id's must carry the same, or
// the headers alone would tell the two apart (docs/access.md, "Closed means unseen"). The limiter reads the mark
// too: an unseen request spends the cheap budget, whatever the route would have charged for the id it hides.
import type { IncomingMessage } from 'node:http';
import type { Refusal } from './gate.js';

// Only unseen requests are written here; every other request costs one read that finds nothing.
const marks = new WeakMap<IncomingMessage, Refusal>();

export function markUnseen(req: IncomingMessage, answer: Refusal): void {
  marks.set(req, answer);
}

/** The unseen 404 the gate decided for `req`, or undefined. */
export function unseenOf(req: IncomingMessage): Refusal | undefined {
  return marks.get(req);
}
