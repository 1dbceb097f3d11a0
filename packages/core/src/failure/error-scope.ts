/**
 * @module The blast radius of a store error. `'key'`: the error belongs to the state of one key (a Redis
 * WRONGTYPE, a script error on a foreign value, a reply the script never returns for that key); only the
 * request on that key is answered by the failure mode, and the node's health is untouched (the node did
 * answer). `'node'`: the node (connection, Cluster master) cannot serve anyone (connection closed, not
 * ready, out of memory, loading, silent); it counts against that node's health. A store says which with
 * `Store.errorScope`; a store that does not say gets `'node'`, the cautious reading.
 */
import type { Store } from '../stores/store.js';

export type ErrorScope = 'key' | 'node';

/** The scope of `error` as `store` classifies it (`'node'` when the store does not classify). */
export function errorScopeOf(store: Store, error: unknown): ErrorScope {
  if (store.errorScope === undefined) return 'node';
  try {
    return store.errorScope(error) === 'key' ? 'key' : 'node';
  } catch {
    return 'node';
  }
}
