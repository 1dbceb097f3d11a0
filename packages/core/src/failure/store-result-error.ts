/**
 * @module The error a check's failure path carries when the store answered on time with something that
 * is not a result (a custom store's bug: `undefined`, an object, too few numbers). Before, reading it
 * threw a TypeError out of `check()`, and the adapters let the request through without a decision. It is
 * an error about that call's answer, not the node's health (as RedisStore's ERR_RL_STORE_REPLY): the
 * request is answered by `onStoreError` and the line is ERR_RL_STORE_KEY_FAILED.
 */
import { describeValue, seeDocs } from '../errors.js';
import { RESULT_STRIDE, type StorePlan, type StoreResult } from '../stores/store.js';

export class StoreResultError extends Error {
  readonly code = 'ERR_RL_STORE_RESULT';

  constructor(kind: string, got: unknown, expected: number) {
    super(
      `ERR_RL_STORE_RESULT: the '${kind}' store answered ${describeValue(got)}, not a result of at least ${expected} numbers. ${seeDocs('ERR_RL_STORE_RESULT')}`,
    );
    this.name = 'StoreResultError';
  }
}

/** Whether `r` has the shape of an answer of `n` numbers (an array-like at least that long); the numbers are the store's. */
export function hasLength(r: unknown, n: number): r is StoreResult {
  return typeof r === 'object' && r !== null && (r as StoreResult).length >= n;
}

/** Whether `r` has the shape of `plan`'s result. */
export function isResultOf(r: unknown, plan: StorePlan): r is StoreResult {
  return hasLength(r, plan.policies.length * RESULT_STRIDE);
}
