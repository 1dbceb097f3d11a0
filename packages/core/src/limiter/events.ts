/**
 * @module The limiter's events (`limiter.on`): listeners by event, called in order; a listener that
 * throws or rejects is logged, never thrown into the decision that emitted.
 */
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

  /** Subscribes `listener` to `event`; returns the function that unsubscribes. */
  on<E extends keyof LimiterEvents>(event: E, listener: Listener<E>): () => void {
    const set = this.listeners[event] as Set<Listener<E>>;
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
