/**
 * @module The marks of a limiter on each master of a Redis Cluster (RedisStore.markNodeAlive). A Cluster
 * master can lose its keys alone (a restart without persistence), which one mark for the whole store
 * cannot tell, so each master holds a mark of its own: a key whose slot it serves, `<head>~alive{<n>}` with
 * the first `n` that lands there by the client's slot map (key-names.ts `nodeMarkName`), so every process
 * of a limiter picks the same key. A master's mark counts as missing only where this store saw it there
 * before: a master this store never marked (one that joined later, or whose mark moved away with its slot)
 * is marked and nothing is told, so a mark that was never set is never taken for a loss.
 *
 * A mark holds a token (`MarkTokens`), set anew only where the mark was missing: a store that finds a
 * token other than the one it found last knows the mark went since, even when another process set it
 * again first, so every process of a limiter learns of a loss, not only the first to look.
 */
import { randomBytes } from 'node:crypto';
import { DoublingWait } from '../../internal/doubling-wait.js';
import type { StoreClient } from './clients/store-client.js';
import { markName, nodeMarkName } from './key-names.js';

/** Sets the mark to ARGV[1], a token new to this call, unless it is there; returns the token it holds after. */
export const MARK_ALIVE = "local v = redis.call('GET', KEYS[1]) if not v then redis.call('SET', KEYS[1], ARGV[1]) v = ARGV[1] end return v";

/**
 * The tokens of the marks a store asked for, as it last found them. A mark (of the single server, or of a
 * Cluster master) counts as changed when its token is not the one found last: it was missing, and this
 * store or another set it again since. A mark never found before is no change (nothing to compare), so a
 * first ask that fails is asked again (`flush`, at a later call, past a DoublingWait): until it is found,
 * its loss could not be told. A later ask that fails needs nothing: the token found before stays to compare.
 */
export class MarkTokens {
  private readonly seen = new Map<string, string>();
  /** Marks whose first ask failed, to ask again (`flush`). */
  private readonly unseen = new Set<string>();
  private readonly wait: DoublingWait;

  constructor(
    private readonly client: StoreClient,
    now?: () => number,
  ) {
    this.wait = new DoublingWait(now);
  }

  /** Asks for mark `name`, setting it where it is missing; true when its token changed since this store last found it. */
  ask(name: string): Promise<boolean> {
    return this.read(name).then(
      (token) => {
        const before = this.seen.get(name);
        this.seen.set(name, token);
        this.unseen.delete(name);
        return before !== undefined && token !== before;
      },
      (error: unknown) => {
        if (!this.seen.has(name)) {
          this.unseen.add(name);
          this.wait.failed();
        }
        throw error;
      },
    );
  }

  /** The token mark `name` holds, set to one new to this call where it is missing; nothing is remembered. */
  read(name: string): Promise<string> {
    return this.client.evalScript(MARK_ALIVE, 1, [name, randomBytes(9).toString('base64url')]).then(String);
  }

  /** True when marks never found wait to be asked again and the wait is over. */
  get waiting(): boolean {
    return this.unseen.size > 0 && this.wait.over;
  }

  /** Asks again for the marks whose first ask failed (RedisStore, at a call that finds the client ready and `waiting`). */
  flush(): void {
    const names = [...this.unseen];
    this.unseen.clear();
    this.wait.started();
    Promise.all(names.map((name) => this.ask(name))).then(
      () => this.wait.succeeded(),
      () => undefined,
    );
  }
}

/**
 * The most tags tried for one master (a few ms of hashing, once per master): a master that serves 4 slots
 * of 16,384 is missed with a chance of e^-16, one that serves a single slot with e^-4 (its mark is then
 * not set, and its losses are not told).
 */
const MAX_TRIES = 1 << 16;

export class NodeMarks {
  /** The mark's key per limiter and master (`<mark>\n<node>`), as last found. */
  private readonly names = new Map<string, string>();
  /** The tokens this store found in its marks: only a mark found before can have changed. */
  private readonly tokens: MarkTokens;
  /** Limiters whose marks wait for the Cluster to be ready, or for masters and slots the client knows (`markAll`). */
  private pending: Set<string | undefined> | undefined = undefined;
  /** The wait before `pending` is tried again after the client knew no master or no slot yet. */
  private readonly wait: DoublingWait;
  /** Told when a limiter found a master's mark missing (`watchLoss`). */
  private readonly losses = new Set<(node: string, limiter: string | undefined) => void>();
  /** The masters whose loss is being told now: the marks the listeners ask for meanwhile tell nobody again. */
  private readonly telling = new Set<string>();

  constructor(
    private readonly client: StoreClient,
    private readonly prefix: string,
    now: () => number = () => performance.now(),
  ) {
    this.tokens = new MarkTokens(client, now);
    this.wait = new DoublingWait(now);
  }

  /** True while marks wait for a call that finds the Cluster ready (`flush`): the first, or one past the wait before a try again. */
  get waiting(): boolean {
    return (this.pending !== undefined && this.wait.over) || this.tokens.waiting;
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

  /** Sets `limiter`'s mark on `node` where it is missing; true when it changed since this store last found it (MarkTokens). Nothing sent for a name that is no master's. */
  mark(limiter: string | undefined, node: string): Promise<boolean> {
    const name = this.client.masterAddresses?.().includes(node) === true ? this.nameOn(limiter, node) : undefined;
    if (name === undefined) return Promise.resolve(false);
    // A mark asked for by a listener told of this master's loss: its own loss is the same one, told already.
    const tells = !this.telling.has(node);
    return this.tokens.ask(name).then((lost) => {
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

  /**
   * Marks `limiter` on every master now, or at the first call that finds the Cluster ready (`flush`). A
   * client that knows no master or no slot yet is asked again at a later call, past a DoublingWait (a
   * master left unmarked would have its losses go untold); a first ask that fails is asked again by the
   * tokens (MarkTokens). A client that cannot list its masters is never asked.
   */
  markAll(limiter: string | undefined): void {
    if (this.client.status !== 'ready') {
      this.hold(limiter);
      return;
    }
    const masters = this.client.masterAddresses?.();
    if (masters === undefined) return;
    // (A master the map gives no slot of within MAX_TRIES holds no keys to lose.)
    if (masters.length === 0 || this.client.nodeAddress(nodeMarkName(this.prefix, limiter, 0)) === undefined) {
      this.hold(limiter);
      this.wait.failed();
      return;
    }
    for (const node of masters) this.mark(limiter, node).catch(() => false);
  }

  private hold(limiter: string | undefined): void {
    if (this.pending === undefined) this.pending = new Set();
    this.pending.add(limiter);
  }

  /** Sets the marks kept waiting (RedisStore, at a call that finds the Cluster ready and `waiting`). */
  flush(): void {
    if (this.tokens.waiting) this.tokens.flush();
    if (this.pending === undefined || !this.wait.over) return;
    const pending = this.pending;
    this.pending = undefined;
    this.wait.started();
    for (const limiter of pending) this.markAll(limiter);
    if (this.pending === undefined) this.wait.succeeded();
  }
}
