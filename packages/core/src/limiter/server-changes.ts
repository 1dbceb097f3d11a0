/**
 * @module Which server answers on each node of a store, and when that last changed (`Store.servers`: a
 * Redis's `run_id` per master, new at each restart and on another server after a failover). A server that
 * changed may hold fewer counts than the one before answered (a crash restarted from an older RDB snapshot,
 * a replica promoted before it had the last writes), so limiter/budget-restore.ts charges a key the
 * difference when its first answer after the change could not follow its last one before it.
 */
import { nodesIn } from '../failure/store-guard.js';
import type { Store } from '../stores/store.js';

export class ServerChanges {
  private readonly ids = new Map<string, string>();
  private readonly changed = new Map<string, number>();
  /** The reading in flight, if any (`read`). */
  private pending: Promise<void> | undefined = undefined;

  private constructor(private readonly store: Store & Required<Pick<Store, 'servers'>>) {}

  /** The changes of `store`'s servers, where it can tell them; else undefined. */
  static of(store: Store): ServerChanges | undefined {
    return store.servers === undefined ? undefined : new ServerChanges(store as ServerChanges['store']);
  }

  /**
   * Reads which server answers on every node; a node whose server differs from the last reading changed
   * at `at` (when the connection came back, or the node's breaker closed: every answer before then came
   * from the server before), and so did a node new since the first reading (a Cluster replica promoted
   * to master: its keys were another server's). The first reading, or one that fails, changes nothing.
   */
  read(at: number): Promise<void> {
    const reading = this.store.servers().then(
      (servers) => {
        const first = this.ids.size === 0;
        for (const [node, id] of servers) {
          const before = this.ids.get(node);
          if (before === undefined ? !first : before !== id) this.changed.set(node, at);
          this.ids.set(node, id);
        }
      },
      () => undefined,
    );
    const done = reading.then(() => {
      if (this.pending === done) this.pending = undefined;
    });
    this.pending = done;
    return done;
  }

  /** Whether the store has one node (as far as the readings say): its name then tells nothing. */
  get single(): boolean {
    return this.ids.size <= 1;
  }

  /** The reading in flight, if any: an answer that could not follow waits for it before it is judged. */
  get reading(): Promise<void> | undefined {
    return this.pending;
  }

  /** When the server of `node` (a StoreGuard.nodeOfKey name: several nodes joined by '+') last changed; -Infinity when never. */
  changedAt(node: string): number {
    let at = Number.NEGATIVE_INFINITY;
    for (const n of nodesIn(node)) at = Math.max(at, this.changed.get(n) ?? Number.NEGATIVE_INFINITY);
    return at;
  }
}
