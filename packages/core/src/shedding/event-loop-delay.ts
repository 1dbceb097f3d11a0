/**
 * @module Event-loop delay for the adaptive shedder: how late a repeating timer fires, the longest
 * lateness since the previous read (one reading per controller window).
 *
 * Not `perf_hooks.monitorEventLoopDelay` read and reset per window: its `reset()` also forgets when the
 * previous tick ran, so the first tick after a reset records nothing; a loop blocked on every turn (a
 * synchronous handler under load, the case this reading exists for) has one tick per window, and the
 * histogram read `count 0`, no delay at all, while the process lagged 400 to 800 ms.
 */

export interface EventLoopDelaySampler {
  /** The longest event-loop delay (ms) since the last read, beyond the timer's period; 0 when none. */
  read(): number;
  close(): void;
}

/**
 * Starts a timer every `periodMs` (10 ms, the resolution @fastify/under-pressure uses), unref'd: a tick
 * that comes late by more than the period measures a turn of the loop that blocked it. With a few ticks
 * per window (25 in 250 ms) the longest is what a p99 of them would read. Only lateness of the last
 * `maxAgeMs` (the controller's window) is read: a read that ends an idle spell (windows close when
 * requests come) must not find a pause from seconds before.
 */
export function createEventLoopDelaySampler(
  periodMs = 10,
  now: () => number = () => performance.now(),
  maxAgeMs = Number.POSITIVE_INFINITY,
): EventLoopDelaySampler {
  let last = now();
  let worst = 0;
  /** When the tick that measured `worst` ran. */
  let worstAt = last;
  const timer = setInterval(() => {
    const t = now();
    const late = t - last - periodMs;
    last = t;
    if (late > worst || t - worstAt > maxAgeMs) {
      worst = Math.max(late, 0);
      worstAt = t;
    }
  }, periodMs);
  timer.unref();
  return {
    read() {
      // A turn blocked right now (the tick still to come) counts too: the reading is taken in a request's
      // turn. Counted here, it is not counted again by that tick (in the next window: one pause, one window).
      const t = now();
      const pending = t - last - periodMs;
      if (pending > 0) last = t;
      const delay = Math.max(t - worstAt <= maxAgeMs ? worst : 0, pending, 0);
      worst = 0;
      return delay;
    },
    close() {
      clearInterval(timer);
    },
  };
}
