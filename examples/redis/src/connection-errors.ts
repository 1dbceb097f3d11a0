/**
 * @module The client's connection errors in the example's log: ioredis emits one per reconnect attempt
 * (20 a second with the examples' `retryStrategy`), so each message is logged once until the client is
 * ready again. The limiters say the outage themselves (ERR_RL_STORE_FAILED, once per limiter).
 */
import type { Redis } from 'ioredis';

/** Logs each distinct `'error'` of `client` once, prefixed with `label`, until its next `'ready'`. */
export function logConnectionErrors(client: Redis, label: string): void {
  let last: string | undefined;
  client.on('error', (error: Error) => {
    if (error.message !== last) console.error(`${label}: ${error.message}`);
    last = error.message;
  });
  client.on('ready', () => {
    last = undefined;
  });
}
