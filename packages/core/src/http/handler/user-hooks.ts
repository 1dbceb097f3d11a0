/**
 * @module The user's callbacks as the handler calls them: bounded by `callbackTimeoutMs` (a hook that
 * throws, rejects or hangs gets a documented fallback and a warning), and their results checked (a key
 * that is no string shares the `unkeyed` bucket, a cost that is no valid number is the default cost).
 */
import type { Diagnostics } from '../../diagnostics.js';
import { describeValue } from '../../errors.js';
import { requestCostToMilli } from '../../internal/fixed-point.js';
import type { RequestView } from '../request-view.js';
import { type Bounded, boundedCall, boundedCallWith } from './bounded-call.js';

/** The key of requests whose key function returned no usable key: one shared bucket, never a bypass. */
export const UNKEYED_KEY = 'unkeyed';

export class UserHooks {
  constructor(private readonly hookTimeoutMs: number) {}

  /** A user callback, bounded by callbackTimeoutMs; synchronous results come back without a promise (no extra tick). */
  call<T>(fn: () => T | Promise<T>): Bounded<T> | Promise<Bounded<T>> {
    return boundedCall(fn, this.hookTimeoutMs);
  }

  /** `call` of `fn(a, b)`, without a closure per request. */
  callWith<A, B, T>(fn: (a: A, b: B) => T | Promise<T>, a: A, b: B): Bounded<T> | Promise<Bounded<T>> {
    return boundedCallWith(fn, a, b, this.hookTimeoutMs);
  }

  /** Warns when `r` failed: the hook `name` threw, rejected or timed out, and `fallback` says what happened instead. */
  failed(diagnostics: Diagnostics, name: string, r: Bounded<unknown>, fallback: string): void {
    if (r.ok) return;
    if (r.timedOut) {
      const callbackTimeoutMs = this.hookTimeoutMs;
      diagnostics.warn('WRN_RL_HOOK_TIMEOUT', `${name} did not settle within callbackTimeoutMs (${callbackTimeoutMs} ms); ${fallback}`, {
        hook: name,
        callbackTimeoutMs,
      });
    } else {
      diagnostics.warn('WRN_RL_HOOK_FAILED', `${name} threw or rejected; ${fallback}`, { hook: name, err: r.error });
    }
  }

  /** Warns that hook `name` returned `value` where it must return `expected`, and what happened instead. */
  returned(diagnostics: Diagnostics, name: string, value: unknown, expected: string, fallback: string): void {
    diagnostics.warn('WRN_RL_HOOK_FAILED', `${name} returned something other than ${expected}; ${fallback}`, {
      hook: name,
      received: describeValue(value),
    });
  }

  /** The key a key function returned, or UNKEYED_KEY with a warning. */
  key<Req>(key: unknown, view: RequestView<Req>): string {
    if (typeof key === 'string' && key !== '') return key;
    view.diagnostics.warn(
      'WRN_RL_UNKEYED',
      `the key function returned no non-empty string; such requests share one '${UNKEYED_KEY}' bucket. ` +
        'Return a key for every request, e.g. keys.first(keys.user(fn), keys.ip()).',
      { received: describeValue(key) },
    );
    return UNKEYED_KEY;
  }

  /** The cost a cost function returned, or undefined (the default cost) with a warning. */
  cost(cost: unknown, diagnostics: Diagnostics): number | undefined {
    // A number too large to hold exactly (1e13, Infinity) is kept: the limiter answers it 413, never 1.
    if (typeof cost === 'number' && requestCostToMilli(cost) > 0) return cost;
    diagnostics.warn(
      'WRN_RL_INVALID_COST',
      'the cost function returned something other than a positive multiple of 1/1000; such requests are charged the default cost.',
      { received: describeValue(cost) },
    );
    return undefined;
  }
}
