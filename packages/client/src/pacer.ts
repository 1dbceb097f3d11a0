/**
 * @module Pacing from the quota a server advertises: slow down before the quota runs out instead of
 * after. Per origin, the last response's `remaining` and reset time are kept and counted down locally
 * as requests leave (so concurrent calls do not all spend the same last unit). A response's `remaining`
 * was counted when the server took its request: the attempts still in flight then (`sent`, not yet
 * `landed`) are taken off it, since the server counts them after (twenty calls at once over a quota of
 * ten would otherwise see the first response's "8 left" and send eight more into a spent quota). A
 * server that counted some of them already makes this cautious, never generous, until their responses
 * come. While more than `paceBelow` of the quota is left, nothing waits. Below that, the requests left are spread evenly over
 * the time to the reset: one interval apart, the interval fixed when pacing starts (each request's slot
 * is counted from the previous one's, not from when it asked).
 *
 * With nothing left, requests wait for the reset, and then not all at once (draft-11 section 8.5's
 * thundering herd: twenty callers waiting on a quota of five would all be sent at the reset and fifteen
 * refused): the first request after the reset is a probe, sent alone; the others wait until its
 * response brings the new numbers (and are then paced by them), or until the probe's attempt ends
 * without numbers (nothing is known: nothing waits), or for at most {@link PROBE_WAIT_MS}, after which the
 * next request probes. A reset passed with no request waiting leaves stale numbers: the next request
 * probes the same way.
 *
 * An origin not heard from yet is treated as one whose reset just passed: its first request probes
 * alone, the others wait for its numbers (a first burst of thirty to a quota of ten sent at once got
 * twenty 429s, which then retried). An origin whose responses bring no numbers is remembered as heard
 * (up to `maxOrigins`), so only its first burst waits for one answer.
 */
import type { RateLimitSignal } from './rate-limit-signal.js';

/** How long requests wait for a probe's answer before the next one probes, ms. */
export const PROBE_WAIT_MS = 1000;

/** What `reserve` grants a request. */
export interface Reservation {
  /** Granted: leave after `waitMs`. Not granted: ask again after `waitMs`, or once `renewed` settles. */
  readonly granted: boolean;
  readonly waitMs: number;
  /** Granted as the probe of a quota whose reset passed: tell `settled` when its attempt is over. */
  readonly probe: boolean;
  /** Settles when the origin's numbers change (a response, or the probe's end); with `granted` false. */
  readonly renewed: Promise<void> | undefined;
}

interface OriginQuota {
  /** `attempts` when these numbers were observed: the attempts sent after them are numbered higher. */
  readonly observedAt: number;
  remaining: number;
  resetAt: number;
  limit: number | undefined;
  /** The earliest time the next paced request may leave. */
  nextAt: number;
  /** The probe in flight after the reset: until when the others wait for it. */
  probeUntil: number | undefined;
  /** Resolves the waiters' `renewed`; created by the first request that waits. */
  renewed: { readonly promise: Promise<void>; readonly resolve: () => void } | undefined;
}

const GRANTED: Reservation = { granted: true, waitMs: 0, probe: false, renewed: undefined };

export class Pacer {
  private readonly origins = new Map<string, OriginQuota>();
  /** Attempts in flight per origin (an entry only while some are). */
  private readonly flying = new Map<string, number>();
  /** Origins that answered, numbers or not (bounded as `origins`): the others' first request probes. */
  private readonly heard = new Set<string>();

  constructor(
    private readonly paceBelow: number,
    private readonly clock: () => number,
    private readonly maxOrigins = 1000,
  ) {}

  /** Attempts sent so far, to every origin: an attempt's number is this before it leaves. */
  attempts = 0;

  /** An attempt to `origin` leaves (every attempt, paced or not, retries too). */
  sent(origin: string): void {
    this.attempts += 1;
    this.flying.set(origin, (this.flying.get(origin) ?? 0) + 1);
  }

  /** An attempt to `origin` ended (a response, or none), before its response is observed. */
  landed(origin: string): void {
    const n = (this.flying.get(origin) ?? 0) - 1;
    if (n > 0) this.flying.set(origin, n);
    else this.flying.delete(origin);
  }

  /**
   * Records what a response said about `origin`'s quota (less the attempts still in flight); wakes the
   * requests waiting for new numbers. A response with `Retry-After` but no quota numbers (nginx
   * `limit_req`, many CDNs) says none is left until then.
   */
  observe(origin: string, signal: RateLimitSignal): void {
    if (signal.remaining === undefined || signal.resetMs === undefined) {
      if (signal.retryAfterMs === undefined) return;
      this.observe(origin, { ...signal, remaining: 0, resetMs: signal.retryAfterMs });
      return;
    }
    const now = this.clock();
    const previous = this.origins.get(origin);
    this.hear(origin);
    this.keep(origin, {
      observedAt: this.attempts,
      remaining: Math.max(0, signal.remaining - (this.flying.get(origin) ?? 0)),
      resetAt: now + signal.resetMs,
      limit: signal.limit,
      nextAt: previous?.nextAt ?? now,
      probeUntil: undefined,
      renewed: undefined,
    });
    previous?.renewed?.resolve();
  }

  /** Sets `origin`'s quota, forgetting the oldest origin's when `maxOrigins` are kept. */
  private keep(origin: string, q: OriginQuota): void {
    if (!this.origins.has(origin) && this.origins.size >= this.maxOrigins) {
      const oldest = this.origins.keys().next().value;
      if (oldest !== undefined) this.origins.delete(oldest);
    }
    this.origins.set(origin, q);
  }

  /** `origin` answered: its later first requests do not probe. */
  private hear(origin: string): void {
    if (this.heard.has(origin)) return;
    if (this.heard.size >= this.maxOrigins) {
      const oldest = this.heard.values().next().value;
      if (oldest !== undefined) this.heard.delete(oldest);
    }
    this.heard.add(origin);
  }

  /**
   * A response to `origin`, to the attempt numbered `attempt` (`attempts` before it left), that was not
   * refused and named no quota or wait: if `origin` was held at nothing left (a `Retry-After` beyond
   * `maxDelayMs`, or one so large it never ends) since before that attempt left, the server took a
   * request after saying so, and that is
   * forgotten; a quota with numbers left is kept, and so is one observed after the attempt left (a 200
   * on its way when the 429 came says nothing of it). Without this a single absurd `Retry-After` held
   * every later call `maxDelayMs` for ever, since only numbers replaced it.
   */
  answered(origin: string, attempt: number): void {
    this.hear(origin);
    const q = this.origins.get(origin);
    if (q === undefined || q.remaining >= 1 || attempt < q.observedAt) return;
    this.origins.delete(origin);
    q.renewed?.resolve();
  }

  /**
   * The probe's attempt for `origin` is over: when its response brought no numbers (or none came),
   * nothing is known and nothing waits; the origin counts as heard.
   */
  settled(origin: string): void {
    this.hear(origin);
    const q = this.origins.get(origin);
    if (q === undefined || q.probeUntil === undefined) return;
    this.origins.delete(origin);
    q.renewed?.resolve();
  }

  /** What a request to `origin` may do now, reserving its unit of the quota when granted. */
  reserve(origin: string): Reservation {
    const q = this.origins.get(origin);
    if (q === undefined) return this.heard.has(origin) ? GRANTED : this.firstContact(origin);
    const now = this.clock();
    if (now >= q.resetAt) return this.afterReset(q, now);
    if (q.remaining < 1) return this.waitFor(q, q.resetAt - now);
    const threshold = q.limit === undefined ? 1 : Math.max(1, Math.floor(q.limit * this.paceBelow));
    q.remaining -= 1;
    if (q.remaining + 1 > threshold) return GRANTED;
    const at = Math.max(now, q.nextAt);
    q.nextAt = at + (q.resetAt - at) / (q.remaining + 1);
    return { granted: true, waitMs: Math.ceil(at - now), probe: false, renewed: undefined };
  }

  /** An origin not heard from: as if its reset just passed, nothing known of what is left (the first request probes). */
  private firstContact(origin: string): Reservation {
    const now = this.clock();
    const q: OriginQuota = {
      observedAt: this.attempts,
      remaining: 0,
      resetAt: now,
      limit: undefined,
      nextAt: now,
      probeUntil: undefined,
      renewed: undefined,
    };
    this.keep(origin, q);
    return this.afterReset(q, now);
  }

  /** Past the reset: the first request probes; the others wait for its answer, at most PROBE_WAIT_MS. */
  private afterReset(q: OriginQuota, now: number): Reservation {
    if (q.probeUntil === undefined || now >= q.probeUntil) {
      q.probeUntil = now + PROBE_WAIT_MS;
      return { granted: true, waitMs: 0, probe: true, renewed: undefined };
    }
    return this.waitFor(q, q.probeUntil - now);
  }

  private waitFor(q: OriginQuota, waitMs: number): Reservation {
    if (q.renewed === undefined) {
      let resolve: () => void = () => undefined;
      const promise = new Promise<void>((r) => {
        resolve = r;
      });
      q.renewed = { promise, resolve };
    }
    return { granted: false, waitMs, probe: false, renewed: q.renewed.promise };
  }
}
