/**
 * @module The leases a limiter holds in one store that can lose them (lease-keeper.ts), indexed by key, so
 * that an answer granting a new lease can be checked against them at once: a store that reports fewer
 * leases in use on a key than this limiter alone holds there lost them (a `FLUSHALL`, a Cluster master
 * restarted while nothing was sent to it), though no connection event said so (`fewerThanHeld`).
 */

import type { CompiledPolicy } from '../algorithms/kernel.js';
import { MILLI } from '../internal/fixed-point.js';
import {
  F_CHARGED,
  R_FLAGS,
  R_REMAINING,
  RESULT_STRIDE,
  type StoreKey,
  type StorePlan,
  type StoreResult,
  storeKeyText,
} from '../stores/store.js';

/** A lease held in a store that can lose it (`Store.restore`). */
export interface Held {
  readonly key: StoreKey;
  readonly plan: StorePlan;
  readonly lease: number;
  /** When its renewals stop: granted at + maxLeaseMs - leaseMs (its last deadline is then granted at + maxLeaseMs). */
  readonly renewUntil: number;
  readonly leaseMs: number;
  /**
   * Its deadline as this process knows it (granted or last renewed at + leaseMs): a lease past it has
   * ended in the store too, and no restore puts it back (a request that stopped renewing is not revived);
   * a late renewal takes its slot again only when it fits (LeaseKeeper `renewLate`). -Infinity: ended for
   * good (a reset, or a late renewal refused), also in a store that keeps nothing here (a MemoryStore).
   */
  until: number;
  /**
   * Whether the store may hold it: true for a lease the store granted; for one the failure mode granted in
   * an outage (`carry`), from the restore that puts it into the store. A lease never sent is not released there.
   */
  inStore: boolean;
  /**
   * A restore of this lease on its way (a renewal, or a restore of every lease): its release waits for
   * it. A call that met NOSCRIPT is sent again behind calls sent after it, so a release sent meanwhile
   * would run first and the restore would put the ended lease back for a whole `leaseMs`.
   */
  putBack: Promise<unknown> | undefined;
}

/** A set of held leases, with the leases of each key at hand. */
export class HeldLeases implements Iterable<Held> {
  private readonly all = new Set<Held>();
  private readonly byKey = new Map<string, Set<Held>>();

  get size(): number {
    return this.all.size;
  }

  [Symbol.iterator](): Iterator<Held> {
    return this.all[Symbol.iterator]();
  }

  add(held: Held): void {
    if (this.all.has(held)) return;
    this.all.add(held);
    const text = storeKeyText(held.key);
    const of = this.byKey.get(text);
    if (of === undefined) this.byKey.set(text, new Set([held]));
    else of.add(held);
  }

  delete(held: Held): void {
    if (!this.all.delete(held)) return;
    const text = storeKeyText(held.key);
    const of = this.byKey.get(text);
    of?.delete(held);
    if (of?.size === 0) this.byKey.delete(text);
  }

  /**
   * True when `r`, the store's answer at `now` granting a lease of `key` under `plan` (whose policies are
   * `policies`, in result order), says some concurrency policy had fewer leases in use before it than
   * this limiter holds there (live, in the store, of the same plan): the store lost some; or that the
   * grant does not fit beside the live leases this limiter holds that are not in the store yet (granted
   * by the failure mode in an outage, put in by the next restore: the grant that ended the outage was
   * sent before it). Reads only the key's own leases, and only when their number can tell.
   */
  fewerThanHeld(key: StoreKey, plan: StorePlan, policies: readonly CompiledPolicy[], r: StoreResult, now: number): boolean {
    const of = this.byKey.get(storeKeyText(key));
    if (of === undefined) return false;
    for (let i = 0, o = 0; i < policies.length; i++, o += RESULT_STRIDE) {
      const p = policies[i] as CompiledPolicy;
      if (p.algorithm !== 'concurrency' || p.shadow || ((r[o + R_FLAGS] as number) & F_CHARGED) === 0) continue;
      // A grant reports what is left after it: `limit - n - 1` of the `n` in use before it.
      const before = p.limit - 1 - (r[o + R_REMAINING] as number) / MILLI;
      if (of.size <= before && before + of.size < p.limit) continue;
      let [live, coming] = [0, 0];
      for (const h of of) {
        if (h.plan !== plan || now >= h.until) continue;
        if (h.inStore) live += 1;
        else coming += 1;
      }
      if (live > before || before + coming >= p.limit) return true;
    }
    return false;
  }
}
