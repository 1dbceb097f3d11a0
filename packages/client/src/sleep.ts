/**
 * @module Waiting that an AbortSignal can end: the one timer primitive of the package, so fake timers
 * in tests drive every wait.
 */

/**
 * Resolves after `ms` (or as soon as `wake` settles, when given), or rejects with `signal.reason` as soon
 * as the signal aborts. Either way the timer and the listener are gone when it settles.
 */
export function sleep(ms: number, signal?: AbortSignal, wake?: Promise<void>): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const end = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve();
    };
    const timer = setTimeout(end, Math.max(0, ms));
    signal?.addEventListener('abort', onAbort, { once: true });
    wake?.then(end, end);
  });
}
