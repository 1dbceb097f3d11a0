/**
 * @module The marks of a limiter on each master of a Redis Cluster (RedisStore.markNodeAlive). A Cluster
 * master can lose its keys alone (a restart without persistence), which one mark for the whole store
 * cannot tell, so each master holds a mark of its own: a key whose slot it serves, `<head>~alive{<n>}` with
 * the first `n` that lands there by the client's slot map (key-names.ts `nodeMarkName`), so every process
 * of a limiter picks the same key. A master's mark counts as missing only where this store saw it there
 * before: a master this store never marked (one that joined later, or whose mark moved away with its slot)
 * is marked and nothing is told, so a mark that was never set is never taken for a loss.
 */

import type { StoreClient } from './clients/store-client.js';
import { markName, nodeMarkName } from './key-names.js';

/** Sets the mark unless it is there; 1 when it was not. */
export const MARK_ALIVE = "return redis.call('SET', KEYS[1], '1', 'NX') and 1 or 0";

/**
 * The most tags tried for one master (a few ms of hashing, once per master): a master that serves 4 slots
 * of 16,384 is missed with a chance of e^-16, one that serves a single slot with e^-4 (its mark is then
 * not set, and its losses are not told).
 */
const MAX_TRIES = 1 << 16;

export class NodeMarks {
  /** The mark's key per limiter and master (`<mark>\n<node>`), as last found. */
  private readonly names = new Map<string, string>();
  /** The mark keys this store set, or found set: only those can be missing. */
  private readonly seen = new Set<string>();
  /** Limiters whose marks wait for the Cluster to be ready (`markAll` before it was). */
  private pending: (string | undefined)[] | undefined = undefined;
  /** Told when a limiter found a master's mark missing (`watchLoss`). */
  private readonly losses = new Set<(node: string, limiter: string | undefined) => void>();
  /** The masters whose loss is being told now: the marks the listeners ask for meanwhile tell nobody again. */
  private readonly telling = new Set<string>();

  constructor(
    private readonly client: StoreClient,
    private readonly prefix: string,
  ) {}

  /** True while `markAll` waits for the first call that finds the Cluster ready (`flush`). */
  get waiting(): boolean {
    return this.pending !== undefined;
  }

  /** The key of `limiter`'s mark on `node` (`host:port`), or undefined when the client's slot map has no slot of it. */
  private nameOn(limiter: string | undefined, node: string): string | undefined {
    const id = `${markName(this.prefix, limiter)}\n${node}`;
    const known = this.names.get(id);
    if (known !== undefined && this.client.nodeAddress(known) === node) return known;
    for (let n = 0; n < MAX_TRIES; n++) {
      const name = nodeMarkName(this.prefix, limiter, n);
      const at = this.client.nodeAddress(name);
      // The client knows no slot at all: no master can be found.
      if (at === undefined) return undefined;
      if (at === node) {
        this.names.set(id, name);
        return name;
      }
    }
    return undefined;
  }

  /** Sets `limiter`'s mark on `node`; true when it was missing where this store had seen it. Nothing sent for a name that is no master's. */
  mark(limiter: string | undefined, node: string): Promise<boolean> {
    const name = this.client.masterAddresses?.().includes(node) === true ? this.nameOn(limiter, node) : undefined;
    if (name === undefined) return Promise.resolve(false);
    const seen = this.seen.has(name);
    // A mark asked for by a listener told of this master's loss: its own loss is the same one, told already.
    const tells = !this.telling.has(node);
    return this.client.evalScript(MARK_ALIVE, 1, [name]).then((x) => {
      this.seen.add(name);
      const lost = seen && x === 1;
      if (lost && tells) this.tellLoss(node, limiter);
      return lost;
    });
  }

  private tellLoss(node: string, limiter: string | undefined): void {
    this.telling.add(node);
    try {
      for (const tell of [...this.losses]) tell(node, limiter);
    } finally {
      this.telling.delete(node);
    }
  }

  /**
   * Calls `listener` when a limiter on this store finds `node` lost its keys (its mark was missing): the
   * marks of the other limiters there went with it, though their breakers may never have seen the master
   * fail (no call of theirs went to it meanwhile). Returns the function that stops the calls.
   */
  watchLoss(listener: (node: string, limiter: string | undefined) => void): () => void {
    this.losses.add(listener);
    return () => {
      this.losses.delete(listener);
    };
  }

  /** Marks `limiter` on every master now, or at the first call that finds the Cluster ready (`flush`). */
  markAll(limiter: string | undefined): void {
    if (this.client.status !== 'ready') {
      if (this.pending === undefined) this.pending = [];
      this.pending.push(limiter);
      return;
    }
    for (const node of this.client.masterAddresses?.() ?? []) {
      this.mark(limiter, node).catch(() => false);
    }
  }

  /** Sets the marks `markAll` kept waiting (RedisStore, at a call that finds the Cluster ready). */
  flush(): void {
    const pending = this.pending ?? [];
    this.pending = undefined;
    for (const limiter of pending) this.markAll(limiter);
  }
}
