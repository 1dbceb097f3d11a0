/**
 * @module The error a check's failure path carries when the watchdog judged the store's node silent:
 * calls were pending on it and nothing came back for `storeTimeoutMs` of time this process could have
 * read a reply in (watchdog.ts says exactly what counts).
 */
import { seeDocs } from '../errors.js';

/** The error a `store-error` event carries when the store did not answer within `storeTimeoutMs`. */
export class StoreTimeoutError extends Error {
  readonly code = 'ERR_RL_STORE_TIMEOUT';
  /** The node (connection, or Cluster master) that went silent. */
  readonly node: string;

  constructor(ms: number, node: string) {
    super(
      `ERR_RL_STORE_TIMEOUT: nothing came back from the store (node '${node}') for ${ms} ms (storeTimeoutMs) while calls were pending. ${seeDocs('ERR_RL_STORE_TIMEOUT')}`,
    );
    this.name = 'StoreTimeoutError';
    this.node = node;
  }
}
