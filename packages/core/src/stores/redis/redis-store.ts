/**
 * @module RedisStore: limiter state in Redis (or Redis Cluster), shared by every instance of an app.
 * One EVALSHA per request applies every policy of the plan (enforced, then shadow, each group
 * all-or-nothing) in one atomic Lua script, with Redis `TIME` as the one clock, and returns every
 * per-policy result: one round trip whatever the number of policies. The script is generated for the
 * plan the first time the store sees it (scripts/plan-script.ts: the policies' parameters baked in, the state
 * layout), then cached with the plan; key-names.ts gives the key names.
 *
 * The store fails fast once connected: when the client is not ready it rejects at once instead of
 * letting ioredis hold the command in its offline queue, so a Redis outage costs a request nothing but
 * the failure mode's answer (`onStoreError` on the limiter, judged per node by its failure/ watchdog and
 * breakers). Before the first connection it lets the limiter wait for it (`whenReady`). It never
 * retries, except after loading the script when Redis answers NOSCRIPT (scripts/script-runner.ts). For the
 * limiter's failure handling it names the node that serves a key (`nodeOf`: the Cluster master of the
 * key's slot) and says whose fault an error is (`errorScope`: one key's state, or the node).
 */
import { randomBytes } from 'node:crypto';
import { type Diagnostics, parseValidate, type ValidateOption } from '../../diagnostics.js';
import { RateLimitConfigError } from '../../errors.js';
import { positiveInteger, readOptions, readSwitchOptions } from '../../internal/read-options.js';
import { checkLogger, type Logger, toLogger } from '../../logging.js';
import { counterCell, exporters } from '../../observability/metric-store.js';
import {
  type ConnectionEvent,
  F_ALLOWED,
  F_CHARGED,
  keyAt,
  R_DELAY,
  R_FLAGS,
  R_POSITION,
  R_REMAINING,
  R_RESET,
  RESULT_STRIDE,
  type Store,
  type StoreKey,
  type StorePlan,
  type StoreResult,
  subPlan,
} from '../store.js';
import { StoreLog } from '../store-log.js';
import type { StoreClient } from './clients/store-client.js';
import { toStoreClient } from './clients/to-store-client.js';
import { keySlot } from './cluster-slot.js';
import { slotGroups } from './cluster-split.js';
import { checkClientSettings, checkServerConfig } from './config-checks.js';
import { EvictionWatch, type EvictionWatchOptions, runId, serverAndStats } from './eviction-watch.js';
import { keyHead, keyName, keyTag, markName, policySuffix, raisesName, restoredName } from './key-names.js';
import { heldReceipt, LocalBatcher, type LocalBatchStats } from './local-batch/local-batcher.js';
import { type LocalBatchOptions, parseLocalBatch } from './local-batch/options.js';
import { MarkTokens, NodeMarks } from './node-marks.js';
import type { RedisStoreClient } from './redis-client.js';
import { RedisStoreError, redisErrorScope } from './redis-store-error.js';
import { Returning } from './returning.js';
import { releaseScript, renewScript, restoreManyScript, restoreScript } from './scripts/lease-scripts.js';
import type { LuaScript } from './scripts/lua-script.js';
import { peekScript, refundScript } from './scripts/peek-refund-scripts.js';
import { planScript } from './scripts/plan-script.js';
import { RESTORED } from './scripts/restore-ledger.js';
import { pushArgs, readReply } from './scripts/script-protocol.js';
import { ScriptRunner } from './scripts/script-runner.js';
import { type RepairedState, RepairReporter } from './state-repair.js';

/** How many times the server checks ask again after CONFIG GET failed (checkServer). */
const CONFIG_CHECK_RETRIES = 2;

/** The eviction watch's own policy checks: it logs a change itself, once per change (eviction-watch.ts). */
const QUIET: Diagnostics = { warn() {}, enabled: () => false };

/** Options of `new RedisStore(options)`: the client, the key prefix, the logger, and the checks and watches it runs. */
export interface RedisStoreOptions {
  /**
   * Your Redis client, as it is; the store never closes it: an ioredis or iovalkey `Redis` or `Cluster`
   * (create it with `autoResendUnfulfilledCommands: false`, see `WRN_RL_CLIENT_RESENDS`), a node-redis
   * (v4 and later) `createClient()` or `createCluster()` (call its `connect()`), or any other client as
   * `{ sendCommand: (args) => ... }` (one function that sends `['EVALSHA', sha, '1', key, ...]` and
   * resolves to Redis' reply). The store refuses to send while the client is not ready instead of
   * letting commands wait in its offline queue.
   */
  client: RedisStoreClient;
  /**
   * Prepended to every key name (`<prefix>:v2:{<key>}:<policy>`); give each app sharing a Redis its own.
   * No braces (they would break the hash tag). Defaults to `'tollgate'`.
   */
  prefix?: string;
  /**
   * **Test-only.** `'redis'` (the default) decides with Redis `TIME`, the one clock all instances share.
   * `'limiter'` uses the `now` the limiter passes (its `clock`) instead, so tests can replay traces in
   * virtual time; key expiry times then follow that clock too, so it must run ahead of Redis' clock.
   * Each script takes its call's `now` as the time it runs, so calls must reach Redis in the order of
   * their `now`: a call that meets NOSCRIPT runs again behind later ones, and a refund then finds room
   * that has already passed (load the scripts before replaying a trace: one check and one refund).
   * Never use it in production: instances with skewed clocks would disagree. Defaults to `'redis'`.
   */
  timeSource?: 'redis' | 'limiter';
  /**
   * Where the store's warnings go (`WRN_RL_CLIENT_RESENDS`, `WRN_RL_SENTINEL_NO_FAILOVER_DETECTOR`,
   * `WRN_RL_CORRUPT_STATE`, `WRN_RL_CLIENT_ENDED`, each at most once per store; `WRN_RL_EVICTION_POLICY`, at start
   * and once per later change to an evicting policy; `WRN_RL_STORE_EVICTING`, at most once per
   * `evictionWatch.logIntervalMs`). Defaults to the logger of the first middleware built on the store (or
   * limiter given a `logger` or `validate`); `console` when none comes before the store's first call or
   * within 10 s (stores/store-log.ts).
   */
  logger?: Logger | Console;
  /**
   * `false` silences the store's warnings; `{ WRN_RL_EVICTION_POLICY: false }` one of them (a code that is
   * not a warning's is refused). Defaults to `true` for a store given its own `logger`; else to the
   * `validate` of that first middleware (or limiter), and `true` until there is one.
   */
  validate?: ValidateOption;
  /**
   * Called each time the script found a limiter key holding a value it never writes (a foreign or corrupt
   * value, a key without expiry) and read it as a key never seen, deleting it. Defaults to none; the
   * first such key is also logged once (`WRN_RL_CORRUPT_STATE`).
   */
  onStateRepaired?: (event: RepairedState) => void;
  /**
   * While the store is in use under an evicting `maxmemory-policy` (or one CONFIG would not show), read
   * `evicted_keys` (`INFO stats`, every master) every `intervalMs`, count what Redis evicted in
   * `tollgate_store_evictions_total{store="redis"}` and `store.evictions`, and warn
   * `WRN_RL_STORE_EVICTING` at most once per `logIntervalMs` (eviction-watch.ts). The policy is read
   * again every `policyIntervalMs` while in use (with `evicted_keys`, under `noeviction`), after a
   * reconnect and when another server answers, so a policy changed later is followed. `false` turns it off.
   * Defaults to `{ intervalMs: 10_000, logIntervalMs: 60_000, policyIntervalMs: 30_000 }`.
   */
  evictionWatch?: EvictionWatchOptions | boolean;
  /**
   * Batched budgets for hot keys (local-batch/, docs/capacity.md): a key this process decides at least
   * `minRate` times a second takes a batch of its budget from Redis in one call, charged there as that
   * many requests would be, and is decided in memory until the batch is spent or stale; what is left
   * goes back. Never admits over a limit across any number of processes (fixed-window, sliding-window,
   * token-bucket and gcra; other algorithms, shadow policies and several keys per check stay on the round
   * trip). `true` for the defaults `{ minRate: 50, holdMs: 50, maxShare: 0.1, maxKeys: 10_000 }`. Defaults to `false`.
   */
  localBatch?: LocalBatchOptions | boolean;
}

/** `tollgate_store_calls_total{store="redis"}`: the scripts every RedisStore of the process sent to decide. */
const CALLS = counterCell('storeCalls', { storeKind: 'redis' });

/** The per-plan parts of every call, computed once per plan. */
interface Bound {
  /** Per policy, what precedes the hash tag (key-names.ts `keyHead`: the prefix and the limiter's name). */
  readonly heads: readonly string[];
  readonly suffixes: readonly string[];
  readonly script: LuaScript;
  /** scripts/peek-refund-scripts.ts: the peek and refund twins, generated on first use. */
  peek?: LuaScript;
  refund?: LuaScript;
}

/**
 * The most leases one `restoreMany` script call puts back. Measured on Redis 7.0.15 (one policy, a shared
 * 2-core machine under load): a call of 200 runs 1.5-2 ms on the server (8-10 µs a lease), so other
 * clients' commands wait at most that long behind one; 500 a call took 4-6 ms each (12 at worst) and put
 * 3,000 leases back no sooner (the server's time is the same either way).
 */
const RESTORE_BATCH = 200;

/** One lease `restoreMany` puts back, and one call it sent (Store.restoreMany). */
type LeaseToRestore = Parameters<NonNullable<Store['restoreMany']>>[0][number];
type RestoreCall = ReturnType<NonNullable<Store['restoreMany']>>[number];

/** The leases of one `restoreMany` call: one sub-plan, one Cluster slot. */
interface RestoreBatch {
  readonly plan: StorePlan;
  /** The key of its first lease in this slot (the watchdog's node). */
  readonly key: StoreKey;
  readonly leases: number[];
  readonly names: string[];
  readonly ids: string[];
}

/** The lease scripts by the call that runs them (scripts/lease-scripts.ts). */
const LEASE_SCRIPTS = { release: releaseScript, renew: renewScript, restore: restoreScript } as const;

const OPTION_KEYS: { [K in keyof Required<RedisStoreOptions>]: true } = {
  client: true,
  prefix: true,
  timeSource: true,
  logger: true,
  validate: true,
  onStateRepaired: true,
  evictionWatch: true,
  localBatch: true,
};

/** The holder of the state spaces of clients whose options name their keyspace: every such client, one registry. */
const KEYSPACES = {};

/** A lease script's reply: `n` flags (1: live), one per key it was given; else ERR_RL_STORE_REPLY. */
function leaseFlags(reply: unknown, n: number, script: string): number[] {
  if (Array.isArray(reply) && reply.length === n) return reply as number[];
  throw new RedisStoreError('ERR_RL_STORE_REPLY', `expected ${n} flags from ${script}, got ${JSON.stringify(reply)?.slice(0, 200)}`);
}

/** The Redis store: one Lua script applies every policy of a request atomically, on Redis time, on one node or a Cluster. */
export class RedisStore implements Store {
  readonly kind = 'redis';
  readonly prefix: string;
  /** Stores on one keyspace (clients/keyspace.ts), or one client, with one prefix see the same keys (stores/state-claims.ts). */
  readonly stateSpace: NonNullable<Store['stateSpace']>;
  readonly timeSource: 'redis' | 'limiter';
  private readonly client: StoreClient;
  private readonly scripts: ScriptRunner;
  /** Where its warnings go: its own `logger` and `validate`, else the first limiter's (store-log.ts). */
  private readonly diagnostics: StoreLog;
  private readonly repairs: RepairReporter;
  /** False until the first call on a ready client starts the server checks (config-checks.ts). */
  private checked = false;
  /** eviction-watch.ts: its settings, the watch (from the first server check on, whatever the policy), and use since its last reading. */
  private readonly watchOptions: Readonly<Required<EvictionWatchOptions>> | false;
  private watch: EvictionWatch | undefined;
  private unwatchReady: (() => void) | undefined;
  private used = false;
  private closed = false;
  private readonly bindings = new WeakMap<StorePlan, Bound>();
  /** A Cluster's marks, one per master (markAlive, markNodeAlive); undefined on one server. */
  private readonly nodeMarks: NodeMarks | undefined;
  /** The single server's marks as this store last found them (markAlive). */
  private readonly markTokens: MarkTokens;
  /** The keyspace token (`spaceToken`), read once. */
  private space: Promise<string | undefined> | undefined;

  constructor(options: RedisStoreOptions) {
    const o = readOptions(options, OPTION_KEYS, 'options', '{ client: new Redis() } (RedisStore options)');
    const client = toStoreClient(o.client);
    if (client === undefined) {
      throw new RateLimitConfigError(
        'ERR_RL_INVALID_CLIENT',
        'client',
        'must be an ioredis or iovalkey Redis or Cluster, a node-redis createClient() or createCluster() client, ' +
          'or { sendCommand: (args) => Promise<reply> } for any other client',
        o.client,
      );
    }
    const prefix = o.prefix ?? 'tollgate';
    if (typeof prefix !== 'string' || prefix.length === 0 || prefix.length > 64 || /[{}]/.test(prefix)) {
      throw new RateLimitConfigError(
        'ERR_RL_INVALID_PREFIX',
        'prefix',
        'must be 1 to 64 characters without braces (braces would break the Redis Cluster hash tag)',
        o.prefix,
      );
    }
    if (/(^|:)v\d+$/.test(prefix)) {
      // `tollgate:v2` unnamed and `tollgate` named `v2` would both write `tollgate:v2:v2:{key}:...`.
      throw new RateLimitConfigError(
        'ERR_RL_INVALID_PREFIX',
        'prefix',
        "must not end in a layout version segment (':v2'): a limiter name after the layout could then pass for part of the prefix",
        o.prefix,
      );
    }
    const timeSource = o.timeSource ?? 'redis';
    if (timeSource !== 'redis' && timeSource !== 'limiter') {
      throw new RateLimitConfigError(
        'ERR_RL_INVALID_TIME_SOURCE',
        'timeSource',
        "must be 'redis' (production) or 'limiter' (tests only)",
        o.timeSource,
      );
    }
    checkLogger(o.logger, 'logger');
    if (o.onStateRepaired !== undefined && typeof o.onStateRepaired !== 'function') {
      throw new RateLimitConfigError('ERR_RL_INVALID_HOOK', 'onStateRepaired', 'must be a function', o.onStateRepaired);
    }
    this.watchOptions = parseEvictionWatch(o.evictionWatch);
    this.diagnostics = new StoreLog(
      o.logger === undefined ? undefined : toLogger(o.logger),
      o.validate === undefined ? undefined : parseValidate(o.validate),
    );
    this.repairs = new RepairReporter(this.diagnostics, o.onStateRepaired);
    checkClientSettings(client, this.diagnostics);
    this.client = client;
    this.scripts = new ScriptRunner(client);
    this.prefix = prefix;
    this.nodeMarks = client.isCluster ? new NodeMarks(client, prefix) : undefined;
    this.markTokens = new MarkTokens(client);
    this.stateSpace =
      client.keyspace === undefined
        ? { holder: o.client as object, name: prefix, prefix }
        : { holder: KEYSPACES, name: `${client.keyspace} ${prefix}`, where: `${client.keyspace}, prefix '${prefix}'`, prefix };
    this.timeSource = timeSource;
    const batch = parseLocalBatch(o.localBatch);
    if (batch !== false) {
      this.batcher = new LocalBatcher(
        batch,
        {
          charge: (key, plan, cost, now) => this.runPlan(key, plan, cost, now, false),
          giveBack: (key, plan, cost, marks, now) => this.runRefund(key, plan, cost, marks, now, true),
        },
        timeSource === 'limiter',
      );
    }
  }

  /** `localBatch`: the batcher (local-batch/local-batcher.ts), undefined when off. */
  private readonly batcher: LocalBatcher | undefined;
  /** The refunds and batch give-backs on their way, per key (`returning`). */
  private readonly giving = new Returning();

  /** `localBatch` is on (see `Store.batches`). */
  get batches(): boolean {
    return this.batcher !== undefined;
  }

  /** `localBatch`: decisions answered in memory, calls and units charged and given back; undefined when off. */
  get localBatchStats(): Readonly<LocalBatchStats> | undefined {
    return this.batcher?.stats;
  }

  /** `localBatch`: milli-units this process holds now, over all keys (what other processes cannot admit); 0 when off. */
  get localBatchHeld(): number {
    return this.batcher?.heldMilli() ?? 0;
  }

  /**
   * Times Redis answered NOSCRIPT (a restart, a failover, a new node, SCRIPT FLUSH) and the store sent a
   * script in full: one SCRIPT LOAD per node however many calls met NOSCRIPT together, or an EVAL.
   */
  get scriptReloads(): number {
    return this.scripts.sent;
  }

  /**
   * Generates the plan's script, so that the limiter's first request does not. Throws
   * `RateLimitConfigError` when one script cannot hold the plan (more than 16 policies).
   */
  prepare(plan: StorePlan): void {
    this.bind(plan);
  }

  /** The last plan bound and its binding: a limiter passes the same plan on every call. */
  private lastPlan: StorePlan | undefined;
  private lastBound: Bound | undefined;

  /**
   * The plan's binding when a call may go out now; otherwise why not (a plan one script cannot hold, or
   * a client that would queue the command), returned rather than thrown so callers reject without a try.
   */
  private sendable(plan: StorePlan): Bound | Error {
    try {
      const bound = this.bind(plan);
      return this.notReady() ?? bound;
    } catch (tooLarge) {
      return tooLarge as Error;
    }
  }

  private bind(plan: StorePlan): Bound {
    if (plan === this.lastPlan) return this.lastBound as Bound;
    let b = this.bindings.get(plan);
    if (b === undefined) {
      b = {
        heads: plan.policies.map((p) => keyHead(this.prefix, p.limiter)),
        suffixes: plan.policies.map(policySuffix),
        script: planScript(plan),
      };
      this.bindings.set(plan, b);
    }
    this.lastPlan = plan;
    this.lastBound = b;
    return b;
  }

  /** The Redis keys that hold the state of `key` under `plan`, one per policy in plan order (for operators and tests). */
  keyNames(key: string, plan: StorePlan): string[] {
    const tag = keyTag(key);
    const b = this.bind(plan);
    return b.suffixes.map((s, i) => keyName(b.heads[i] as string, tag, s));
  }

  /** The first connection's wait, shared by every limiter on this store; undefined once connected. */
  private firstConnection: Promise<void> | undefined;
  private connected = false;

  /**
   * Before the client's first `'ready'`: a promise that settles when it is ready, gone for good
   * (`'end'`), or after `maxWaitMs`, so the limiter's first checks wait for the connection instead of
   * answering by the failure mode. Undefined once the client has been ready: from then on a client that
   * is not ready is an outage, refused at once (`ERR_RL_STORE_NOT_READY`).
   */
  whenReady(maxWaitMs: number): Promise<void> | undefined {
    if (this.connected) return undefined;
    const client = this.client;
    // A Cluster is ready when its masters are: ioredis connects each on its first command.
    const ready = () => client.status === 'ready' && client.nodesConnecting?.() !== true;
    if (ready()) {
      this.connected = true;
      return undefined;
    }
    if (client.status === 'end') return undefined;
    if (this.firstConnection !== undefined) return this.firstConnection;
    // A lazyConnect client connects on its first command; we send none until it is ready, so start it.
    if (client.status === 'wait') client.connect?.().catch(() => undefined);
    const deadline = performance.now() + maxWaitMs;
    this.firstConnection = new Promise<void>((resolve) => {
      const poll = () => {
        const status = client.status;
        const done = ready();
        if (done) this.connected = true;
        if (done || status === 'end' || performance.now() >= deadline) {
          this.firstConnection = undefined;
          resolve();
          return;
        }
        setTimeout(poll, 2).unref?.();
      };
      poll();
    });
    return this.firstConnection;
  }

  /**
   * The node that serves `key`: on a Cluster the address of the master of its slot, as the client's slot
   * map has it (after a failover, the new master: its keys start healthy); otherwise the one connection.
   */
  nodeOf(key: string, plan: StorePlan): string {
    const client = this.client;
    if (!client.isCluster) return 'redis';
    return client.nodeAddress(this.keyNames(key, plan)[0] as string) ?? 'cluster';
  }

  /** Whose fault `error` is: one key's state (`'key'`) or the node (`'node'`); see `redisErrorScope`. */
  errorScope(error: unknown): 'key' | 'node' {
    return redisErrorScope(error);
  }

  /** Rejects when the client would queue the command instead of sending it. */
  private notReady(): RedisStoreError | undefined {
    const status = this.client.status;
    if (status === 'ready') {
      if (!this.checked) {
        this.checked = true;
        this.diagnostics.release();
        void this.checkServer();
      }
      if (!this.used) this.inUse();
      if (this.nodeMarks?.waiting === true) this.nodeMarks.flush();
      if (this.markTokens.waiting) this.markTokens.flush();
      return undefined;
    }
    // A lazyConnect client connects on its first command; we send none until it is ready, so start it.
    if (status === 'wait') this.client.connect?.().catch(() => undefined);
    if (status === 'end') return this.ended();
    return new RedisStoreError(
      'ERR_RL_STORE_NOT_READY',
      `the Redis client is '${status}', not 'ready'; RedisStore does not let commands wait in the client's offline queue, ` +
        "so the limiter's onStoreError answers until the client is ready again",
    );
  }

  apply(key: StoreKey, plan: StorePlan, cost: number, now: number, lease?: number): StoreResult | Promise<StoreResult> {
    // localBatch: a hot key is answered from what this process holds, or takes a batch (local-batch/).
    if (this.batcher !== undefined && lease === undefined && typeof key === 'string') {
      const held = this.batcher.apply(key, plan, cost, now);
      if (held !== undefined) return held;
    }
    return this.runPlan(key, plan, cost, now, false, lease);
  }

  /** `localBatch`: what this process holds for `key` (a batch, a rejection still standing), without I/O. */
  held(key: StoreKey, plan: StorePlan, cost: number, now: number): StoreResult | undefined {
    return this.batcher !== undefined && typeof key === 'string' ? this.batcher.held(key, plan, cost, now) : undefined;
  }

  /** `localBatch`: the batches held for `key`, and those a call in flight brings, count `charged` (Store.chargedBeside). */
  chargedBeside(key: StoreKey, plan: StorePlan, charged: ArrayLike<number>): void {
    if (this.batcher !== undefined && typeof key === 'string') this.batcher.chargedBeside(key, plan, charged);
  }

  /** `localBatch`: what this process's replies tell of `key`'s count just before Redis lost it (Store.countAtLoss). */
  countAtLoss(key: StoreKey, plan: StorePlan, now: number): ArrayLike<number> | undefined {
    return this.batcher !== undefined && typeof key === 'string' ? this.batcher.countAtLoss(key, plan, now) : undefined;
  }

  /** `localBatch`: the batches held for `key` were taken from a state Redis lost (Store.lostHeld): dropped, as at a reset. */
  lostHeld(key: StoreKey, plan: StorePlan): void {
    if (this.batcher !== undefined && typeof key === 'string') this.batcher.forget(key, plan);
  }

  /** This store's lease ids: unique across processes, so one process never ends another's lease. */
  private readonly instance = randomBytes(9).toString('base64url');

  /** Ends `lease` in the plan's concurrency policies (kernels/concurrency.ts); per Cluster slot when they differ. */
  release(key: StoreKey, plan: StorePlan, lease: number, now: number): Promise<void> {
    return this.leaseCall(key, plan, 'release', this.leaseArgs(lease, now)).then(() => undefined);
  }

  /** Renews `lease` in the plan's concurrency policies; true when it was live in all of them. */
  renew(key: StoreKey, plan: StorePlan, lease: number, now: number): Promise<boolean> {
    return this.leaseCall(key, plan, 'renew', this.leaseArgs(lease, now)).then((all) => all.every((x) => x === 1));
  }

  /** Renews `lease`, putting it back where Redis lost it (a restart, a failover); true when it was live in all. */
  restore(key: StoreKey, plan: StorePlan, lease: number, now: number): Promise<boolean> {
    return this.leaseCall(key, plan, 'restore', this.leaseArgs(lease, now)).then((all) => all.every((x) => x === 1));
  }

  /**
   * Puts many held leases back at once (Store.restoreMany): one script call (scripts/lease-scripts.ts
   * `restoreManyScript`) per plan and Cluster slot (a script's keys must share one), of at most
   * RESTORE_BATCH leases, each script loaded first on its node, so that on a fresh server no call meets
   * NOSCRIPT. Before, one `restore` per lease, each sent twice on a restarted server (6,000 EVALSHA for
   * 3,000 leases, 250-360 ms), and the over-limit window after a restart lasted that long: now 15 calls,
   * 21-69 ms on a loaded 2-core machine, 112-197 ms before on the same (lease-restore-batch.test.ts).
   */
  restoreMany(leases: readonly LeaseToRestore[], now: number): RestoreCall[] {
    const calls: RestoreCall[] = [];
    const open = new Map<StorePlan, Map<number, RestoreBatch>>();
    const loaded = new Set<string>();
    const send = (batch: RestoreBatch) => calls.push(this.sendRestoreBatch(batch, now, loaded));
    // Leases no call can go out for now (the client not ready): one refusal for them all.
    const refused: number[] = [];
    let refusal: Error | undefined;
    for (let i = 0; i < leases.length; i++) {
      const { key, plan, lease } = leases[i] as LeaseToRestore;
      const b = this.sendable(plan);
      if (!isBound(b)) {
        refused.push(i);
        refusal ??= b;
        continue;
      }
      const names = this.keysOf(key, b);
      for (const at of this.leaseParts(plan, names)) {
        const sub = subPlan(plan, at);
        const slot = this.client.isCluster ? keySlot(names[at[0] as number] as string) : 0;
        let bySlot = open.get(sub);
        if (bySlot === undefined) {
          bySlot = new Map();
          open.set(sub, bySlot);
        }
        let batch = bySlot.get(slot);
        if (batch === undefined) {
          batch = { plan: sub, key: typeof key === 'string' ? key : keyAt(key, at[0] as number), leases: [], names: [], ids: [] };
          bySlot.set(slot, batch);
        }
        batch.leases.push(i);
        for (const p of at) batch.names.push(names[p] as string);
        batch.ids.push(`${this.instance}:${lease}`);
        if (batch.leases.length >= RESTORE_BATCH) {
          bySlot.delete(slot);
          send(batch);
        }
      }
    }
    for (const bySlot of open.values()) for (const batch of bySlot.values()) send(batch);
    if (refusal !== undefined) calls.push({ leases: refused, key: leases[refused[0] as number]?.key ?? '', live: Promise.reject(refusal) });
    return calls;
  }

  /** The positions of `plan`'s concurrency policies, grouped by the Cluster slot of their key (`names`): one lease call each. */
  private leaseParts(plan: StorePlan, names: readonly string[]): number[][] {
    const positions = plan.policies.flatMap((p, i) => (p.algorithm === 'concurrency' ? [i] : []));
    if (positions.length === 0) return [];
    const groups = this.client.isCluster ? slotGroups(positions.map((i) => names[i] as string)) : undefined;
    return groups === undefined ? [positions] : groups.map((g) => g.map((k) => positions[k] as number));
  }

  /**
   * Sends one batch of `restoreMany`, after a SCRIPT LOAD of its script on its node (once per node and
   * script in `loaded`), sent ahead of it on the same connection and not waited for: a load that fails or
   * reaches another connection later leaves the call to meet NOSCRIPT, and ScriptRunner loads it then.
   */
  private sendRestoreBatch(batch: RestoreBatch, now: number, loaded: Set<string>): RestoreCall {
    const script = restoreManyScript(batch.plan);
    const host = this.client.scriptHost(batch.names[0] as string);
    if (host !== undefined && !loaded.has(`${host.id} ${script.sha}`)) {
      loaded.add(`${host.id} ${script.sha}`);
      host.load(script.lua).then(undefined, () => undefined);
    }
    const n = batch.plan.policies.length;
    const args = [...batch.names, this.timeSource === 'redis' ? '' : String(now), ...batch.ids];
    const live = this.scripts.run(script, batch.names.length, args, (reply) => {
      const flags = leaseFlags(reply, batch.names.length, script.name);
      return batch.leases.map((_, j) => flags.slice(j * n, (j + 1) * n).every((x) => x === 1));
    });
    return { leases: batch.leases, key: batch.key, live };
  }

  /** ARGV of the lease scripts: now ('' to read Redis TIME) and this store's id of `lease`. */
  private leaseArgs(lease: number, now: number): string[] {
    return [this.timeSource === 'redis' ? '' : String(now), `${this.instance}:${lease}`];
  }

  /**
   * Sets the mark of `plan`'s limiter (key-names.ts `markName`) where it is missing; true when it changed
   * since this store last found it (node-marks.ts `MarkTokens`): this Redis lost everything since (a
   * restart without persistence, FLUSHALL, a failover to an empty replica), or the mark alone went, and
   * this store or another process set it again. Always false, and nothing sent, on a client whose
   * connection events tollgate cannot watch (it would not know when to ask), and before the client is
   * ready. On a Cluster, sets the mark on every master (node-marks.ts), once the Cluster is ready, and
   * resolves false: a master's loss is told by `markNodeAlive`.
   */
  markAlive(plan: StorePlan): Promise<boolean> {
    const limiter = plan.policies[0]?.limiter;
    if (this.nodeMarks !== undefined) {
      this.nodeMarks.markAll(limiter);
      return Promise.resolve(false);
    }
    // Not before the client is ready (a lazyConnect client is not started by it): its 'ready' sets the mark.
    if (this.client.watch === undefined || this.client.status !== 'ready') return Promise.resolve(false);
    return this.markTokens.ask(markName(this.prefix, limiter));
  }

  /**
   * The token of the mark limiters without a name keep under this store's prefix (`<prefix>:v2:~alive`, set
   * where it is missing, as `markAlive` does): stores that read the same token reach the same keys
   * (`Store.spaceToken`), whatever their clients' options say. Read once, when the client is ready: at
   * once, or at its first 'ready' (a lazyConnect client is not started by it). Undefined on a client that
   * is not ready and whose connection tollgate cannot watch, or when the read fails; that answer is not
   * kept, so a later ask reads again (state-claims.ts asks again while it cannot compare).
   */
  spaceToken(): Promise<string | undefined> {
    this.space ??= this.readSpaceToken().then((token) => {
      if (token === undefined) this.space = undefined;
      return token;
    });
    return this.space;
  }

  private readSpaceToken(): Promise<string | undefined> {
    return new Promise((resolve) => {
      const read = () => this.markTokens.read(markName(this.prefix, undefined)).then(resolve, () => resolve(undefined));
      if (this.client.status === 'ready') return void read();
      const watch = this.client.watch;
      if (watch === undefined) return resolve(undefined);
      const stop = watch((event) => {
        if (event !== 'ready') return;
        stop();
        void read();
      });
    });
  }

  /**
   * On a Cluster, sets the mark of `plan`'s limiter on `node` (a master, as `nodeOf` names it); true when
   * it was missing where this store had seen it set: the master lost its keys (a restart without
   * persistence). Undefined on one server, whose mark `markAlive` keeps.
   */
  markNodeAlive(plan: StorePlan, node: string): Promise<boolean> | undefined {
    return this.nodeMarks?.mark(plan.policies[0]?.limiter, node);
  }

  /**
   * Per node (as `nodeOf` names it: `'redis'`, or each master's `host:port` on a Cluster), the `run_id` of
   * the server that answers there now (`Store.servers`; with `node`, of that master alone); empty before the
   * client is ready, and without the nodes that refuse INFO.
   */
  servers(node?: string): Promise<ReadonlyMap<string, string>> {
    if (this.client.status !== 'ready') return Promise.resolve(new Map());
    return this.client.info('server', node).then((nodes) => {
      const ids = new Map<string, string>();
      for (const n of nodes) {
        const id = runId(n.text);
        if (id !== undefined) ids.set(n.node, id);
      }
      return ids;
    });
  }

  /**
   * Raises the ledger of `key`'s state under `plan` (its one policy) to `used` milli-units, kept `ttlMs`,
   * and resolves to what it held before (before raise `raise`'s first time, if named: scripts/restore-ledger.ts):
   * see `Store.restored`.
   */
  restored(key: string, plan: StorePlan, used: number, ttlMs: number, raise = ''): Promise<number> {
    const b = this.sendable(plan);
    if (!isBound(b)) return Promise.reject(b);
    const [head, tag, suffix] = [b.heads[0] as string, keyTag(key), b.suffixes[0] as string];
    const names = [restoredName(head, tag, suffix), raisesName(head, tag, suffix)];
    const args = [...names, String(Math.max(0, Math.floor(used))), String(Math.max(1, Math.ceil(ttlMs))), raise];
    return this.scripts.run(RESTORED, 2, args, (reply) => {
      const before = Number(reply);
      if (Number.isFinite(before)) return before;
      throw new RedisStoreError(
        'ERR_RL_STORE_REPLY',
        `expected a number from ${RESTORED.name}, got ${JSON.stringify(reply)?.slice(0, 200)}`,
      );
    });
  }

  /** On a Cluster, calls `listener` when a limiter on this store found a master lost its keys (`markNodeAlive`); see `Store.watchNodeLoss`. */
  watchNodeLoss(listener: (node: string, limiter: string | undefined) => void): () => void {
    return this.nodeMarks?.watchLoss(listener) ?? (() => undefined);
  }

  /** The client's connection closing and ready again (clients/connection-events.ts), for the lease keeper and the budget restore. */
  watchConnection(listener: (event: ConnectionEvent) => void): () => void {
    return this.client.watch?.(listener) ?? (() => undefined);
  }

  private leaseCall(key: StoreKey, plan: StorePlan, kind: 'release' | 'renew' | 'restore', argv: readonly string[]): Promise<number[]> {
    const b = this.sendable(plan);
    if (!isBound(b)) return Promise.reject(b);
    const names = this.keysOf(key, b);
    return Promise.all(
      this.leaseParts(plan, names).map((at) => {
        const sub = subPlan(plan, at);
        const script = LEASE_SCRIPTS[kind](sub);
        return this.scripts.run(script, at.length, [...at.map((i) => names[i] as string), ...argv], (reply) =>
          leaseFlags(reply, at.length, script.name),
        );
      }),
    ).then((replies) => replies.flat());
  }

  /**
   * The peek twin (scripts/peek-refund-scripts.ts): what `apply` would answer, charging nothing. With
   * `localBatch`, the units this process holds for the key count as not spent, as its checks spend them.
   */
  peek(key: StoreKey, plan: StorePlan, cost: number, now: number): Promise<StoreResult> {
    const unspent = this.batcher !== undefined && typeof key === 'string' ? this.batcher.unspent(key, plan, now) : undefined;
    const reply = this.runPlan(key, plan, cost, now, true);
    return unspent === undefined ? reply : reply.then((r) => unspent.addTo(r, cost));
  }

  /** `Store.returning`: the key's refunds and batch give-backs still on their way. */
  returning(key: StoreKey): Promise<unknown> | undefined {
    return this.giving.of(key);
  }

  /**
   * The refund twin (scripts/peek-refund-scripts.ts): gives back a charge named by its marks (see
   * `Store.refund`). With `localBatch`, a bucket takes a charge back only while nothing was charged after
   * it, as a batch's give-back does: a later charge may be a batch another process holds, and moving the
   * bucket back under it admits past the limit (three batching limiters on one key, round-trip decisions
   * refunded: 1 to 2 over in a property test).
   */
  refund(key: StoreKey, plan: StorePlan, cost: number, marks: readonly number[], now: number): Promise<ArrayLike<number>> {
    const n = plan.policies.length;
    if (this.batcher === undefined) return this.runRefund(key, plan, cost, marks, now, false);
    // A batched bucket decision: its units stay with the batch (local-batch/batch.ts), nothing goes back.
    if (heldReceipt(marks, n)) return Promise.resolve(new Array<number>(n).fill(0));
    if (typeof key === 'string') this.batcher.unblock(key, plan);
    return this.runRefund(key, plan, cost, marks, now, true);
  }

  /**
   * The refund script on `marks`; `newestOnly` (a localBatch give-back, whose key is a string) has a bucket
   * take it only while nothing was charged after the batch (kernels/refund-frame.ts bucketRefund).
   */
  private runRefund(
    key: StoreKey,
    plan: StorePlan,
    cost: number,
    marks: readonly number[],
    now: number,
    newestOnly: boolean,
  ): Promise<ArrayLike<number>> {
    const b = this.sendable(plan);
    if (!isBound(b)) return Promise.reject(b);
    const n = plan.policies.length;
    const args = this.keysOf(key, b);
    const groups = typeof key !== 'string' && this.client.isCluster ? slotGroups(args) : undefined;
    if (groups !== undefined) return this.giving.track(key, this.refundSplit(key as readonly string[], plan, cost, marks, now, groups));
    args.push(this.timeSource === 'redis' ? '' : String(now), String(cost));
    for (const m of marks) args.push(Number.isNaN(m) ? '' : String(m));
    if (newestOnly) args.push('1');
    b.refund ??= refundScript(plan);
    const script = b.refund;
    const call = this.scripts.run(script, n, args, (reply) => {
      if (Array.isArray(reply) && reply.length === n && reply.every((x) => x === 0 || x === 1)) return reply as number[];
      throw new RedisStoreError(
        'ERR_RL_STORE_REPLY',
        `expected ${n} flags from ${script.name}, got ${JSON.stringify(reply)?.slice(0, 200)}; the client must return Redis replies unchanged`,
      );
    });
    return this.giving.track(key, call);
  }

  /** A refund whose keys live in several slots: one refund script per slot, each atomic on its node. */
  private async refundSplit(
    key: readonly string[],
    plan: StorePlan,
    cost: number,
    marks: readonly number[],
    now: number,
    groups: readonly number[][],
  ): Promise<ArrayLike<number>> {
    const done = new Array<number>(plan.policies.length).fill(0);
    await Promise.all(
      groups.map(async (g) => {
        const n = plan.policies.length;
        const subMarks = [...g, ...g.map((i) => n + i), 2 * n].map((i) => marks[i] ?? 0);
        if (subMarks.slice(0, g.length).every((m) => Number.isNaN(m))) return;
        const r = await this.refund(
          g.map((i) => key[i] as string),
          subPlan(plan, g),
          cost,
          subMarks,
          now,
        );
        g.forEach((i, j) => {
          done[i] = r[j] as number;
        });
      }),
    );
    return done;
  }

  /**
   * Cluster, keys in several slots: reserve in every slot (each group of policies atomic on its node, in
   * parallel), confirm when all charged, else give back the groups that charged (cluster-split.ts).
   */
  private async runSplit(
    key: readonly string[],
    plan: StorePlan,
    cost: number,
    now: number,
    peek: boolean,
    groups: readonly number[][],
    lease?: number,
  ): Promise<StoreResult> {
    const n = plan.policies.length;
    const e = plan.enforcedCount;
    const settled = await Promise.allSettled(
      groups.map((g) =>
        this.runPlan(
          g.map((i) => key[i] as string),
          subPlan(plan, g),
          cost,
          now,
          peek,
          lease,
        ),
      ),
    );
    const out = new Array<number>(n * RESULT_STRIDE + 1).fill(0);
    let base: number | undefined;
    let failure: unknown;
    settled.forEach((s, k) => {
      const g = groups[k] as number[];
      if (s.status === 'rejected') {
        failure ??= s.reason;
        return;
      }
      const r = s.value;
      const groupNow = r[g.length * RESULT_STRIDE] as number;
      const anchor: number = base ?? groupNow;
      base = anchor;
      g.forEach((i, j) => {
        for (let f = 0; f < RESULT_STRIDE; f++) out[i * RESULT_STRIDE + f] = r[j * RESULT_STRIDE + f] as number;
        // One `now` for the reply: resets move by the nodes' clock difference, so marks stay exact.
        out[i * RESULT_STRIDE + R_RESET] = (r[j * RESULT_STRIDE + R_RESET] as number) + (groupNow - anchor);
      });
    });
    out[n * RESULT_STRIDE] = base ?? now;
    const charged = (i: number) => ((out[i * RESULT_STRIDE + R_FLAGS] as number) & F_CHARGED) !== 0;
    const range = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => from + k);
    const give: number[] = [];
    for (const members of [range(0, e), range(e, n)]) {
      if (failure === undefined && members.every(charged)) continue;
      for (const i of members) {
        if (!charged(i)) continue;
        give.push(i);
        // Admitted here, not charged in the end: report the state as it stands, as one script would.
        const o = i * RESULT_STRIDE;
        const p = plan.policies[i] as StorePlan['policies'][number];
        out[o + R_FLAGS] = F_ALLOWED;
        // A lease is one slot whatever the cost.
        out[o + R_REMAINING] = Math.min(p.capMilli, (out[o + R_REMAINING] as number) + (p.algorithm === 'concurrency' ? 1000 : cost));
        out[o + R_DELAY] = 0;
      }
    }
    if (!peek && give.length > 0) {
      const marks = plan.policies.map((_, i) =>
        give.includes(i) ? (out[n * RESULT_STRIDE] as number) + (out[i * RESULT_STRIDE + R_RESET] as number) : Number.NaN,
      );
      marks.push(...plan.policies.map((_, i) => (give.includes(i) ? (out[i * RESULT_STRIDE + R_POSITION] as number) : Number.NaN)));
      // Best effort: a give-back that fails leaves the reservation to expire with its state (a lease: its lease time).
      await Promise.all([
        this.refund(key, plan, cost, marks, now).then(undefined, () => undefined),
        lease !== undefined && give.some((i) => plan.policies[i]?.algorithm === 'concurrency')
          ? this.release(key, plan, lease, now).then(undefined, () => undefined)
          : undefined,
      ]);
    }
    if (failure !== undefined) throw failure;
    return out;
  }

  /** KEYS: one per policy, each under its own key's hash tag. */
  private keysOf(key: StoreKey, b: Bound): string[] {
    const args: string[] = [];
    const single = typeof key === 'string' ? keyTag(key) : undefined;
    for (let i = 0; i < b.suffixes.length; i++) {
      args.push(keyName(b.heads[i] as string, single ?? keyTag(keyAt(key, i)), b.suffixes[i] as string));
    }
    return args;
  }

  private runPlan(key: StoreKey, plan: StorePlan, cost: number, now: number, peek: boolean, lease?: number): Promise<StoreResult> {
    const b = this.sendable(plan);
    if (!isBound(b)) return Promise.reject(b);
    const n = plan.policies.length;
    // KEYS (one per policy), then ARGV as scripts/script-protocol.ts says: the cost unless 1000, and a now for tests only.
    const args = this.keysOf(key, b);
    // Several keys in different Cluster slots: reserve, then confirm or give back (cluster-split.ts).
    const groups = typeof key !== 'string' && this.client.isCluster ? slotGroups(args) : undefined;
    if (groups !== undefined) return this.runSplit(key as readonly string[], plan, cost, now, peek, groups, lease);
    pushArgs(args, cost, this.timeSource === 'redis' ? undefined : now, lease === undefined ? undefined : `${this.instance}:${lease}`);
    let script = b.script;
    if (exporters.attached) CALLS.value += peek ? 0 : 1;
    if (peek) {
      b.peek ??= peekScript(plan);
      script = b.peek;
    }
    // One promise per call: the reply is checked in the same step that would recover from NOSCRIPT. The
    // check is an inline arrow (a named one would cost a keep-names helper call per request under tsx).
    const keyNames = args;
    return this.scripts.run(script, n, args, (reply) => this.answer(reply, key, plan, keyNames, script));
  }

  /** The first limiter built on this store: its logger and `validate`, for those the store was not given (store-log.ts). */
  logTo(logger: Logger, validate: ValidateOption): void {
    this.diagnostics.adopt(logger, validate);
  }

  /** The script's reply for `key`, read (scripts/script-protocol.ts); a mask of repaired keys after it is reported, then dropped. */
  private answer(reply: unknown, key: StoreKey, plan: StorePlan, names: readonly string[], script: LuaScript): StoreResult {
    const n = plan.policies.length;
    const result = readReply(reply, n, script.name);
    if (result.length > n * RESULT_STRIDE + 1) this.repairs.report(key, plan, names, result.pop() as number);
    return result;
  }

  /**
   * The server checks of the first connection, then the eviction watch, whatever the policy: it asks the
   * policy again while the store is in use, after a reconnect and on another server (eviction-watch.ts).
   */
  private async checkServer(tries = 0): Promise<void> {
    const policy = await checkServerConfig(this.client, this.diagnostics);
    if (this.closed) return;
    // CONFIG GET failed: for good (a managed Redis that renames CONFIG) or for now (a Cluster still
    // finding its masters, a failover under way). Asked again after 1 s and 2 s before the watch starts blind.
    if (policy === 'unknown' && tries < CONFIG_CHECK_RETRIES) {
      setTimeout(() => void this.checkServer(tries + 1), 1_000 * 2 ** tries).unref();
      return;
    }
    if (this.watchOptions === false) return;
    const watch = new EvictionWatch({
      ...this.watchOptions,
      info: () => serverAndStats(this.client),
      policy,
      // The startup line was this check's (once per store); the watch logs each later change itself.
      checkPolicy: () => checkServerConfig(this.client, QUIET),
      logger: this.diagnostics.logger,
      warn: this.diagnostics.enabled('WRN_RL_STORE_EVICTING'),
      warnPolicy: this.diagnostics.enabled('WRN_RL_EVICTION_POLICY'),
      takeUse: () => {
        const used = this.used;
        this.used = false;
        return used;
      },
    });
    this.watch = watch;
    // Ready again after a reconnect: maybe another server (a restart, a failover), maybe another policy.
    this.unwatchReady = this.watchConnection((event) => {
      if (event === 'ready') watch.reconnected();
    });
    this.used = true;
    watch.start();
  }

  /**
   * The client has ended (ioredis, iovalkey: status `'end'`) and will never reconnect by itself: its
   * `retryStrategy` gave up, or something closed it (ioredis' `failoverDetector` can, mid-failover). An
   * outage that began as a reconnect says nothing more of it, so the first call after it warns, once.
   */
  private ended(): RedisStoreError {
    this.diagnostics.warn(
      'WRN_RL_CLIENT_ENDED',
      "the Redis client has ended and will not reconnect (status 'end'); every check is answered by onStoreError until the app gives the limiter a store with a new client",
      { store: 'redis' },
    );
    return new RedisStoreError(
      'ERR_RL_STORE_NOT_READY',
      "the Redis client has ended ('end') and will not reconnect: its retryStrategy gave up or something closed it; the limiter's onStoreError answers every check",
    );
  }

  /** The first call since the eviction watch last read: it resumes if it stopped for want of use. */
  private inUse(): void {
    this.used = true;
    if (this.watch !== undefined && !this.watch.running) this.watch.start();
  }

  /**
   * Keys Redis evicted while this store watched (`evictionWatch`), over all masters: every key of the
   * server, limiter state among them. 0 while no policy evicts, or when the watch is off.
   */
  get evictions(): number {
    return this.watch?.evictions ?? 0;
  }

  /** Stops the eviction watch and gives back what `localBatch` holds. The client is the app's: the store never closes it. */
  close(): void | Promise<void> {
    this.closed = true;
    this.watch?.close();
    this.unwatchReady?.();
    this.diagnostics.release();
    // localBatch: what this process holds goes back to Redis.
    return this.batcher?.close();
  }

  reset(key: string, plan: StorePlan): Promise<void> {
    this.batcher?.forget(key, plan);
    const error = this.notReady();
    if (error !== undefined) return Promise.reject(error);
    return this.client.del(this.keyNames(key, plan)).then(() => undefined);
  }
}

function parseEvictionWatch(input: EvictionWatchOptions | boolean | undefined): Readonly<Required<EvictionWatchOptions>> | false {
  const options = readSwitchOptions(
    input,
    { intervalMs: true, logIntervalMs: true, policyIntervalMs: true },
    'evictionWatch',
    '{ intervalMs: 10_000, logIntervalMs: 60_000, policyIntervalMs: 30_000 }',
    'ERR_RL_INVALID_OPTION',
    'on',
  );
  if (options === false) return false;
  const { intervalMs = 10_000, logIntervalMs = 60_000, policyIntervalMs = 30_000 } = options;
  return Object.freeze({
    intervalMs: positiveInteger(intervalMs, 'ERR_RL_INVALID_OPTION', 'evictionWatch.intervalMs', 'must be a positive integer number of ms'),
    logIntervalMs: positiveInteger(
      logIntervalMs,
      'ERR_RL_INVALID_OPTION',
      'evictionWatch.logIntervalMs',
      'must be a positive integer number of ms',
    ),
    policyIntervalMs: positiveInteger(
      policyIntervalMs,
      'ERR_RL_INVALID_OPTION',
      'evictionWatch.policyIntervalMs',
      'must be a positive integer number of ms',
    ),
  });
}

function isBound(value: Bound | Error): value is Bound {
  return !(value instanceof Error);
}
