/**
 * @module One candidate as a real limiter on its own MemoryStore, with a fast path. `createLimiter`
 * builds a `Decision` object per call (headers need it; a replay does not): at half a million lines a
 * second with several candidates that is most of the time. The store it decides on is the one behind
 * the limiter, so the fast path hands the same request to the same `store.apply` with the same plan
 * (caught through the Store `prepare` hook) and reads the verdict from the store's result: the same
 * decision, the same state, by construction (and proven by candidate-limiter.test.ts against
 * `createLimiter`). Requests the fast path does not cover (a cost other than 1, a key the limiter would
 * hash first) go through `limiter.decide` on the same store.
 */
import { type Clock, createLimiter, type Logger, MemoryStore, type PolicyOptions, type Store, type StorePlan } from '@tollgate/core';
import { isPlainKey, resultCharged, resultDelayMs, resultExceeds } from '@tollgate/core/adapter';

/** One request in the store's milli-units. */
const ONE = 1000;

export interface CandidateVerdict {
  allowed: boolean;
  /** Shaped delay of an admitted request (leaky-bucket), ms; 0 otherwise. */
  delayMs: number;
  /** Rejected because the cost can never fit. */
  exceeds: boolean;
}

export interface CandidateLimiter {
  /** Decides `key` with `cost` at the clock's time; the verdict is in `verdict` until the next call. */
  decide(key: string, cost: number): void;
  readonly verdict: CandidateVerdict;
  readonly store: MemoryStore;
}

export function createCandidateLimiter(
  policies: readonly PolicyOptions[],
  clock: Clock,
  maxKeys: number,
  logger: Logger,
): CandidateLimiter {
  const store = new MemoryStore({ maxKeys, sweepIntervalMs: 0 });
  let captured: StorePlan | undefined;
  const spy: Store = {
    kind: 'memory',
    prepare(plan) {
      captured = plan;
    },
    apply: (key, plan, cost, now) => store.apply(key, plan, cost, now),
    reset: (key, plan) => store.reset(key, plan),
  };
  const limiter = createLimiter({ policies, store: spy, clock, logger });
  if (captured === undefined) throw new Error('createLimiter did not prepare its plan on the store');
  const plan: StorePlan = captured;
  const count = plan.policies.length;
  const verdict: CandidateVerdict = { allowed: false, delayMs: 0, exceeds: false };
  const options = { cost: 1 };
  return {
    verdict,
    store,
    decide(key, cost) {
      // A key the limiter stores under its digest (too long, `sha256:`-prefixed, not well-formed) goes
      // through the limiter, as every other request for it: the same bucket whatever its cost.
      if (cost !== 1 || key.length === 0 || !isPlainKey(key)) {
        options.cost = cost;
        const d = limiter.decide(key, options);
        if (!('allowed' in d)) throw new Error('a MemoryStore limiter answered asynchronously');
        verdict.allowed = d.allowed;
        verdict.delayMs = d.delayMs;
        verdict.exceeds = d.reason === 'cost-exceeds-capacity';
        return;
      }
      const r = store.apply(key, plan, ONE, Math.floor(clock()));
      // One group (no shadow policies): every policy is charged, or none is.
      const charged = resultCharged(r, 0);
      verdict.allowed = charged;
      let delay = 0;
      let exceeds = false;
      for (let i = 0; i < count; i++) {
        if (charged) delay = Math.max(delay, resultDelayMs(r, i));
        else if (resultExceeds(r, i)) exceeds = true;
      }
      verdict.delayMs = delay;
      verdict.exceeds = exceeds;
    },
  };
}
