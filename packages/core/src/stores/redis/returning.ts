/**
 * @module The give-backs of each key on their way to Redis (`Store.returning`): refunds, and what a
 * `localBatch` batch returns unspent. A refund sent before a later call may still land after it (one that
 * met NOSCRIPT runs again behind it), so a carry that left a key exhausted waits for them before it
 * charges what they gave back (limiter/carry-owed.ts). An entry lives while its calls are in flight.
 */
import { type StoreKey, storeKeyText } from '../store.js';

const none = (): void => undefined;

export class Returning {
  private readonly byKey = new Map<string, Promise<void>>();

  /** Counts `call`, a give-back of `key`, until it settles; returns it. */
  track<T>(key: StoreKey, call: Promise<T>): Promise<T> {
    const name = storeKeyText(key);
    const before = this.byKey.get(name);
    const settled = (before === undefined ? call : Promise.all([before, call])).then(none, none);
    this.byKey.set(name, settled);
    settled.then(() => {
      if (this.byKey.get(name) === settled) this.byKey.delete(name);
    });
    return call;
  }

  /** What settles once the give-backs of `key` in flight have landed, or undefined when none is. */
  of(key: StoreKey): Promise<void> | undefined {
    return this.byKey.size === 0 ? undefined : this.byKey.get(storeKeyText(key));
  }
}
