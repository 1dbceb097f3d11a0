/**
 * @module Test support: one store shared by several limiter "processes", each through its own connection
 * that behaves as RedisStore's does (asynchronous, a token mark, a ledger of restores), and that can fail
 * or answer slowly. Used by the budget restore tests; not part of the package entry point.
 */
import { MemoryStore } from '../stores/memory-store.js';
import type { ConnectionEvent, Store, StoreKey, StorePlan, StoreResult } from '../stores/store.js';

/** What several processes share: one store's state, its mark (a token) and its ledger of restores. */
export class Shared {
  readonly inner = new MemoryStore({ sweepIntervalMs: 0 });
  mark: string | undefined = undefined;
  readonly ledger = new Map<string, number>();
  /** What the ledger held before each named raise (scripts/restore-ledger.ts). */
  readonly raises = new Map<string, number>();
  private tokens = 0;

  newToken(): string {
    this.tokens += 1;
    return `t${this.tokens}`;
  }

  /** Everything gone: a restart without persistence. */
  wipe(): void {
    this.inner.clear();
    this.mark = undefined;
    this.ledger.clear();
    this.raises.clear();
  }
}

/** One process's connection to the shared store, as RedisStore behaves: asynchronous, a token mark, a ledger. */
export class ProcessStore implements Store {
  readonly kind = 'shared';
  private seen: string | undefined = undefined;
  private readonly listeners = new Set<(event: ConnectionEvent) => void>();

  constructor(private readonly shared: Shared) {}

  /** Every `apply` rejects, charging nothing (a dropped connection, a store error). */
  failing = false;
  /** Every `apply` charges at once and replies this much later (ms; a slow store). */
  slowMs = 0;

  /** An `apply` of a plan it returns true for rejects, charging nothing. */
  failsFor: ((plan: StorePlan) => boolean) | undefined = undefined;

  apply(key: StoreKey, plan: StorePlan, cost: number, now: number): Promise<StoreResult> {
    if (this.failing || this.failsFor?.(plan) === true) return Promise.reject(new Error('connection lost'));
    const r = Float64Array.from(this.shared.inner.apply(key, plan, cost, now));
    if (this.slowMs === 0) return Promise.resolve(r);
    return new Promise((resolve) => setTimeout(() => resolve(r), this.slowMs));
  }

  peek(key: StoreKey, plan: StorePlan, cost: number, now: number): Promise<StoreResult> {
    return Promise.resolve(Float64Array.from(this.shared.inner.peek(key, plan, cost, now)));
  }

  reset(key: string, plan: StorePlan): void {
    this.shared.inner.reset(key, plan);
  }

  watchConnection(listener: (event: ConnectionEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  markAlive(): Promise<boolean> {
    this.shared.mark ??= this.shared.newToken();
    const before = this.seen;
    this.seen = this.shared.mark;
    return Promise.resolve(before !== undefined && before !== this.seen);
  }

  /** Ledger calls fail: before they run (`'unsent'`), or after (`'unanswered'`: the raise holds, its reply is lost). */
  ledgerFails: 'unsent' | 'unanswered' | undefined = undefined;

  restored(key: string, plan: StorePlan, used: number, _ttlMs: number, raise = ''): Promise<number> {
    if (this.ledgerFails === 'unsent') return Promise.reject(new Error('connection lost'));
    const id = `${key}\n${plan.policies[0]?.id}`;
    const was = raise === '' ? undefined : this.shared.raises.get(`${id}\n${raise}`);
    const before = was ?? this.shared.ledger.get(id) ?? 0;
    if (was === undefined && used > before) {
      this.shared.ledger.set(id, used);
      if (raise !== '') this.shared.raises.set(`${id}\n${raise}`, before);
    }
    return this.ledgerFails === 'unanswered' ? Promise.reject(new Error('connection lost')) : Promise.resolve(before);
  }

  reconnect(): void {
    for (const l of this.listeners) l('lost');
    for (const l of this.listeners) l('ready');
  }
}
