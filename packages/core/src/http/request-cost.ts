/**
 * @module `boundedCost(value, { max })`: a cost that comes from the request (`?rows=`, a batch size, a
 * header) read as a whole number of units from `min` to `max`. A client chooses that value, so it must
 * never be able to choose a cost that makes requests nearly free (`?rows=0.001`: a thousand requests
 * for the price of one) or one that no policy can ever admit. Use the same bounded value for the work
 * the handler does, so that what is charged is what is served.
 */
import { RateLimitConfigError } from '../errors.js';
import { positiveInteger } from '../internal/read-options.js';

/** Bounds of `boundedCost(value, options)`: the largest and smallest cost, and the cost of a value that is not a count. */
export interface BoundedCostOptions {
  /** The most a request may cost (and ask for): a whole number, at most the smallest capacity of the policies it is charged to. */
  readonly max: number;
  /** The least a request costs, whatever it asks for. Defaults to `1`. */
  readonly min?: number;
  /** The cost of a request that asks for nothing readable (absent, not a number, repeated). Defaults to `min`. */
  readonly fallback?: number;
}

/** Digits with an optional fraction: what a query string or a header may spell a count as. */
const DECIMAL = /^\d+(?:\.\d+)?$/;

/**
 * `value` (a query parameter, a header, a body field) as a whole number of units from `min` to `max`:
 * a fraction is rounded up (part of a row costs a row), less than `min` costs `min`, more than `max`
 * costs `max`; a value that is absent, not a plain decimal number (`'abc'`, `'1e3'`, `'0x10'`, `''`)
 * or not a single value (`?rows=1&rows=2` arrives as an array) costs `fallback`.
 *
 * @example
 * const rows = (req: Request) => boundedCost(req.query.rows, { max: 5 });
 * app.get('/api/report', rateLimit({ policies, cost: rows }), (req, res) => res.json(report(rows(req))));
 */
export function boundedCost(value: unknown, options: BoundedCostOptions): number {
  const max = positiveInteger(options?.max, 'ERR_RL_INVALID_COST_BOUND', 'max', 'must be a positive integer, e.g. { max: 5 }');
  const min = positiveInteger(options.min ?? 1, 'ERR_RL_INVALID_COST_BOUND', 'min', `must be an integer from 1 to max (${max})`, max);
  const fallback = options.fallback ?? min;
  if (!Number.isSafeInteger(fallback) || fallback < min || fallback > max) {
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_COST_BOUND',
      'fallback',
      `must be an integer from min (${min}) to max (${max})`,
      fallback,
    );
  }
  let n: number;
  if (typeof value === 'number') {
    n = value;
  } else if (typeof value === 'string' && DECIMAL.test(value.trim())) {
    n = Number(value.trim());
  } else {
    return fallback;
  }
  if (Number.isNaN(n)) return fallback;
  return Math.min(max, Math.max(min, Math.ceil(n)));
}
