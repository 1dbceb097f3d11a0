/**
 * @module What a store that lost its state is charged again for one remembered key
 * (failure/restore/budget-restore.ts), policy by policy: what this process had counted, less what other processes
 * of the limiter charged it again since the loss (the key's ledger, `Store.restored`, which this raises to
 * what it counts) and what the store still holds. Once the ledger is raised, every other process owes nothing for it, so the charge
 * is sent until it lands (sure-charges.ts).
 *
 * The ledger's own raise can fail alike, before it ran (nothing raised: this process's count would be
 * charged by nobody) or after (raised, its reply lost). It is asked again the same way, under the same id
 * (`Store.restored`'s `raise`): the store answers what it held before that raise the first time, so the
 * key is charged what it owes, not nothing because of its own raise.
 */

import type { StoreTimer } from '../../observability/store-timer.js';
import { keyAt, type Store, type StorePlan, subPlan } from '../../stores/store.js';
import type { Counted } from '../answer-memory.js';
import { alone, type SureCharge, type SureCharges } from './sure-charges.js';

export class RestoreCharges {
  /** Ids of the raises this process sends: a random text of its own, and a count. */
  private readonly raiseHead = Math.random().toString(36).slice(2, 10);
  private raises = 0;

  constructor(
    private readonly sure: SureCharges,
    private readonly store: StoreTimer,
    /** The store's ledger (`Store.restored`), if it keeps one. */
    private readonly ledger: Store['restored'],
  ) {}

  /**
   * Charges `c`'s key again what it had counted, policy by policy (`plan`'s), less what other processes of
   * the limiter charged it again since the loss (the ledger, which this raises to what `c` counts) and, with
   * `holds` (per policy, milli-units), what the store holds of it now: all of each when it fits, else what
   * that policy has left, so it ends exhausted. Settles once the first tries are answered (and a charge of
   * what is left sent, SureCharges.send), so the checks held for a restore go after them; true when
   * something was charged then. A policy whose ledger could not be asked is asked again, then charged.
   */
  async recharge(plan: StorePlan, c: Counted, holds?: Float64Array): Promise<boolean> {
    const raise = `${this.raiseHead}.${++this.raises}`;
    const owed = await Promise.all(Array.from(c.used, (_, i) => this.owedBy(plan, c, i, holds?.[i] ?? 0, raise)));
    const now = owed.map((x) => (typeof x === 'number' ? x : 0));
    if (now.some((x) => x > 0)) this.store.chargedBeside(c.storeKey, plan, now);
    const sent = owed.map((x, i) => {
      const charge = { key: keyAt(c.storeKey, i), plan: subPlan(plan, [i]), forMs: c.until[i] as number, restore: true };
      if (typeof x !== 'number') return this.sure.send({ ...charge, cost: 0, ask: x });
      return x > 0 ? this.sure.send({ ...charge, cost: x }) : undefined;
    });
    await Promise.all(sent);
    return now.some((x) => x > 0);
  }

  /** The store lost its state again (on `node`; undefined: all of it): what waits there goes, as the ledgers did. */
  lost(node?: string): void {
    this.sure.lost(node);
  }

  /**
   * What policy `i` of `c`'s key owes: what it had counted less what the store holds (`floor`) and what the
   * ledger held before this raise (`raise`); or, when the ledger could not be asked, the ask to send again.
   */
  private async owedBy(
    plan: StorePlan,
    c: Counted,
    i: number,
    floor: number,
    raise: string,
  ): Promise<number | NonNullable<SureCharge['ask']>> {
    const used = Math.floor(c.used[i] as number);
    const ledger = this.ledger;
    if (!(used > 0)) return 0;
    if (ledger === undefined) return Math.max(0, used - floor);
    const key = keyAt(c.storeKey, i);
    const single = subPlan(plan, [i]);
    const owes = (before: number) => Math.max(0, used - Math.max(before, floor));
    try {
      return owes(await ledger(key, single, used, Math.max(1, c.until[i] as number), raise));
    } catch {
      return (ttlMs) =>
        ledger(key, single, used, ttlMs, raise).then((before) => {
          const cost = owes(before);
          if (cost > 0) this.store.chargedBeside(c.storeKey, plan, alone(c.used.length, i, cost));
          return cost;
        });
    }
  }
}
