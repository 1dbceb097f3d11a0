/**
 * @module The reason phrase of a response the limiter answers (a 429, 413, 503), written with its status:
 * Node keeps a `statusMessage` an earlier middleware set, so a 429 went out as `429 All Good` (Express,
 * Fastify; Koa's `ctx.status` setter writes it already).
 */
import { STATUS_CODES } from 'node:http';

/** Sets `status`'s own reason phrase on `res` (an `http.ServerResponse`); HTTP/2 has none, and setting one only warns. */
export function setReasonPhrase(res: { statusMessage: string }, status: number, httpVersionMajor: number): void {
  if (httpVersionMajor < 2) res.statusMessage = STATUS_CODES[status] ?? '';
}
