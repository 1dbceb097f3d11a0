/**
 * @module What an admitted request holds while its handler runs: a load-shedder ticket and concurrency
 * leases. They go back once the handler is done with the response (response-done.ts), or at once when
 * the request was answered without reaching the handler; the leases are renewed meanwhile.
 */
import type { ShedTicket } from '../../shedding/load-shedder.js';
import type { Decision } from '../../types.js';
import type { RawResponse, RunOutcome } from './handler-types.js';
import { type DoneResponse, onHandlerSettled, onResponseDone } from './response-done.js';

export class ResponseHolds {
  /** Releases waiting for their handler, by response, for `settled`. */
  private readonly holding = new WeakMap<object, (finished: boolean) => void>();

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
    // Renewed while the handler runs, also after the client left (the slot is not handed to a new request
    // while the abandoned handler still runs), until the lease says no more: `maxLeaseMs` after the grant
    // renewals stop, so a handler that never answers (an async throw on Express 4) frees its key by then.
    let renewal: ReturnType<typeof setInterval> | undefined;
    if (renew !== undefined && outcome === 'next' && this.renewEveryMs > 0) {
      renewal = setInterval(() => {
        if (!renew()) clearInterval(renewal);
      }, this.renewEveryMs);
      renewal.unref();
    }
    const release = (finished: boolean): void => {
      if (renewal !== undefined) clearInterval(renewal);
      ticket?.release(finished && admitted);
      lease?.();
    };
    // The handler runs only on 'next'; otherwise nothing holds the slot.
    if (outcome === 'next') this.hold(response, release);
    else release(false);
  }

  /** The handler of `response` is done (Koa's `await next()`): what it holds goes back now if the client already left. */
  settled(response: object): void {
    const release = this.holding.get(response);
    if (release !== undefined) onHandlerSettled(response as DoneResponse, release);
  }

  private hold(response: RawResponse, release: (finished: boolean) => void): void {
    let done = false;
    const once = (finished: boolean): void => {
      if (done) return;
      done = true;
      this.holding.delete(response);
      release(finished);
    };
    this.holding.set(response, once);
    // ServerResponse has 'finish', end() and writableFinished besides what RawResponse declares.
    onResponseDone(response as unknown as DoneResponse, once);
  }
}
