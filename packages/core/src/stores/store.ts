/**
 * @module The store contract. A store holds the state of every (key, policy) pair and applies one
 * request to all policies of that request in one atomic step: within each group (the enforced policies,
 * then the shadow policies) either every policy admits the request and all are charged, or none is.
 * The Redis store does this in one Lua script, one round trip; the memory store synchronously.
 */
import type { CompiledPolicy } from '../algorithms/kernel.js';
import type { ValidateOption } from '../diagnostics.js';
import type { Logger } from '../logging.js';

/** The policies a limiter applies on every request, prepared once when the limiter is created. */
export interface StorePlan {
  /** Enforced policies first, then shadow policies. */
  readonly policies: readonly CompiledPolicy[];
  /** `policies[0 .. enforcedCount)` form one all-or-nothing group, the rest another. */
  readonly enforcedCount: number;
}

/**
 * The key a request is decided for: one key for every policy, or one key per policy in plan order
 * (several keys, one decision: `limiter.check({ 'per-ip': ip, 'per-account': account })`).
 */
export type StoreKey = string | readonly string[];

/** The key of the policy at plan position `i`. */
export function keyAt(key: StoreKey, i: number): string {
  return typeof key === 'string' ? key : (key[i] as string);
}

/** One text per store key, for maps by key: the keys of several policies joined by a NUL (which never starts a key's text). */
export function storeKeyText(key: StoreKey): string {
  return typeof key === 'string' ? key : key.join('\0');
}

const subPlans = new WeakMap<StorePlan, Map<string, StorePlan>>();

/**
 * The part of `plan` at `positions` (in plan order): enforced ones first, as in the plan. One object per
 * part. The key names of a policy are its own, whatever the plan, so a part reaches the same state
 * (RedisStore's Cluster split; a carry's charge of one policy, limiter/carry-owed.ts).
 */
export function subPlan(plan: StorePlan, positions: readonly number[]): StorePlan {
  let cache = subPlans.get(plan);
  if (cache === undefined) {
    cache = new Map();
    subPlans.set(plan, cache);
  }
  const id = positions.join(',');
  let sub = cache.get(id);
  if (sub === undefined) {
    sub = Object.freeze({
      policies: positions.map((i) => plan.policies[i] as StorePlan['policies'][number]),
      enforcedCount: positions.filter((i) => i < plan.enforcedCount).length,
    });
    cache.set(id, sub);
  }
  return sub;
}

/** Numbers per policy in a store result. */
export const RESULT_STRIDE = 5;
/** Offsets within one policy's numbers. */
export const R_FLAGS = 0;
export const R_REMAINING = 1;
export const R_RETRY_AFTER = 2;
/**
 * A charged policy's retryAfterMs is 0 by definition: its slot carries the charge's position instead,
 * which the receipt keeps for `refund` (the bucket family's refund frame, algorithms/refund-frame.ts; 0
 * for the other algorithms). Readers take retryAfterMs of an admitted policy as 0.
 */
export const R_POSITION = R_RETRY_AFTER;
export const R_RESET = 3;
export const R_DELAY = 4;
/** Flag bits. */
export const F_ALLOWED = 1;
export const F_EXCEEDS = 2;
export const F_CHARGED = 4;

/**
 * Per policy, in plan order, `RESULT_STRIDE` numbers: flags (`F_*`), remaining (milli-units, after the
 * charge when charged), retryAfterMs, resetMs, delayMs. Then, optionally, one more number: the store's
 * clock (integer ms) when it decided, for a store with a clock of its own (RedisStore: Redis `TIME`);
 * a receipt's marks are that time plus resetMs. Without it the store used the `now` it was given
 * (MemoryStore). Read it with `resultNow`. A store may reuse the array once the limiter has read it
 * (the limiter copies everything out synchronously).
 */
export type StoreResult = ArrayLike<number>;

/** The contract of a store: prepare a plan, apply a request to every policy atomically, and optionally peek, refund, release and renew. */
export interface Store {
  /** A short name for logs and events, e.g. 'memory' or 'redis'. */
  readonly kind: string;
  /**
   * Where the store's key names live, for the check that two limiters without a `name` do not share state
   * by accident (state-claims.ts): stores with the same `holder` and `name` see the same keys. RedisStore:
   * the keyspace its client's options name (server, database, key prefix) and its prefix, or the client
   * and prefix when the options do not say. Without it, the store itself. `where` says it in messages;
   * `prefix`, the prefix every key of the store's state starts with (stores under two prefixes never meet).
   */
  readonly stateSpace?: { readonly holder: object; readonly name: string; readonly where?: string; readonly prefix?: string };
  /**
   * A token naming the keyspace the store's state lives in, read from the store itself (RedisStore: a key
   * under its prefix, set where it is missing): stores whose options could not say they reach the same keys
   * (two addresses of one server, clients whose options cannot be read) read the same token. Asked only
   * where two stores under one `stateSpace.prefix` hold limiters without a name of the same key names
   * (stores/state-claims.ts). Resolves to undefined when the store cannot say.
   */
  spaceToken?(): Promise<string | undefined>;
  /**
   * True when the store answers some keys from budget it holds in this process (RedisStore `localBatch`):
   * a key's remaining may then rise between two answers with nothing lost (a batch given back), so the
   * limiter does not take such a rise for a store that lost its state (failure/restore/budget-restore.ts).
   */
  readonly batches?: boolean;
  /**
   * Applies a request of `cost` milli-units for `key` to every policy of `plan`, atomically per group.
   * `now` is the limiter's clock (integer ms); a store with its own clock (Redis TIME) may ignore it.
   * Returns synchronously when it can: the limiter then answers without extra microtask hops.
   * `lease` (a plan with concurrency policies): the id of the lease those policies take when the
   * request is admitted, unique within the limiter; `release` and `renew` name it again.
   */
  apply(key: StoreKey, plan: StorePlan, cost: number, now: number, lease?: number): StoreResult | Promise<StoreResult>;
  /**
   * What `apply` would answer, charging nothing: the same flags (`F_CHARGED` on every policy of a group
   * that would be charged), retry and delay; `remaining` and `reset` of the state as it stands, since
   * nothing was charged (as `apply` reports a policy that admitted in a group that refused). Stores
   * without it cannot serve `limiter.peek()`.
   */
  peek?(key: StoreKey, plan: StorePlan, cost: number, now: number): StoreResult | Promise<StoreResult>;
  /**
   * Gives back `cost` milli-units charged by an earlier `apply`, atomically, per policy whose
   * `marks[i]` is a number (NaN: that policy was not charged). A mark is the charge's `now + resetMs`:
   * it names the state the charge went into (the window, the log entry, the time the bucket would be
   * full again), and a policy gives back only while that state is current, never above capacity.
   * `marks[n + i]` (n policies) is the charge's position (`R_POSITION` of its result) and `marks[2n]` what
   * the same receipt gave back before (milli-units; absent: nothing): what the bucket family needs to give
   * back exactly after other refunds on the key (algorithms/refund-frame.ts).
   * Returns one number per policy: 1 when its state took the refund, else 0.
   */
  refund?(
    key: StoreKey,
    plan: StorePlan,
    cost: number,
    marks: readonly number[],
    now: number,
  ): ArrayLike<number> | Promise<ArrayLike<number>>;
  /**
   * Ends lease `lease` (taken by an `apply` of `plan`) in every concurrency policy of `plan`. A lease
   * already ended (released, expired) is left alone. Stores without it cannot hold concurrency policies.
   */
  release?(key: StoreKey, plan: StorePlan, lease: number, now: number): void | Promise<void>;
  /**
   * Moves the deadline of live lease `lease` to `now + leaseMs` in every concurrency policy of `plan`,
   * and where it has ended by its deadline (a late renewal: the process stalled) takes its slot again
   * when fewer than `limit` leases are live there, never over the limit; true when it holds a slot in all
   * of them. A store that only renews live leases is safe too: a late renewal then ends the lease.
   */
  renew?(key: StoreKey, plan: StorePlan, lease: number, now: number): boolean | Promise<boolean>;
  /**
   * For a store that can lose what it holds (a restart, a failover): renews live lease `lease`, and puts
   * it back, whatever the count, where the store no longer has it (the limiter sends it only for a lease
   * still within its deadline; a late one goes to `renew`). True when it was live
   * in all the policies. The limiter renews with it when present (leases/lease-keeper.ts).
   */
  restore?(key: StoreKey, plan: StorePlan, lease: number, now: number): Promise<boolean>;
  /**
   * `restore` of every lease of `leases` at once, for a store where one call per lease is slow (RedisStore:
   * one script call per plan and Cluster slot, so the put-back after a restart takes a few round trips,
   * not one per lease). Returns the calls it sent: each carries the positions in `leases` it restores and
   * the key it went for (the watchdog's node), and resolves to one flag per position, true when that lease
   * was live in every policy the call covered. A lease may be in several calls (its policies' keys in
   * several Cluster slots): live when all of them say so. Without it, the limiter calls `restore` per lease.
   */
  restoreMany?(
    leases: readonly { readonly key: StoreKey; readonly plan: StorePlan; readonly lease: number }[],
    now: number,
  ): readonly { readonly leases: readonly number[]; readonly key: StoreKey; readonly live: Promise<readonly boolean[]> }[];
  /**
   * Calls `listener` with `'lost'` when the store's connection closed (what it holds may be gone when it
   * comes back) and `'ready'` when it can send again; returns the function that stops the calls.
   */
  watchConnection?(listener: (event: ConnectionEvent) => void): () => void;
  /**
   * For a store that can lose everything it holds (a restart without persistence, a failover to an empty
   * replica): sets a mark of `plan`'s limiter in the store where it is missing; true when the mark changed
   * since this store last found it (it went, and this process or another set it again): the store lost
   * its state since, or the mark alone went. The limiter asks at start and after every reconnect
   * (`watchConnection`), and charges again what it remembers when it changed (failure/restore/budget-restore.ts).
   */
  markAlive?(plan: StorePlan): Promise<boolean>;
  /**
   * For a store with `markAlive`: the ledger of what was charged again to `key` under `plan` (one policy)
   * since the store lost its state, by every process of the limiter. Raises it to `used` milli-units (kept
   * `ttlMs`, the time until the key's budget would be whole again) and resolves to what it held before
   * (0: nothing), so that a process charges only `used` less that, and processes that remember the same
   * key charge it together what the one that saw the most had counted. `used` 0 reads it. `raise`, when
   * given, names this raise: asked again with the same id (its reply was lost), it resolves to what it
   * resolved to the first time, not to what that raise left. Without it, the limiter charges all it counts.
   */
  restored?(key: string, plan: StorePlan, used: number, ttlMs: number, raise?: string): Promise<number>;
  /**
   * For a store with `markAlive`: per node (as `nodeOf` names it), which server answers there now (a
   * Redis's `run_id`), new when it restarted or another server took over (a failover); nodes it cannot
   * say are left out. The limiter reads it at start, after every reconnect, when a node's breaker closes
   * and when an answer could not follow (at most once a second per node): keys answered before a change
   * whose next answer has more budget than they could have had back are charged the difference (the
   * server came back with older counts: an RDB snapshot, a lagging replica; failure/restore/server-changes.ts).
   * With `node`, only that node is read (a Cluster master whose breaker closed, or whose answer could not
   * follow): a node that does not answer then holds back no reading of the others.
   */
  servers?(node?: string): Promise<ReadonlyMap<string, string>>;
  /**
   * For a store whose nodes can lose what they hold one by one (a Redis Cluster master restarted without
   * persistence): sets the mark of `plan`'s limiter on `node` (a name `nodeOf` gives), asked when that
   * node's breaker closes; true when it was missing there. Undefined where the store keeps one mark for
   * all (`markAlive`).
   */
  markNodeAlive?(plan: StorePlan, node: string): Promise<boolean> | undefined;
  /**
   * Calls `listener` when a limiter on this store found `node` lost what it held (`markNodeAlive` said
   * missing; `limiter`: that limiter's name, as `CompiledPolicy.limiter`), so the other limiters, whose
   * breakers may not have seen the node fail, check their own marks there. Returns the function that stops the calls.
   */
  watchNodeLoss?(listener: (node: string, limiter: string | undefined) => void): () => void;
  /**
   * Called once by `createLimiter` with the plan it will pass to `apply`: the store may prepare per-plan
   * work (RedisStore generates the plan's script) and throws `RateLimitConfigError` for a plan it cannot
   * apply, so the limiter fails at construction instead of on every request.
   */
  prepare?(plan: StorePlan): void;
  /**
   * Called by `createLimiter` with where the limiter logs and its `validate`, when it was given either (every
   * middleware's is): a store that warns (RedisStore) and was given no logger of its own takes the first's.
   */
  logTo?(logger: Logger, validate: ValidateOption): void;
  /**
   * The answer for `key` from what the store holds in this process, without I/O (RedisStore
   * `localBatch`: units Redis charged earlier, or a rejection whose wait is not over), or undefined.
   * The limiter asks it when the node's breaker keeps it from calling `apply`: what is held was granted
   * by the store, so it keeps being spent while the store is away; nothing else is answered.
   */
  held?(key: StoreKey, plan: StorePlan, cost: number, now: number): StoreResult | undefined;
  /**
   * Tells the store that `key` is about to be charged `charged[i]` milli-units in policy `i` of `plan`
   * beside what it holds of it in this process (RedisStore `localBatch`), as a restore after a loss charges
   * it (failure/restore/budget-restore.ts): what it answers from units held before that charge, or brought by a
   * call in flight, counts it, as Redis' own answers will.
   */
  chargedBeside?(key: StoreKey, plan: StorePlan, charged: ArrayLike<number>): void;
  /**
   * What the store's replies in this process tell of `key`'s count (milli-units per policy of `plan`, beside
   * the units it held unspent) just before the last reply that showed the key emptied, at most a few seconds
   * ago, or undefined (RedisStore `localBatch`: the others' takes since the batch being spent, which this
   * process's memory of the key lacks). A restore charges at least that (failure/restore/budget-restore.ts).
   */
  countAtLoss?(key: StoreKey, plan: StorePlan, now: number): ArrayLike<number> | undefined;
  /**
   * Tells the store that what it holds of `key` in this process (RedisStore `localBatch`) was taken from a
   * state it lost, which a restore charged what the key had counted (failure/restore/budget-restore.ts): those
   * units are dropped unspent, as at a reset, and stay charged.
   */
  lostHeld?(key: StoreKey, plan: StorePlan): void;
  /**
   * What settles once the give-backs of `key` on their way to the store have landed (RedisStore: its
   * refunds, and `localBatch` returning what a batch held), or undefined when none is. A refund sent first
   * may still land after later calls (one that met NOSCRIPT runs again behind them): a carry after an
   * outage that left the key exhausted waits for them, then charges what they gave back
   * (limiter/carry-owed.ts), so that budget the outage's admissions spent is not free again.
   */
  returning?(key: StoreKey): Promise<unknown> | undefined;
  /** Forgets the state of `key` for the policies of `plan`. */
  reset(key: string, plan: StorePlan): void | Promise<void>;
  /** Releases timers and connections the store owns. */
  close?(): void | Promise<void>;
  /**
   * The node (connection, Cluster master) that serves `key`, so the limiter tracks health per node and
   * one shard's outage degrades only its own keys. Without it the store is one node.
   */
  nodeOf?(key: string, plan: StorePlan): string;
  /**
   * `'key'` when `error` belongs to one key's state (the node answered; only that request is answered by
   * the failure mode), `'node'` when the node cannot serve anyone. Without it every error is `'node'`.
   */
  errorScope?(error: unknown): 'key' | 'node';
  /**
   * Before its first connection: a promise that settles once the store can send (or after `maxWaitMs`),
   * so the limiter's first checks wait instead of failing. `undefined` when there is nothing to wait for.
   */
  whenReady?(maxWaitMs: number): Promise<void> | undefined;
}

/** What `Store.watchConnection` reports: the connection closed, or it is ready again. */
export type ConnectionEvent = 'lost' | 'ready';

/** Whether policy `i` of a store result (`Store.apply`) was charged; every policy of an enforced group is, or none. */
export function resultCharged(r: StoreResult, i: number): boolean {
  return ((r[i * RESULT_STRIDE + R_FLAGS] as number) & F_CHARGED) !== 0;
}

/** Whether policy `i` of a store result refused a cost it can never hold (a 413, not a 429). */
export function resultExceeds(r: StoreResult, i: number): boolean {
  return ((r[i * RESULT_STRIDE + R_FLAGS] as number) & F_EXCEEDS) !== 0;
}

/**
 * The store's clock when it decided a result over `n` policies: the slot after their numbers (a store
 * with its own clock, RedisStore), else `at`, the limiter's clock the call was made with.
 */
export function resultNow(r: StoreResult, n: number, at: number): number {
  return r.length > n * RESULT_STRIDE ? (r[n * RESULT_STRIDE] as number) : at;
}

/** How long policy `i` of a store result delays an admitted request (leaky-bucket shaping), ms. */
export function resultDelayMs(r: StoreResult, i: number): number {
  return r[i * RESULT_STRIDE + R_DELAY] as number;
}
