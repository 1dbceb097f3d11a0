/**
 * @module Eviction, said while it happens. Under a `maxmemory-policy` that evicts (`allkeys-*`,
 * `volatile-*`), Redis deletes keys when it is full, limiter state among them, and the clients behind
 * those keys get their whole budget again. The startup warning (`WRN_RL_EVICTION_POLICY`,
 * config-checks.ts) says it may happen; this watch says that it does: every `intervalMs` while the store
 * is in use it reads `evicted_keys` from `INFO stats` on every master (per node on a Cluster), adds what
 * Redis evicted since the last read to `tollgate_store_evictions_total{store="redis"}` and to
 * `RedisStore.evictions`, and logs `WRN_RL_STORE_EVICTING` at most once per `logIntervalMs`, with the
 * count since the last line. The policy follows the server: the watch asks it again every
 * `policyIntervalMs` while the store is in use, at once when the client is ready again after a reconnect,
 * and when INFO shows another server (`run_id`: a restart, a failover); a policy that turns evicting is
 * logged (`WRN_RL_EVICTION_POLICY`, one line per change). Under `noeviction` it reads `evicted_keys` only
 * with those checks (and once at start, the baseline), so what Redis evicts after a live `CONFIG SET` is
 * counted from the reading before it. One unref'd timer per store: it stops when the store goes unused
 * for a whole interval (resumed by the next call) and on `close()`, and never keeps the process alive.
 */
import { seeDocs } from '../../errors.js';
import { type Logger, safeLog } from '../../logging.js';
import { counterCell } from '../../observability/metric-store.js';
import type { NodeInfo, StoreClient } from './clients/store-client.js';
import { EVICTION_CONSEQUENCE } from './config-checks.js';

/** `tollgate_store_evictions_total{store="redis"}`: keys Redis evicted, as every RedisStore of the process read them. */
const EVICTIONS = counterCell('storeEvictions', { storeKind: 'redis' });

/** How RedisStore watches Redis evict keys (`INFO stats`): how often it reads, how often it may log, how often it asks the policy again. */
export interface EvictionWatchOptions {
  /** How often `INFO stats` is read under an evicting policy, in ms. Defaults to `10_000`. */
  intervalMs?: number;
  /** At most one `WRN_RL_STORE_EVICTING` line per this many ms. Defaults to `60_000`. */
  logIntervalMs?: number;
  /**
   * How often, while the store is in use, `maxmemory-policy` is read again (and, under `noeviction`,
   * `evicted_keys`), in ms: a live `CONFIG SET` is seen within this plus `intervalMs`. Defaults to `30_000`.
   */
  policyIntervalMs?: number;
}

export interface EvictionWatchConfig {
  readonly intervalMs: number;
  readonly logIntervalMs: number;
  /** How often the policy is asked again while the store is in use; without `checkPolicy`, never. */
  readonly policyIntervalMs?: number;
  /** INFO stats of every master, with its `run_id` (the `server` section) when the client gives it. */
  readonly info: () => Promise<NodeInfo[]>;
  /**
   * What the startup check read: the evicting policies (`'allkeys-lru'`), `'unknown'` (CONFIG refused), or
   * undefined when no master evicts (then `evicted_keys` is read only with each policy check).
   */
  readonly policy: string | undefined;
  /** Reads the policy again, as the startup check does (config-checks.ts), without its warning. */
  readonly checkPolicy?: () => Promise<string | undefined>;
  readonly logger: Logger;
  /** False when `validate` switched the line off (the metric still counts). */
  readonly warn: boolean;
  /** False when `validate` switched `WRN_RL_EVICTION_POLICY` off: no line when the policy turns evicting. */
  readonly warnPolicy?: boolean;
  /** Whether the store was called since the last read (and clears that). */
  readonly takeUse: () => boolean;
  readonly now?: () => number;
}

/**
 * The highest `evicted_keys` the metric has counted, per Redis server (its `run_id`): several RedisStores
 * of the process on one server (one per limiter, each with its own client) read the same counter, and
 * the process-wide series counts what grew once, not once per store. A restarted server has a new run_id.
 */
const counted = new Map<string, number>();

/** `run_id` in an INFO reply (the `server` section), or undefined when absent. */
export function runId(text: string | undefined): string | undefined {
  const m = text === undefined ? null : /(?:^|\n)run_id:([0-9a-f]+)/.exec(text);
  return m === null ? undefined : m[1];
}

/** What the process-wide series adds for `value` read on server `id`: what grew since any store counted it. */
function newOnServer(id: string, value: number): number {
  const before = counted.get(id);
  if (before === value) return 0;
  counted.set(id, value);
  if (before === undefined) return 0;
  // A counter that went down was reset (CONFIG RESETSTAT): all of it is new, as each store counts it.
  return value > before ? value - before : value;
}

/**
 * INFO `server` and `stats` of every master, one text per node: the server section names the server
 * (`run_id`); a client or server that refuses it gives the stats alone (then each store counts its own).
 */
export async function serverAndStats(client: Pick<StoreClient, 'info'>): Promise<NodeInfo[]> {
  const [server, stats] = await Promise.all([client.info('server').catch((): NodeInfo[] => []), client.info('stats')]);
  const ids = new Map(server.map((n) => [n.node, n.text ?? '']));
  return stats.map((n) => ({ node: n.node, text: n.text === undefined ? undefined : `${ids.get(n.node) ?? ''}${n.text}` }));
}

/** `evicted_keys` in an INFO reply, or undefined when absent. */
export function evictedKeys(text: string | undefined): number | undefined {
  const m = text === undefined ? null : /(?:^|\n)evicted_keys:(\d+)/.exec(text);
  return m === null ? undefined : Number(m[1]);
}

export class EvictionWatch {
  /** Keys Redis evicted since the watch started, over all masters. */
  evictions = 0;
  private readonly last = new Map<string, number>();
  /** The `run_id` each node answered with at the last reading: another one asks the policy again. */
  private readonly servers = new Map<string, string>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private closed = false;
  private reading = false;
  private checking = false;
  /** A first reading was taken: the baseline every later one counts from. */
  private baselined = false;
  /** The evicting policies as last read, `'unknown'`, or undefined when none evicts. */
  private policyNow: string | undefined;
  /** When the policy was last asked (`now()`). */
  private policyAt: number;
  /** A reconnect asked for a policy check at the next tick, whatever the policy or the time since the last. */
  private recheckDue = false;
  /** Evictions not yet in a log line, and on which nodes. */
  private unlogged = 0;
  private readonly unloggedNodes = new Set<string>();
  private lastLine = Number.NEGATIVE_INFINITY;
  private readonly now: () => number;

  constructor(private readonly config: EvictionWatchConfig) {
    this.now = config.now ?? (() => performance.now());
    this.policyNow = config.policy;
    this.policyAt = this.now();
  }

  /** True while the timer runs. */
  get running(): boolean {
    return this.timer !== undefined;
  }

  /** The evicting policies as last read (`'allkeys-lru'`), `'unknown'`, or undefined when none evicts. */
  get policy(): string | undefined {
    return this.policyNow;
  }

  /** Starts (or resumes) the timer; takes a first reading, the baseline, or one due now. */
  start(): void {
    if (this.closed || this.timer !== undefined) return;
    this.timer = setInterval(() => void this.tick(), this.config.intervalMs);
    this.timer.unref();
    void this.poll();
  }

  /**
   * The client is ready again (a reconnect), maybe to another server: the policy is asked at once while
   * the store is in use, else at the next call.
   */
  reconnected(): void {
    this.recheckDue = true;
    if (this.timer !== undefined) void this.poll();
  }

  private async tick(): Promise<void> {
    if (!this.config.takeUse()) {
      // Unused for a whole interval: stop until the next call (the store resumes the watch). The next
      // reading still counts what Redis evicted meanwhile, since the last one.
      this.stop();
      return;
    }
    await this.poll();
  }

  /**
   * What one tick does: ask the policy when due (then read), else read under an evicting policy or for the
   * baseline. Due every `policyIntervalMs`, within half a tick (a tick that comes a fraction of a ms short of
   * it must not put the check off a whole `intervalMs`), unless CONFIG was refused (a managed Redis: asked
   * again only after a reconnect or on another server, not every 30 s for ever); and at once after those.
   */
  async poll(): Promise<void> {
    const every = this.config.policyIntervalMs;
    const due =
      this.recheckDue ||
      (every !== undefined && this.policyNow !== 'unknown' && this.now() - this.policyAt >= every - this.config.intervalMs / 2);
    if (this.config.checkPolicy !== undefined && every !== undefined && due) {
      this.recheckDue = false;
      await this.recheck();
    } else if (this.policyNow !== undefined || !this.baselined) {
      await this.read();
    }
  }

  /**
   * Reads the policy again, logs `WRN_RL_EVICTION_POLICY` when it turned evicting (once per change), then
   * reads `evicted_keys`. CONFIG failing now keeps an evicting policy known; under `noeviction` it reads as
   * at startup (`'unknown'`: every `intervalMs`) until CONFIG answers again. Never rejects.
   */
  async recheck(): Promise<void> {
    const check = this.config.checkPolicy;
    if (check === undefined || this.checking || this.closed) return;
    this.checking = true;
    this.policyAt = this.now();
    try {
      const policy = await check().catch(() => 'unknown');
      if (policy !== 'unknown' || this.policyNow === undefined) this.changePolicy(policy);
    } finally {
      this.checking = false;
    }
    await this.read();
  }

  private changePolicy(policy: string | undefined): void {
    const was = this.policyNow;
    this.policyNow = policy;
    if (policy === was || policy === undefined || policy === 'unknown' || this.config.warnPolicy === false) return;
    safeLog(
      this.config.logger,
      'warn',
      { code: 'WRN_RL_EVICTION_POLICY', maxmemoryPolicy: policy, was: was ?? 'noeviction' },
      `WRN_RL_EVICTION_POLICY: Redis now runs with maxmemory-policy ${policy} (it was ${was ?? 'noeviction'}): ${EVICTION_CONSEQUENCE} ` +
        `The store now reads evicted_keys every ${Math.round(this.config.intervalMs / 1000)} s while in use ` +
        '(WRN_RL_STORE_EVICTING). Set maxmemory-policy noeviction on the Redis that holds limiter state, or give the limiter ' +
        `a Redis of its own. ${seeDocs('WRN_RL_EVICTION_POLICY')}`,
    );
  }

  /** Reads `evicted_keys` on every master and reports what grew; returns that. Never rejects. */
  async read(): Promise<number> {
    if (this.reading) return 0;
    this.reading = true;
    let replies: NodeInfo[];
    try {
      replies = await this.config.info();
    } catch {
      return 0;
    } finally {
      this.reading = false;
    }
    const first = !this.baselined;
    this.baselined = true;
    let delta = 0;
    let metric = 0;
    let moved = false;
    for (const { node, text } of replies) {
      const server = runId(text);
      moved = this.serverMoved(node, server, first) || moved;
      const value = evictedKeys(text);
      if (value === undefined) continue;
      const before = this.last.get(node);
      this.last.set(node, value);
      // The process-wide series: what grew on this server since any store of the process read it.
      if (server !== undefined) metric += newOnServer(server, value);
      if (before === undefined) continue;
      // A counter that went down was reset (a restart, CONFIG RESETSTAT): all of it is new.
      const grew = value >= before ? value - before : value;
      if (server === undefined) metric += grew;
      if (grew > 0) {
        delta += grew;
        this.unloggedNodes.add(node);
      }
    }
    if (metric > 0) EVICTIONS.value += metric;
    if (delta > 0) {
      this.evictions += delta;
      this.unlogged += delta;
    }
    this.maybeLog();
    // Another server answers (a restart, a failover): its policy may differ.
    if (moved) void this.recheck();
    return delta;
  }

  /** Whether `node` is answered by a server other than at the last reading (a node first seen after the first reading is one). */
  private serverMoved(node: string, id: string | undefined, first: boolean): boolean {
    if (id === undefined) return false;
    const before = this.servers.get(node);
    this.servers.set(node, id);
    return before === undefined ? !first : before !== id;
  }

  private maybeLog(): void {
    if (this.unlogged === 0) return;
    const at = this.now();
    if (at - this.lastLine < this.config.logIntervalMs) return;
    const seconds = Number.isFinite(this.lastLine) ? Math.round((at - this.lastLine) / 1000) : undefined;
    const count = this.unlogged;
    const nodes = [...this.unloggedNodes];
    // Evictions read while CONFIG says noeviction happened while it did not (a policy changed and back).
    const policy = this.policyNow ?? 'noeviction';
    this.lastLine = at;
    this.unlogged = 0;
    this.unloggedNodes.clear();
    if (!this.config.warn) return;
    safeLog(
      this.config.logger,
      'warn',
      { code: 'WRN_RL_STORE_EVICTING', evicted: count, nodes, maxmemoryPolicy: policy },
      `WRN_RL_STORE_EVICTING: Redis evicted ${count} keys ${seconds === undefined ? 'since the last reading' : `in the last ${seconds} s`} ` +
        `(maxmemory-policy ${policy}${nodes.length > 1 || nodes[0] !== 'redis' ? `; ${nodes.join(', ')}` : ''}): ` +
        'limiter state among them is gone, and the clients behind it got their whole budget again. Set maxmemory-policy ' +
        'noeviction on the Redis that holds limiter state, or give it more memory. At most one such line per ' +
        `${Math.round(this.config.logIntervalMs / 1000)} s; tollgate_store_evictions_total{store="redis"} counts every one. ${seeDocs('WRN_RL_STORE_EVICTING')}`,
    );
  }

  private stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  close(): void {
    this.closed = true;
    this.stop();
  }
}
