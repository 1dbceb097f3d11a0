/**
 * @module The error a check's failure path carries when the watchdog answered it: the store's node was
 * silent (calls were pending on it and nothing came back for `storeTimeoutMs` of time this process could
 * have read a reply in), or this call alone waited too long on a node that answers slowly (watchdog.ts
 * says exactly what counts).
 */
import { seeDocs } from '../errors.js';
import type { Overdue } from './watchdog.js';

/** The error a `store-error` event carries when the store did not answer within `storeTimeoutMs`. */
export class StoreTimeoutError extends Error {
  readonly code = 'ERR_RL_STORE_TIMEOUT';
  /** The node (connection, or Cluster master) that went silent. */
  readonly node: string;

  /**
   * `'silent'`: nothing came back on the node; `'late'`: the node answers, but this call waited too long;
   * `'overtaken'`: this call waited too long while the node answered calls sent after it (its key's fault);
   * `'leases'`: the leases the store had lost (a restart, a failover) were not back within `ms` before a
   * new lease (leases/lease-keeper.ts RESTORE_WAIT_MS).
   */
  readonly why: Overdue | 'leases';

  constructor(ms: number, node: string, why: Overdue | 'leases' = 'silent') {
    super(`ERR_RL_STORE_TIMEOUT: ${describe(ms, node, why)}. ${seeDocs('ERR_RL_STORE_TIMEOUT')}`);
    this.name = 'StoreTimeoutError';
    this.node = node;
    this.why = why;
  }
}

function describe(ms: number, node: string, why: Overdue | 'leases'): string {
  switch (why) {
    case 'silent':
      return `nothing came back from the store (node '${node}') for ${ms} ms (storeTimeoutMs) while calls were pending`;
    case 'late':
      return `a call to the store (node '${node}') waited ${ms} ms (storeTimeoutMs, plus its queue's share) of idle time without a reply`;
    case 'overtaken':
      return `a call to the store (node '${node}') waited ${ms} ms (storeTimeoutMs, plus its queue's share) of idle time while the node answered calls sent after it (the client sent it again: a Cluster redirection, a TRYAGAIN); its key only`;
    default:
      return `the leases the store (node '${node}') had lost were not put back within ${ms} ms; the check before a new lease was answered by the failure mode`;
  }
}
