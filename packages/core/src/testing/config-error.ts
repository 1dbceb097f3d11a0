/** @module For tests of option validation: the RateLimitConfigError a call throws. */
import { RateLimitConfigError } from '../errors.js';

/** The RateLimitConfigError `fn` throws; any other error is thrown on, and nothing thrown fails the test. */
export function configError(fn: () => unknown): RateLimitConfigError {
  try {
    fn();
  } catch (error) {
    if (error instanceof RateLimitConfigError) return error;
    throw error;
  }
  throw new Error('expected a RateLimitConfigError, nothing was thrown');
}
