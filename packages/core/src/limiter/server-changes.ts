/**
 * @module Which server answers on each node of a store, and when that last changed (`Store.servers`: a
 * Redis's `run_id` per master, new at each restart and on another server after a failover). A server that
 * changed may hold fewer counts than the one before answered (a crash restarted from an older RDB snapshot,
 * a replica promoted before it had the last writes), so limiter/budget-restore.ts charges a key the
 * difference when its first answer after the change could not follow its last one before it.
 */
import { nodesIn } from '../failure/store-guard.js';
import { DoublingWait } from '../internal/doubling-wait.js';
import type { Store } from '../stores/store.js';

export class ServerChanges {
  private readonly ids = new Map<string, string>();
  private readonly changed = new Map<string, number>();
  /** The reading in flight, if any (`read`). */
  private pending: Promise<void> | undefined = undefined;
  /** Until a reading found some server: the wait before reading again, and its timer. */
  private readonly wait = new DoublingWait();
  private closed = false;

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
   * Until a reading finds some server (a store not ready yet, as a Cluster client is when the limiter is
   * made, or a reading that failed), the store is read again after a DoublingWait: a first reading taken
   * only at the change itself (a breaker that closed on a restarted master) would not see it.
   */
  read(at: number): Promise<void> {
    const reading = this.store.servers().then(
      (servers) => {
        const first = this.ids.size === 0;
        for (const [node, id] of servers) {
          const before = this.ids.get(node);
          if (before === undefined ? !first : before !== id) this.changed.set(node, Math.max(at, this.changedAt(node)));
          this.ids.set(node, id);
        }
        this.readAgain();
      },
      () => this.readAgain(),
    );
    const done = reading.then(() => {
      if (this.pending === done) this.pending = undefined;
    });
    this.pending = done;
    return done;
  }

  /** Reads again after a wait while no reading found a server; once one did, nothing. */
  private readAgain(): void {
    if (this.ids.size > 0) {
      this.wait.succeeded();
      return;
    }
    if (this.closed || this.wait.pending) return;
    this.wait.started();
    this.wait.retry(() => {
      if (this.ids.size === 0 && !this.closed) void this.read(Number.NEGATIVE_INFINITY);
    });
  }

  /** Stops reading again. */
  close(): void {
    this.closed = true;
    this.wait.stop();
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
