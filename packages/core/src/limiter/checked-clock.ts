/**
 * @module The limiter's clock: the built-in one as it is (it always returns integer ms), a caller's
 * checked on every read (finite milliseconds, floored), with a coded error otherwise.
 */
import { monotonicClock } from '../clock.js';
import { codedError, describeValue } from '../errors.js';
import type { Clock } from '../types.js';

export function checkedClock(clock: Clock): Clock {
  if (clock === monotonicClock) return monotonicClock;
  return () => {
    const t = clock();
    if (typeof t !== 'number' || !Number.isFinite(t)) {
      throw codedError(TypeError, 'ERR_RL_INVALID_CLOCK', `the clock returned ${describeValue(t)}; it must return finite milliseconds`);
    }
    return Math.floor(t);
  };
}
