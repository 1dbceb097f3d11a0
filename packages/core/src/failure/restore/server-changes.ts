/**
 * @module Which server answers on each node of a store, and when that last changed (`Store.servers`: a
 * Redis's `run_id` per master, new at each restart and on another server after a failover). A server that
 * changed may hold fewer counts than the one before answered (a crash restarted from an older RDB snapshot,
 * a replica promoted before it had the last writes), so failure/restore/budget-restore.ts charges a key the
 * difference when its first answer after the change could not follow its last one before it.
 */

import { DoublingWait } from '../../internal/doubling-wait.js';
import type { Store } from '../../stores/store.js';
import { nodesIn } from '../store-guard.js';

/** The key of `ServerChanges.pending` for a reading of every node. */
const ALL = '';

export class ServerChanges {
  private readonly ids = new Map<string, string>();
  private readonly changed = new Map<string, number>();
  /** The readings in flight (`read`): of one node, under its name, or of every node, under ALL. */
  private readonly pending = new Map<string, Promise<void>>();
  /** How many readings were sent; the count of the last reading of every node (`readingOf`). */
  private sent = 0;
  private allSent = 0;
  /** Per node, the count of the latest reading that told of it (`apply`, `readingOf`). */
  private readonly landed = new Map<string, number>();
  /** Until a reading found some server: the wait before reading again, and its timer. */
  private readonly wait = new DoublingWait();
  private closed = false;

  private constructor(private readonly store: Store & Required<Pick<Store, 'servers'>>) {}

  /** The changes of `store`'s servers, where it can tell them; else undefined. */
  static of(store: Store): ServerChanges | undefined {
    return store.servers === undefined ? undefined : new ServerChanges(store as ServerChanges['store']);
  }

  /**
   * Reads which server answers on every node, or with `node` (a StoreGuard.nodeOfKey name) only on the
   * nodes it names; a node whose server differs from the last reading changed at `at` (when the
   * connection came back, or the node's breaker closed: every answer before then came from the server
   * before), and so did a node new since the first reading (a Cluster replica promoted to master: its keys
   * were another server's). The first reading, or one that fails, changes nothing. A reading of every
   * node reads each node it knows on its own too, so that a master that does not answer (a dead one, whose
   * INFO waits for the client to give up) holds no other's (`readingOf`); while the readings know one
   * server at most, a reading of one node reads them all. Until a reading finds some server (a store not ready
   * yet, as a Cluster client is when the limiter is made, or a reading that failed), the store is read
   * again after a DoublingWait: a first reading taken only at the change itself (a breaker that closed on
   * a restarted master) would not see it.
   */
  read(at: number, node?: string): Promise<void> {
    const known = this.ids.size > 1 ? [...this.ids.keys()] : [];
    if (node !== undefined && known.length > 0) return Promise.all(nodesIn(node).map((n) => this.readOne(at, n))).then(() => undefined);
    // The reading of every node first: each node's own, sent after it, answers for that node once it lands.
    // One server (as far as the readings say): its own reading is the whole one.
    const all = this.readOne(at, ALL);
    return Promise.all([all, ...known.map((n) => this.readOne(at, n))]).then(() => undefined);
  }

  /** A reading of `node`, or of every node (ALL), noted in `pending` while it is in flight. */
  private readOne(at: number, node: string): Promise<void> {
    const sent = ++this.sent;
    if (node === ALL) this.allSent = sent;
    const reading = this.store.servers(node === ALL ? undefined : node).then(
      (servers) => {
        this.apply(servers, at, sent);
        this.readAgain();
      },
      () => this.readAgain(),
    );
    const done = reading.then(() => {
      if (this.pending.get(node) === done) this.pending.delete(node);
    });
    this.pending.set(node, done);
    return done;
  }

  /**
   * Notes what a reading sent as the `sent`th found, but not for a node a later reading already told of: a
   * reading of every node that a dead master held back would set what an earlier server answered over a
   * later one.
   */
  private apply(servers: ReadonlyMap<string, string>, at: number, sent: number): void {
    const first = this.ids.size === 0;
    for (const [node, id] of servers) {
      if ((this.landed.get(node) ?? 0) > sent) continue;
      this.landed.set(node, sent);
      const before = this.ids.get(node);
      if (before === undefined ? !first : before !== id) this.changed.set(node, Math.max(at, this.changedAt(node)));
      this.ids.set(node, id);
    }
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

  /**
   * The readings in flight that tell of `node` (a StoreGuard.nodeOfKey name), if any: an answer from it
   * that could not follow waits for them before it is judged. Each node it names waits for its own reading
   * while one is in flight, else for the reading of every node unless a reading sent after that one
   * already told of it (a master read on its own since, a promoted replica among them; not one whose own
   * reading failed).
   */
  readingOf(node: string): Promise<void> | undefined {
    const all = this.pending.get(ALL);
    const waits: Promise<void>[] = [];
    for (const n of nodesIn(node)) {
      const p = this.pending.get(n) ?? ((this.landed.get(n) ?? 0) > this.allSent ? undefined : all);
      if (p !== undefined && !waits.includes(p)) waits.push(p);
    }
    if (waits.length <= 1) return waits[0];
    return Promise.all(waits).then(() => undefined);
  }

  /** When the server of `node` (a StoreGuard.nodeOfKey name: several nodes joined by '+') last changed; -Infinity when never. */
  changedAt(node: string): number {
    let at = Number.NEGATIVE_INFINITY;
    for (const n of nodesIn(node)) at = Math.max(at, this.changed.get(n) ?? Number.NEGATIVE_INFINITY);
    return at;
  }
}
