/**
 * @module Leaky bucket as a shaper (nginx `limit_req`): the GCRA admission rule, plus `delayMs`, how long
 * an admitted request waits before it proceeds so that requests leave at `limit` per `windowMs`.
 * `burst` is how many may arrive at once (nginx `burst=N` is our `burst: N + 1`); the first request of
 * an idle key waits 0, the k-th simultaneous one waits (k - 1) * T. `delayAfter` (nginx `delay=`) lets
 * that many excess requests through without waiting.
 *
 * Pro: smooth output for partners with hard quotas; the queue is bounded by `burst`.
 * Con: trades latency for smoothness: never put it in front of clients that time out quickly.
 *
 * State: the GCRA timestamp (see gcra.ts); the delay is the debt found before the request, in ms.
 */

import { commitGcra, consumeGcra, evaluateGcra, gcraExpiresAt, gcraPosition, initGcra } from './gcra.js';
import type { AlgorithmKernel } from './kernel.js';

export const leakyBucket: AlgorithmKernel = {
  id: 'leaky-bucket',
  stride: 6,
  init: initGcra,
  evaluate(t, slot, now, cost, p, out) {
    evaluateGcra(t, slot, now, cost, p, out, p.delayTicks);
  },
  commit: commitGcra,
  consume(t, slot, now, cost, p, out) {
    consumeGcra(t, slot, now, cost, p, out, p.delayTicks);
  },
  expiresAt: gcraExpiresAt,
  position: gcraPosition,
};
