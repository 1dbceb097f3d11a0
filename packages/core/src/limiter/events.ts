/**
 * @module The limiter's events (`limiter.on`): listeners by event, called in order; a listener that
 * throws or rejects is logged, never thrown into the decision that emitted.
 */
import { codedError, describeValue } from '../errors.js';
import { catchRejection } from '../internal/rejection.js';
import { type Logger, safeLog } from '../logging.js';
import type { LimiterEvents } from './limiter.js';

type Listener<E extends keyof LimiterEvents> = (payload: LimiterEvents[E]) => void;

export class LimiterEventHub {
  private readonly listeners: { [E in keyof LimiterEvents]: Set<Listener<E>> } = {
    'store-error': new Set(),
    breaker: new Set(),
  };

  constructor(private readonly logger: Logger) {}

  /** Subscribes `listener` to `event`; returns the function that unsubscribes. Throws ERR_RL_INVALID_EVENT for an event the limiter has not, or a listener that is no function. */
  on<E extends keyof LimiterEvents>(event: E, listener: Listener<E>): () => void {
    const set = Object.hasOwn(this.listeners, event) ? (this.listeners[event] as Set<Listener<E>>) : undefined;
    if (set === undefined || typeof listener !== 'function') {
      const why = set === undefined ? `no event ${describeValue(event)}` : `a listener that is no function, ${describeValue(listener)}`;
      throw codedError(TypeError, 'ERR_RL_INVALID_EVENT', `limiter.on() takes 'store-error' or 'breaker' and a function; received ${why}`);
    }
    set.add(listener);
    return () => {
      set.delete(listener);
    };
  }

  /** Calls every listener of `event` with `payload`. */
  emit<E extends keyof LimiterEvents>(event: E, payload: LimiterEvents[E]): void {
    for (const listener of this.listeners[event] as Set<Listener<E>>) {
      const threw = (error: unknown): void => {
        safeLog(
          this.logger,
          'error',
          { code: 'ERR_RL_LISTENER_THREW', event, err: error },
          'ERR_RL_LISTENER_THREW: an event listener threw or rejected',
        );
      };
      try {
        catchRejection(listener(payload), threw);
      } catch (error) {
        threw(error);
      }
    }
  }
}
