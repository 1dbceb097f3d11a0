/**
 * @module Leaky-bucket shaping: hold an admitted request for `decision.delayMs` before it proceeds,
 * and give up the wait as soon as the client goes away, so a queue of abandoned requests never runs
 * their handlers. The longest wait a policy can impose is bounded by its `burst`: about
 * `(burst - 1 - delayAfter) * windowMs / limit` milliseconds; choose `burst` with that in mind.
 */

/** The part of Node's `ServerResponse` the wait needs: its 'close' event and whether it has closed. */
export interface ClosableResponse {
  readonly closed?: boolean;
  readonly destroyed?: boolean;
  once(event: 'close', listener: () => void): unknown;
  off(event: 'close', listener: () => void): unknown;
}

/**
 * Resolves `true` after `ms`, or `false` as soon as `response` closes first (the client disconnected);
 * the timer is then cleared. Resolves `true` at once when `ms <= 0`.
 */
export function waitUnlessClosed(ms: number, response: ClosableResponse): Promise<boolean> {
  if (!(ms > 0)) return Promise.resolve(true);
  if (response.closed === true || response.destroyed === true) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onClose = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      response.off('close', onClose);
      resolve(true);
    }, ms);
    response.once('close', onClose);
  });
}
