/**
 * @module Stores for the observability suites: an asynchronous wrapper around MemoryStore (every call
 * is timed, as for Redis) and one that always fails, for `store_error` and the breaker gauge.
 */
import { MemoryStore, type Store, type StorePlan, type StoreResult } from '@tollgate/core';

/** MemoryStore answering through a promise, as a networked store does. */
export class AsyncMemoryStore implements Store {
  readonly kind = 'async-memory';
  private readonly inner = new MemoryStore();
  apply(key: string, plan: StorePlan, cost: number, now: number): Promise<StoreResult> {
    const r = this.inner.apply(key, plan, cost, now);
    return Promise.resolve(r instanceof Promise ? r : Array.from(r));
  }
  reset(key: string, plan: StorePlan): void {
    this.inner.reset(key, plan);
  }
  close(): void {
    this.inner.close();
  }
}

/** A store whose every call fails. */
export class FailingStore implements Store {
  readonly kind = 'failing';
  apply(): Promise<StoreResult> {
    return Promise.reject(new Error('connection refused'));
  }
  reset(): void {}
}
