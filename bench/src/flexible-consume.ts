/**
 * @module How rate-limiter-flexible is asked, in every section that measures it: `consume()` resolves when
 * the request fits and rejects with a RateLimiterRes when it does not (the documented try/await/catch).
 */
import { RateLimiterRes } from 'rate-limiter-flexible';

/** True when `limiter` admits `key`; rethrows anything that is not a verdict. */
export async function flexibleConsume(limiter: { consume(key: string): Promise<unknown> }, key: string): Promise<boolean> {
  try {
    await limiter.consume(key);
    return true;
  } catch (error) {
    if (error instanceof RateLimiterRes) return false;
    throw error;
  }
}
