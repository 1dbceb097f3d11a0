/**
 * @module Which keys `limiter.reset()` forgot, in the order of the limiter's charges. A charge's receipt
 * records how many resets came before it (`seq`); a refund of it after a reset of its key gives nothing
 * back: the charge went with the state the reset forgot, and a refund into the state made since would
 * give back budget nobody spent (a key charged, reset, then spent to its limit, then the old charge
 * refunded: one over the limit). Keys reset in another process are not seen here.
 */
import type { StoreKey } from '../stores/store.js';

/** The most reset keys remembered; past it the oldest are forgotten, and receipts older than them refund nothing. */
export const RESET_KEYS = 10_000;

export class ResetLog {
  /** Resets so far (a charge's receipt records it). */
  seq = 0;
  /** Per key, the `seq` of its last reset, oldest first. */
  private readonly resets = new Map<string, number>();
  /** The `seq` of the newest reset forgotten (RESET_KEYS): a receipt from before it cannot be told fresh. */
  private forgotten = 0;

  /** `key` was reset. */
  record(key: string): void {
    this.seq += 1;
    const resets = this.resets;
    resets.delete(key);
    resets.set(key, this.seq);
    if (resets.size > RESET_KEYS) {
      const [oldest, at] = resets.entries().next().value as [string, number];
      resets.delete(oldest);
      this.forgotten = at;
    }
  }

  /** True when a key of `storeKey` was reset after a charge made when `seq` resets had come (or that cannot be told). */
  staleSince(storeKey: StoreKey, seq: number): boolean {
    if (this.seq === seq) return false;
    if (seq < this.forgotten) return true;
    if (typeof storeKey === 'string') return (this.resets.get(storeKey) ?? 0) > seq;
    return storeKey.some((k) => (this.resets.get(k) ?? 0) > seq);
  }
}
