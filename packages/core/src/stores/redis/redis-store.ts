/**
 * @module RedisStore: limiter state in Redis (or Redis Cluster), shared by every instance of an app.
 * One EVALSHA per request applies every policy of the plan (enforced, then shadow, each group
 * all-or-nothing) in one atomic Lua script, with Redis `TIME` as the one clock, and returns every
 * per-policy result: one round trip whatever the number of policies. The script is generated for the
 * plan the first time the store sees it (scripts.ts: the policies' parameters baked in, the state
 * layout), then cached with the plan; key-names.ts gives the key names.
 *
 * The store fails fast once connected: when the client is not ready it rejects at once instead of
 * letting ioredis hold the command in its offline queue, so a Redis outage costs a request nothing but
 * the failure mode's answer (`onStoreError` on the limiter, judged per node by its failure/ watchdog and
 * breakers). Before the first connection it lets the limiter wait for it (`whenReady`). It never
 * retries, except after loading the script when Redis answers NOSCRIPT (script-runner.ts). For the
 * limiter's failure handling it names the node that serves a key (`nodeOf`: the Cluster master of the
 * key's slot) and says whose fault an error is (`errorScope`: one key's state, or the node).
 */
import { RateLimitConfigError } from '../../errors.js';
import { readOptions } from '../../internal/read-options.js';
import {
  F_ALLOWED,
  F_CHARGED,
  keyAt,
  R_DELAY,
  R_FLAGS,
  R_REMAINING,
  R_RESET,
  RESULT_STRIDE,
  type Store,
  type StoreKey,
  type StorePlan,
  type StoreResult,
} from '../store.js';
import { keySlot } from './cluster-slot.js';
import { slotGroups, subPlan } from './cluster-split.js';
import { keyName, keyTag, policySuffix } from './key-names.js';
import { peekScript, refundScript } from './plan-scripts.js';
import { isRedisClientLike, type RedisClientLike } from './redis-client.js';
import { RedisStoreError, redisErrorScope } from './redis-store-error.js';
import { ScriptRunner } from './script-runner.js';
import { type LuaScript, planScript } from './scripts.js';

export interface RedisStoreOptions {
  /**
   * Your ioredis `Redis` or `Cluster` client; the store never closes it. Create it with
   * `enableOfflineQueue: false` or not: the store refuses to send while the client is not `'ready'`.
   */
  client: RedisClientLike;
  /**
   * Prepended to every key name (`<prefix>:{<key>}:<policy>`); give each app sharing a Redis its own.
   * No braces (they would break the hash tag). Defaults to `'tollgate'`.
   */
  prefix?: string;
  /**
   * **Test-only.** `'redis'` (the default) decides with Redis `TIME`, the one clock all instances share.
   * `'limiter'` uses the `now` the limiter passes (its `clock`) instead, so tests can replay traces in
   * virtual time; key expiry times then follow that clock too, so it must run ahead of Redis' clock.
   * Never use it in production: instances with skewed clocks would disagree. Defaults to `'redis'`.
   */
  timeSource?: 'redis' | 'limiter';
}

/** The per-plan parts of every call, computed once per plan. */
interface Bound {
  readonly suffixes: readonly string[];
  readonly script: LuaScript;
  /** plan-scripts.ts: the peek and refund twins, generated on first use. */
  peek?: LuaScript;
  refund?: LuaScript;
}

const OPTION_KEYS: { [K in keyof Required<RedisStoreOptions>]: true } = { client: true, prefix: true, timeSource: true };

export class RedisStore implements Store {
  readonly kind = 'redis';
  readonly prefix: string;
  readonly timeSource: 'redis' | 'limiter';
  private readonly client: RedisClientLike;
  private readonly scripts: ScriptRunner;
  private readonly bindings = new WeakMap<StorePlan, Bound>();

  constructor(options: RedisStoreOptions) {
    const o = readOptions(options, OPTION_KEYS, 'options', '{ client: new Redis() } (RedisStore options)');
    if (!isRedisClientLike(o.client)) {
      throw new RateLimitConfigError(
        'ERR_RL_INVALID_CLIENT',
        'client',
        'must be an ioredis Redis or Cluster client (with status, evalsha, eval, script and del), e.g. new Redis(url)',
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
    const timeSource = o.timeSource ?? 'redis';
    if (timeSource !== 'redis' && timeSource !== 'limiter') {
      throw new RateLimitConfigError(
        'ERR_RL_INVALID_TIME_SOURCE',
        'timeSource',
        "must be 'redis' (production) or 'limiter' (tests only)",
        o.timeSource,
      );
    }
    this.client = o.client;
    this.scripts = new ScriptRunner(o.client);
    this.prefix = prefix;
    this.timeSource = timeSource;
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

  private bind(plan: StorePlan): Bound {
    let b = this.bindings.get(plan);
    if (b === undefined) {
      b = { suffixes: plan.policies.map(policySuffix), script: planScript(plan) };
      this.bindings.set(plan, b);
    }
    return b;
  }

  /** The Redis keys that hold the state of `key` under `plan`, one per policy in plan order (for operators and tests). */
  keyNames(key: string, plan: StorePlan): string[] {
    const tag = keyTag(key);
    return this.bind(plan).suffixes.map((s) => keyName(this.prefix, tag, s));
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
    if (client.status === 'ready') {
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
        if (status === 'ready') this.connected = true;
        if (status === 'ready' || status === 'end' || performance.now() >= deadline) {
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
    if (client.isCluster !== true) return 'redis';
    const name = this.keyNames(key, plan)[0] as string;
    return client.slots?.[keySlot(name)]?.[0] ?? 'cluster';
  }

  /** Whose fault `error` is: one key's state (`'key'`) or the node (`'node'`); see `redisErrorScope`. */
  errorScope(error: unknown): 'key' | 'node' {
    return redisErrorScope(error);
  }

  /** Rejects when the client would queue the command instead of sending it. */
  private notReady(): RedisStoreError | undefined {
    const status = this.client.status;
    if (status === 'ready') return undefined;
    // A lazyConnect client connects on its first command; we send none until it is ready, so start it.
    if (status === 'wait') this.client.connect?.().catch(() => undefined);
    return new RedisStoreError(
      'ERR_RL_STORE_NOT_READY',
      `the Redis client is '${status}', not 'ready'; RedisStore does not let commands wait in ioredis' offline queue, ` +
        "so the limiter's onStoreError answers until the client is ready again",
    );
  }

  apply(key: StoreKey, plan: StorePlan, cost: number, now: number): Promise<StoreResult> {
    return this.runPlan(key, plan, cost, now, false);
  }

  /** The peek twin (plan-scripts.ts): what `apply` would answer, charging nothing. */
  peek(key: StoreKey, plan: StorePlan, cost: number, now: number): Promise<StoreResult> {
    return this.runPlan(key, plan, cost, now, true);
  }

  /** The refund twin (plan-scripts.ts): gives back a charge named by its marks (see `Store.refund`). */
  refund(key: StoreKey, plan: StorePlan, cost: number, marks: readonly number[], now: number): Promise<ArrayLike<number>> {
    let b: Bound;
    try {
      b = this.bind(plan);
    } catch (tooLarge) {
      return Promise.reject(tooLarge);
    }
    const error = this.notReady();
    if (error !== undefined) return Promise.reject(error);
    const n = plan.policies.length;
    const args = this.keysOf(key, b);
    const groups = typeof key !== 'string' && this.client.isCluster === true ? slotGroups(args) : undefined;
    if (groups !== undefined) return this.refundSplit(key as readonly string[], plan, cost, marks, now, groups);
    args.push(this.timeSource === 'redis' ? '' : String(now), String(cost));
    for (let i = 0; i < n; i++) args.push(Number.isNaN(marks[i]) ? '' : String(marks[i]));
    b.refund ??= refundScript(plan);
    const script = b.refund;
    return this.scripts.run(script, n, args).then((reply) => {
      if (Array.isArray(reply) && reply.length === n && reply.every((x) => x === 0 || x === 1)) return reply as number[];
      throw new RedisStoreError(
        'ERR_RL_STORE_REPLY',
        `expected ${n} flags from ${script.name}, got ${JSON.stringify(reply)?.slice(0, 200)}; the client must return Redis replies unchanged`,
      );
    });
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
        const subMarks = g.map((i) => marks[i] as number);
        if (subMarks.every((m) => Number.isNaN(m))) return;
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
        out[o + R_REMAINING] = Math.min(p.capMilli, (out[o + R_REMAINING] as number) + cost);
        out[o + R_DELAY] = 0;
      }
    }
    if (!peek && give.length > 0) {
      const marks = plan.policies.map((_, i) =>
        give.includes(i) ? (out[n * RESULT_STRIDE] as number) + (out[i * RESULT_STRIDE + R_RESET] as number) : Number.NaN,
      );
      // Best effort: a give-back that fails leaves the reservation to expire with its state.
      await this.refund(key, plan, cost, marks, now).then(undefined, () => undefined);
    }
    if (failure !== undefined) throw failure;
    return out;
  }

  /** KEYS: one per policy, each under its own key's hash tag. */
  private keysOf(key: StoreKey, b: Bound): string[] {
    const args: string[] = [];
    const single = typeof key === 'string' ? keyTag(key) : undefined;
    for (let i = 0; i < b.suffixes.length; i++) {
      args.push(keyName(this.prefix, single ?? keyTag(keyAt(key, i)), b.suffixes[i] as string));
    }
    return args;
  }

  private runPlan(key: StoreKey, plan: StorePlan, cost: number, now: number, peek: boolean): Promise<StoreResult> {
    let b: Bound;
    try {
      b = this.bind(plan);
    } catch (tooLarge) {
      return Promise.reject(tooLarge);
    }
    const error = this.notReady();
    if (error !== undefined) return Promise.reject(error);
    const n = plan.policies.length;
    // KEYS (one per policy), then ARGV: now ('' = Redis TIME) and the cost.
    const args = this.keysOf(key, b);
    // Several keys in different Cluster slots: reserve, then confirm or give back (cluster-split.ts).
    const groups = typeof key !== 'string' && this.client.isCluster === true ? slotGroups(args) : undefined;
    if (groups !== undefined) return this.runSplit(key as readonly string[], plan, cost, now, peek, groups);
    args.push(this.timeSource === 'redis' ? '' : String(now), String(cost));
    let script = b.script;
    if (peek) {
      b.peek ??= peekScript(plan);
      script = b.peek;
    }
    return this.scripts.run(script, n, args).then((reply) => checkReply(reply, n, script));
  }

  reset(key: string, plan: StorePlan): Promise<void> {
    const error = this.notReady();
    if (error !== undefined) return Promise.reject(error);
    return this.client.del(...this.keyNames(key, plan)).then(() => undefined);
  }
}

/** The script's reply, checked: `RESULT_STRIDE` integers per policy, then the `now` it used. */
function checkReply(reply: unknown, n: number, script: LuaScript): StoreResult {
  const length = n * RESULT_STRIDE + 1;
  if (Array.isArray(reply) && reply.length === length && reply.every((v) => typeof v === 'number')) return reply as number[];
  const shown = JSON.stringify(reply)?.slice(0, 200);
  throw new RedisStoreError(
    'ERR_RL_STORE_REPLY',
    `expected ${length} integers from ${script.name} (${n} ${n === 1 ? 'policy' : 'policies'}), got ${shown}; ` +
      'the client must return Redis replies unchanged (a wrapper or a non-ioredis client that converts replies is the usual cause)',
  );
}
