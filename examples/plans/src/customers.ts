/**
 * @module The customer lookup behind the API keys: a stand-in for a database call, and the small cache
 * that keeps it off the hot path. A plan is a property of the customer (`free`, `pro`), and a
 * per-customer override is just another plan (`acme-contract`).
 */

export type PlanName = 'free' | 'pro' | 'acme-contract';

export interface Customer {
  readonly tenant: string;
  readonly plan: PlanName;
}

/** The demo's customers by API key. */
const CUSTOMERS = new Map<string, Customer>([
  ['free-key-1', { tenant: 'hobbyist', plan: 'free' }],
  ['pro-key-1', { tenant: 'startup', plan: 'pro' }],
  ['pro-key-2', { tenant: 'startup', plan: 'pro' }],
  ['acme-key-1', { tenant: 'acme', plan: 'acme-contract' }],
]);

/** A customer lookup that takes a round trip, as a database would. */
export interface CustomerDirectory {
  find(apiKey: string): Promise<Customer | undefined>;
  /** Lookups that reached the "database" (cache misses). */
  readonly lookups: number;
}

/**
 * The directory with a small cache: at most `size` API keys, each for `ttlMs` (unknown keys too, so a
 * flood of made-up keys costs one lookup per key and minute, not one per request). A changed plan is
 * picked up within `ttlMs`.
 */
export function createDirectory(options: { size?: number; ttlMs?: number; clock?: () => number } = {}): CustomerDirectory {
  const { size = 1000, ttlMs = 60_000, clock = Date.now } = options;
  const cache = new Map<string, { customer: Customer | undefined; until: number }>();
  let lookups = 0;
  return {
    get lookups() {
      return lookups;
    },
    async find(apiKey) {
      const hit = cache.get(apiKey);
      if (hit !== undefined && hit.until > clock()) return hit.customer;
      lookups += 1;
      await new Promise((resolve) => setImmediate(resolve));
      const customer = CUSTOMERS.get(apiKey);
      cache.delete(apiKey);
      cache.set(apiKey, { customer, until: clock() + ttlMs });
      // Oldest first out: a Map keeps insertion order.
      if (cache.size > size) cache.delete(cache.keys().next().value as string);
      return customer;
    },
  };
}
