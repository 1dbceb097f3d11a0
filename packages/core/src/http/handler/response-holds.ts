/**
 * @module What an admitted request holds while its handler runs: a load-shedder ticket and concurrency
 * leases. They go back once the handler is done with the response (response-done.ts), or at once when
 * the request was answered without reaching the handler; the leases are renewed meanwhile.
 */
import type { ShedTicket } from '../../shedding/load-shedder.js';
import type { Decision } from '../../types.js';
import type { RawResponse, RunOutcome } from './handler-types.js';
import { type DoneResponse, onHandlerSettled, onResponseDone } from './response-done.js';

/**
 * How long a shed slot with no lease stays taken after its connection closed with the response not
 * ended (a handler that never ends it, or destroyed it itself): 60 s. A lease is bounded by its renewals
 * (`maxLeaseMs`) instead.
 */
export const ABANDONED_HOLD_MS = 60_000;

/** What one held response gives back, and how long it may wait after its connection closed. */
interface Held {
  readonly release: (finished: boolean) => void;
  readonly maxHoldMs: number | undefined;
}

export class ResponseHolds {
  /** Releases waiting for their handler, by response, for `settled`. */
  private readonly holding = new WeakMap<object, Held>();

  /** `renewEveryMs`: half the shortest lease of the limiter's concurrency policies (0: none). */
  constructor(private readonly renewEveryMs: number) {}

  /**
   * Keeps `ticket` and `decision`'s leases until the handler is done with `response` (`outcome` 'next'),
   * or gives them back now. `admitted`: the request passed (a refusal says nothing of the server's latency).
   */
  keep(
    response: RawResponse,
    outcome: RunOutcome,
    ticket: ShedTicket | undefined,
    decision: Decision | undefined,
    admitted: boolean,
  ): void {
    const lease = decision?.release;
    const renew = decision?.renew;
    if (ticket === undefined && lease === undefined) return;
    let renewal: ReturnType<typeof setInterval> | undefined;
    const release = (finished: boolean): void => {
      if (renewal !== undefined) clearInterval(renewal);
      ticket?.release(finished && admitted);
      lease?.();
    };
    // The handler runs only on 'next'; otherwise nothing holds the slot.
    if (outcome !== 'next') {
      release(false);
      return;
    }
    const held = this.hold(response, release, lease === undefined ? ABANDONED_HOLD_MS : undefined);
    // Renewed while the handler runs, also after the client left (the slot is not handed to a new request
    // while the abandoned handler still runs), until the lease says no more: `maxLeaseMs` after the grant
    // renewals stop, and the hold ends with them, so a handler that never answers (an async throw on
    // Express 4) frees its key, and its shed slot, by then.
    if (held !== undefined && renew !== undefined && this.renewEveryMs > 0) {
      const leaseMs = 2 * this.renewEveryMs;
      renewal = setInterval(() => {
        if (renew()) return;
        // Renewals are over (maxLeaseMs) or the lease is gone: it ends by itself at its deadline; the hold
        // (the shed slot too) ends a lease time later (the shortest policy's), not at once.
        clearInterval(renewal);
        setTimeout(() => held(false), leaseMs).unref();
      }, this.renewEveryMs);
      renewal.unref();
    }
  }

  /** The handler of `response` is done (Koa's `await next()`): what it holds goes back now if the client already left. */
  settled(response: object): void {
    const held = this.holding.get(response);
    if (held !== undefined) onHandlerSettled(response as DoneResponse, held.release, held.maxHoldMs);
  }

  /** Holds `release` until the handler is done with `response`; returns the once-only release, or undefined when that was at once. */
  private hold(
    response: RawResponse,
    release: (finished: boolean) => void,
    maxHoldMs: number | undefined,
  ): ((finished: boolean) => void) | undefined {
    let done = false;
    const once = (finished: boolean): void => {
      if (done) return;
      done = true;
      this.holding.delete(response);
      release(finished);
    };
    this.holding.set(response, { release: once, maxHoldMs });
    // ServerResponse has 'finish', end() and writableFinished besides what RawResponse declares.
    onResponseDone(response as unknown as DoneResponse, once, maxHoldMs);
    return done ? undefined : once;
  }
}
