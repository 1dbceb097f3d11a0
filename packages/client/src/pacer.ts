/**
 * @module Pacing from the quota a server advertises: slow down before the quota runs out instead of
 * after. Per origin, the last response's `remaining` and reset time are kept and counted down locally
 * as requests leave (so concurrent calls do not all spend the same last unit). While at least
 * `paceBelow` of the quota is left, nothing waits. Below that, the requests left are spread evenly over
 * the time to the reset; with nothing left, a request waits for the reset. When the reset has passed,
 * the numbers are stale and nothing waits until the next response brings new ones.
 */
import type { RateLimitSignal } from './rate-limit-signal.js';

interface OriginQuota {
  remaining: number;
  resetAt: number;
  limit: number | undefined;
  /** The earliest time the next paced request may leave. */
  nextAt: number;
}

export class Pacer {
  private readonly origins = new Map<string, OriginQuota>();

  constructor(
    private readonly paceBelow: number,
    private readonly clock: () => number,
    private readonly maxOrigins = 1000,
  ) {}

  /** Records what a response said about `origin`'s quota. */
  observe(origin: string, signal: RateLimitSignal): void {
    if (signal.remaining === undefined || signal.resetMs === undefined) return;
    const now = this.clock();
    const previous = this.origins.get(origin);
    if (previous === undefined && this.origins.size >= this.maxOrigins) {
      const oldest = this.origins.keys().next().value;
      if (oldest !== undefined) this.origins.delete(oldest);
    }
    this.origins.set(origin, {
      remaining: signal.remaining,
      resetAt: now + signal.resetMs,
      limit: signal.limit,
      nextAt: previous?.nextAt ?? now,
    });
  }

  /** How long a request to `origin` should wait before it leaves, reserving its unit of the quota. */
  reserve(origin: string): number {
    const q = this.origins.get(origin);
    if (q === undefined) return 0;
    const now = this.clock();
    if (now >= q.resetAt) {
      this.origins.delete(origin);
      return 0;
    }
    if (q.remaining < 1) {
      // Nothing left: wait for the reset, then the numbers are stale and the next response renews them.
      return q.resetAt - now;
    }
    const threshold = q.limit === undefined ? 1 : Math.max(1, Math.floor(q.limit * this.paceBelow));
    q.remaining -= 1;
    if (q.remaining + 1 > threshold) return 0;
    const interval = (q.resetAt - now) / (q.remaining + 1);
    const at = Math.max(now, q.nextAt);
    q.nextAt = at + interval;
    return Math.ceil(at - now);
  }
}
