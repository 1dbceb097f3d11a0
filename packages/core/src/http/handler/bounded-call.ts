/**
 * @module `boundedCall`: runs a user callback (key, cost, skip, onLimited) so that whatever it does
 * (throw, reject, never settle) the request gets an answer. A synchronous result takes no extra tick;
 * a promise gets `timeoutMs` to settle. A promise that settles late is observed, so its rejection can
 * never become an unhandled rejection.
 */
import { isPromiseLike } from '../../internal/promise.js';

export type Bounded<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly timedOut: boolean; readonly error: unknown };

/** Calls `fn()`; a throw or rejection is `{ ok: false, timedOut: false }`, a wait past `timeoutMs` `{ ok: false, timedOut: true }`. */
export function boundedCall<T>(fn: () => T | Promise<T>, timeoutMs: number): Bounded<T> | Promise<Bounded<T>> {
  let out: T | Promise<T>;
  let pending: boolean;
  try {
    out = fn();
    // Inside the try: a `then` getter that throws is the callback's throw, not the handler's.
    pending = isPromiseLike(out);
  } catch (error) {
    return { ok: false, timedOut: false, error };
  }
  return pending ? bounded(out, timeoutMs) : { ok: true, value: out as T };
}

/** `boundedCall` of `fn(a, b)`: the same, without a closure per call on the request path. */
export function boundedCallWith<A, B, T>(
  fn: (a: A, b: B) => T | Promise<T>,
  a: A,
  b: B,
  timeoutMs: number,
): Bounded<T> | Promise<Bounded<T>> {
  let out: T | Promise<T>;
  let pending: boolean;
  try {
    out = fn(a, b);
    pending = isPromiseLike(out);
  } catch (error) {
    return { ok: false, timedOut: false, error };
  }
  return pending ? bounded(out, timeoutMs) : { ok: true, value: out as T };
}

function bounded<T>(pending: T | Promise<T>, timeoutMs: number): Promise<Bounded<T>> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve({ ok: false, timedOut: true, error: undefined }), timeoutMs);
    timer.unref?.();
    Promise.resolve(pending).then(
      (value) => {
        clearTimeout(timer);
        resolve({ ok: true, value });
      },
      (error: unknown) => {
        clearTimeout(timer);
        resolve({ ok: false, timedOut: false, error });
      },
    );
  });
}
