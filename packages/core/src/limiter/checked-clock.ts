/**
 * @module The limiter's clock: the built-in one as it is (it always returns integer ms), a caller's
 * checked on every read (finite milliseconds within ±MAX_CLOCK_MS, floored), with a coded error otherwise.
 */
import { monotonicClock } from '../clock.js';
import { codedError, describeValue } from '../errors.js';
import type { Clock } from '../types.js';

/**
 * The largest reading (either sign) a caller's clock may give, ms: 2^43, about the year 2248 as
 * `Date.now()`. Past it, products of time and rate leave exact arithmetic (a nanosecond clock, 1e18,
 * gave waits a third of the truth; 1e300 locked a key out for good).
 */
export const MAX_CLOCK_MS = 2 ** 43;

export function checkedClock(clock: Clock): Clock {
  if (clock === monotonicClock) return monotonicClock;
  return () => {
    const t = clock();
    // Also false for NaN.
    if (typeof t !== 'number' || !(t >= -MAX_CLOCK_MS && t <= MAX_CLOCK_MS)) {
      throw codedError(
        TypeError,
        'ERR_RL_INVALID_CLOCK',
        `the clock returned ${describeValue(t)}; it must return finite milliseconds within ±2^43 (Date.now() or performance.now(), not nanoseconds)`,
      );
    }
    return Math.floor(t);
  };
}
