/**
 * @module Concurrency policies (`{ algorithm: 'concurrency', limit }`): at most `limit` requests of a
 * key in flight, each holding a lease until `decision.release()` (the adapters call it when the
 * response finishes, errors or the client goes away) or until `leaseMs` passes. `createLimiter` hands a
 * limiter with such policies to `createConcurrencyLimiter`, which wraps the rate limiter built from the
 * remaining policies into one all-or-nothing decision: leases are taken first (synchronously, in
 * memory), the rate policies are asked only when every lease was granted, and a rate refusal gives the
 * leases back, so a request refused by either side is charged nothing by the other.
 *
 * With `queue: { size, timeoutMs }` a request that finds the key full waits, first in first out, for
 * a lease; it gets 429 when none frees up within `timeoutMs`, and leaves the queue when the client goes
 * away (`CheckOptions.signal`). Leases live in this process; see README for Redis.
 */

import { randomUUID } from 'node:crypto';
import { acquireLease, deadlineRange, expireLeases, type LeaseTable, releaseLease, renewLease } from '../algorithms/concurrency.js';
import { monotonicClock } from '../clock.js';
import { type Limiter, type LimiterKey, normalizeKey, type PolicyDescription } from '../create-limiter.js';
import { RateLimitConfigError } from '../errors.js';
import { type KeysEnum, readOptions } from '../internal/read-options.js';
import { consoleLogger, safeLog } from '../logging.js';
import type { LimiterOptions } from '../options.js';
import { type LeaseGrant, RedisLeases } from '../stores/redis/lease-script.js';
import type {
  CheckOptions,
  Clock,
  Decision,
  DecisionReason,
  PolicyAlgorithm,
  PolicyOptions,
  PolicyResult,
  ShadowVerdict,
} from '../types.js';

/** A concurrency policy: how many requests of one key may be in flight at once. */
export interface ConcurrencyPolicyOptions {
  /** Unique within the limiter, as for rate policies. Defaults to `'default'`. */
  name?: string;
  algorithm: 'concurrency';
  /** Requests of one key in flight at once. A positive integer. */
  limit: number;
  /**
   * A lease not released within this many ms expires and frees its slot (a handler that never
   * finishes, a lost release). Advertised as the policy's `w`. Defaults to `60_000`.
   */
  leaseMs?: number;
  /** Wait for a lease instead of being refused at once: at most `size` waiting per key, each up to `timeoutMs`. Defaults to none. */
  queue?: { size: number; timeoutMs: number };
  /** Always `'concurrent-requests'` (the default); any other unit is an error. */
  unit?: 'concurrent-requests';
  /**
   * Keep the leases in Redis (`new RedisLeases(client)`), shared by every process: a process that dies
   * frees its leases after `leaseMs`. One round trip per acquire, before the rate policies. When Redis
   * fails, the process's own leases answer (as if `onStoreError: 'local'`), logged once per outage.
   * Not combinable with `queue`. Defaults to leases in this process.
   */
  leases?: RedisLeases;
}

/** A rate policy or a concurrency policy. */
export type AnyPolicyOptions = PolicyOptions | ConcurrencyPolicyOptions;

interface ConcurrencyPolicy {
  readonly name: string;
  readonly limit: number;
  readonly leaseMs: number;
  readonly queueSize: number;
  readonly queueTimeoutMs: number;
  readonly keys: Map<string, KeyState>;
  readonly redis: RedisLeases | undefined;
}

interface Waiter {
  readonly id: number;
  done: boolean;
  resolve(granted: boolean): void;
}

class KeyState {
  readonly leases: LeaseTable = new Map();
  readonly queue: Waiter[] = [];
}

const KEYS: KeysEnum<ConcurrencyPolicyOptions> = {
  name: true,
  algorithm: true,
  limit: true,
  leaseMs: true,
  queue: true,
  unit: true,
  leases: true,
};
const QUEUE_KEYS: KeysEnum<NonNullable<ConcurrencyPolicyOptions['queue']>> = { size: true, timeoutMs: true };

export function isConcurrencyPolicy(p: unknown): p is ConcurrencyPolicyOptions {
  return typeof p === 'object' && p !== null && (p as { algorithm?: unknown }).algorithm === 'concurrency';
}

/** True when `options.policies` lists a concurrency policy. */
export function hasConcurrencyPolicies(options: LimiterOptions): boolean {
  const list = options?.policies as unknown;
  return Array.isArray(list) ? list.some(isConcurrencyPolicy) : isConcurrencyPolicy(list);
}

/** True when some concurrency policy of `options` may queue (the handler then passes an abort signal). */
export function hasConcurrencyQueue(options: LimiterOptions): boolean {
  const list = options?.policies as unknown;
  return (Array.isArray(list) ? list : [list]).some((p) => isConcurrencyPolicy(p) && p.queue !== undefined);
}

function positiveInteger(value: unknown, path: string, hint: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new RateLimitConfigError('ERR_RL_INVALID_CONCURRENCY', path, `must be a positive integer (${hint})`, value);
  }
  return value;
}

function compileConcurrency(input: ConcurrencyPolicyOptions, path: string): ConcurrencyPolicy {
  const o = readOptions(input, KEYS, path, "{ name: 'exports', algorithm: 'concurrency', limit: 2 }");
  if (o.unit !== undefined && o.unit !== 'concurrent-requests') {
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_UNIT',
      `${path}.unit`,
      "of a concurrency policy can only be 'concurrent-requests'",
      o.unit,
    );
  }
  const name = o.name ?? 'default';
  if (typeof name !== 'string' || !/^[\x21-\x7e](?:[\x20-\x7e]{0,62}[\x21-\x7e])?$/.test(name)) {
    throw new RateLimitConfigError('ERR_RL_INVALID_NAME', `${path}.name`, 'must be 1 to 64 printable ASCII characters', o.name);
  }
  let queueSize = 0;
  let queueTimeoutMs = 0;
  if (o.queue !== undefined) {
    const q = readOptions(o.queue, QUEUE_KEYS, `${path}.queue`, '{ size: 10, timeoutMs: 5_000 }');
    queueSize = positiveInteger(q.size, `${path}.queue.size`, 'requests that may wait per key');
    queueTimeoutMs = positiveInteger(q.timeoutMs, `${path}.queue.timeoutMs`, 'how long a request may wait, ms');
  }
  if (o.leases !== undefined && !(o.leases instanceof RedisLeases)) {
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_CONCURRENCY',
      `${path}.leases`,
      'must be a RedisLeases, e.g. new RedisLeases(redis)',
      o.leases,
    );
  }
  if (o.leases !== undefined && o.queue !== undefined) {
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_CONCURRENCY',
      `${path}.queue`,
      'needs leases in this process; remove queue or leases',
      o.queue,
    );
  }
  return {
    redis: o.leases,
    name,
    limit: positiveInteger(o.limit, `${path}.limit`, 'requests in flight per key'),
    leaseMs: o.leaseMs === undefined ? 60_000 : positiveInteger(o.leaseMs, `${path}.leaseMs`, 'ms after which an unreleased lease expires'),
    queueSize,
    queueTimeoutMs,
    keys: new Map(),
  };
}

class Result implements PolicyResult {
  readonly shadow = false;
  readonly delayMs = 0;
  readonly reason = undefined;
  constructor(
    readonly name: string,
    readonly algorithm: PolicyAlgorithm,
    readonly allowed: boolean,
    readonly limit: number,
    readonly windowMs: number,
    readonly capacity: number,
    readonly remaining: number,
    readonly retryAfterMs: number,
    readonly resetMs: number,
  ) {}
}

class ConcurrentDecision implements Decision {
  constructor(
    readonly allowed: boolean,
    readonly limited: boolean,
    readonly reason: DecisionReason,
    readonly mode: 'enforce' | 'shadow',
    readonly key: string,
    readonly cost: number,
    readonly policy: string,
    readonly remaining: number,
    readonly retryAfterMs: number,
    readonly resetMs: number,
    readonly delayMs: number,
    readonly policies: readonly PolicyResult[],
    readonly shadow: ShadowVerdict | undefined,
    readonly degraded: boolean,
    readonly release: (() => void) | undefined,
    readonly renew: (() => boolean) | undefined,
  ) {}

  toJSON(): Omit<Decision, 'release' | 'renew'> {
    const { release: _release, renew: _renew, ...rest } = this;
    return rest;
  }
}

/**
 * Builds the limiter for `options` whose policies include concurrency policies; `make` builds the rate
 * limiter of the other policies (it is `createLimiter`).
 */
export function createConcurrencyLimiter(options: LimiterOptions, make: (options: LimiterOptions) => Limiter): Limiter {
  const list = (Array.isArray(options.policies) ? options.policies : [options.policies]) as readonly AnyPolicyOptions[];
  const concurrency: ConcurrencyPolicy[] = [];
  const rateOptions: PolicyOptions[] = [];
  /** Configured order: a concurrency policy index (>= 0) or a rate policy index (-1 - i). */
  const order: number[] = [];
  list.forEach((p, i) => {
    const path = Array.isArray(options.policies) ? `policies[${i}]` : 'policies';
    if (isConcurrencyPolicy(p)) {
      const c = compileConcurrency(p, path);
      if (concurrency.some((x) => x.name === c.name) || rateOptions.some((r) => (r.name ?? 'default') === c.name)) {
        throw new RateLimitConfigError(
          'ERR_RL_DUPLICATE_POLICY',
          `${path}.name`,
          'repeats the name of another policy; give every policy a unique name',
          c.name,
        );
      }
      order.push(concurrency.length);
      concurrency.push(c);
    } else {
      order.push(-1 - rateOptions.length);
      rateOptions.push(p);
    }
  });
  const inner = rateOptions.length > 0 ? make({ ...options, policies: rateOptions }) : undefined;
  for (const r of inner?.policies ?? []) {
    if (concurrency.some((c) => c.name === r.name)) {
      throw new RateLimitConfigError(
        'ERR_RL_DUPLICATE_POLICY',
        'policies',
        'list two policies with one name; give every policy a unique name',
        r.name,
      );
    }
  }
  const clock: Clock = options.clock ?? monotonicClock;
  const mode = options.mode ?? 'enforce';
  const shadowMode = mode === 'shadow';
  const descriptions: PolicyDescription[] = order.map((at) => {
    if (at < 0) return inner?.policies[-1 - at] as PolicyDescription;
    const c = concurrency[at] as ConcurrencyPolicy;
    return Object.freeze({
      name: c.name,
      algorithm: 'concurrency',
      limit: c.limit,
      windowMs: c.leaseMs,
      capacity: c.limit,
      unit: 'concurrent-requests',
      shadow: false,
    });
  });
  let nextId = 1;
  const instance = randomUUID();
  const leaseId = (id: number): string => `${instance}:${id}`;
  /** Per request with Redis leases: the grants, by concurrency policy index. */
  type Grants = (LeaseGrant | undefined)[];
  let redisFailing = false;
  const redisFailed = (error: unknown): void => {
    if (redisFailing) return;
    redisFailing = true;
    safeLog(
      options.logger ?? consoleLogger,
      'error',
      { code: 'ERR_RL_STORE_FAILED', store: 'redis-leases', err: error },
      'ERR_RL_STORE_FAILED: Redis leases failed; concurrency is enforced per process until Redis answers',
    );
  };
  let requests = 0;
  let refused = 0;
  const rejectedBy = new Array<number>(concurrency.length).fill(0);

  function stateOf(c: ConcurrencyPolicy, key: string): KeyState {
    let s = c.keys.get(key);
    if (s === undefined) {
      s = new KeyState();
      c.keys.set(key, s);
    }
    return s;
  }

  function tidy(c: ConcurrencyPolicy, key: string, s: KeyState): void {
    if (s.leases.size === 0 && s.queue.length === 0) c.keys.delete(key);
  }

  /** Ends lease `id` of `key` and hands freed slots to the waiters, oldest first. */
  function release(c: ConcurrencyPolicy, key: string, id: number): void {
    if (c.redis !== undefined && !local.has(id)) {
      c.redis.release(key, c.name, leaseId(id)).catch(redisFailed);
      return;
    }
    local.delete(id);
    const s = c.keys.get(key);
    if (s === undefined) return;
    releaseLease(s.leases, id);
    grant(c, key, s);
  }

  function grant(c: ConcurrencyPolicy, key: string, s: KeyState): void {
    while (s.queue.length > 0) {
      const w = s.queue[0] as Waiter;
      if (!acquireLease(s.leases, clock(), c.limit, c.leaseMs, w.id)) break;
      s.queue.shift();
      w.done = true;
      w.resolve(true);
    }
    tidy(c, key, s);
  }

  /** Waits in the key's FIFO queue; resolves false on timeout or abort. */
  function wait(c: ConcurrencyPolicy, key: string, s: KeyState, id: number, signal: AbortSignal | undefined): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      const waiter: Waiter = {
        id,
        done: false,
        resolve(granted) {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve(granted);
        },
      };
      const leave = (): void => {
        if (waiter.done) return;
        waiter.done = true;
        const i = s.queue.indexOf(waiter);
        if (i >= 0) s.queue.splice(i, 1);
        waiter.resolve(false);
        grant(c, key, s);
      };
      const onAbort = (): void => leave();
      const timer = setTimeout(() => {
        // A lease may have expired meanwhile without anyone releasing it: try once more before giving up.
        grant(c, key, s);
        leave();
      }, c.queueTimeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      s.queue.push(waiter);
    });
  }

  function concurrencyResult(c: ConcurrencyPolicy, key: string, allowed: boolean, now: number, grant?: LeaseGrant): Result {
    if (grant !== undefined) {
      const retry = allowed ? 0 : Math.max(1, Math.min(1000, grant.earliestExpiryMs));
      return new Result(
        c.name,
        'concurrency',
        allowed,
        c.limit,
        c.leaseMs,
        c.limit,
        Math.max(0, c.limit - grant.inFlight),
        retry,
        c.leaseMs,
      );
    }
    const s = c.keys.get(key);
    const leases = s?.leases ?? new Map<number, number>();
    const [earliest, latest] = deadlineRange(leases, now);
    // A slot frees when a holder finishes, which no one can predict; the earliest expiry bounds it.
    const retry = allowed ? 0 : Math.max(1, Math.min(1000, earliest - now));
    return new Result(c.name, 'concurrency', allowed, c.limit, c.leaseMs, c.limit, Math.max(0, c.limit - leases.size), retry, latest - now);
  }

  function compose(
    key: string,
    cost: number,
    taken: readonly number[],
    refusedBy: number,
    rate: Decision | undefined,
    grants?: Grants,
    count = true,
  ): Decision {
    const now = clock();
    const results: PolicyResult[] = order.map((at) => {
      if (at >= 0) return concurrencyResult(concurrency[at] as ConcurrencyPolicy, key, at !== refusedBy, now, grants?.[at]);
      const i = -1 - at;
      const r = rate?.policies[i];
      if (r !== undefined) return r;
      // Not evaluated: the request was refused for concurrency before the rate policies ran, so they charged nothing.
      const d = inner?.policies[i] as PolicyDescription;
      return new Result(d.name, d.algorithm, true, d.limit, d.windowMs, d.capacity, d.capacity, 0, 0);
    });
    const limited = refusedBy >= 0 || rate?.limited === true;
    if (refusedBy >= 0 && count) {
      refused += 1;
      rejectedBy[refusedBy] = (rejectedBy[refusedBy] as number) + 1;
    }
    let binding: PolicyResult | undefined;
    if (refusedBy >= 0) binding = results[order.indexOf(refusedBy)];
    else if (rate?.limited === true) binding = results.find((r) => r.name === rate.policy);
    else for (const r of results) if (binding === undefined || r.remaining / r.capacity < binding.remaining / binding.capacity) binding = r;
    const b = binding as PolicyResult;
    let released = false;
    const releaseAll =
      taken.length === 0 || limited
        ? undefined
        : () => {
            if (released) return;
            released = true;
            for (let i = 0; i < taken.length; i++) release(concurrency[i] as ConcurrencyPolicy, key, taken[i] as number);
          };
    const renewAll =
      releaseAll === undefined
        ? undefined
        : () => {
            if (released) return false;
            const now = clock();
            let all = true;
            for (let i = 0; i < taken.length; i++) {
              const c = concurrency[i] as ConcurrencyPolicy;
              const id = taken[i] as number;
              if (c.redis !== undefined && !local.has(id)) {
                c.redis.renew(key, c.name, c.leaseMs, leaseId(id)).catch(redisFailed);
                continue;
              }
              const s = c.keys.get(key);
              if (s === undefined || !renewLease(s.leases, id, now, c.leaseMs)) all = false;
            }
            return all;
          };
    const reason: DecisionReason = refusedBy >= 0 ? 'limited' : (rate?.reason ?? 'allowed');
    return new ConcurrentDecision(
      !limited || shadowMode,
      limited,
      reason,
      mode,
      key,
      rate?.cost ?? cost,
      b.name,
      b.remaining,
      limited ? (refusedBy >= 0 ? b.retryAfterMs : (rate?.retryAfterMs ?? 0)) : 0,
      b.resetMs,
      limited ? 0 : (rate?.delayMs ?? 0),
      results,
      rate?.shadow,
      rate?.degraded ?? false,
      releaseAll,
      renewAll,
    );
  }

  /** The rate policies' options: everything but the queue's abort signal. */
  function rateCheck(opts: CheckOptions | undefined): CheckOptions | undefined {
    if (opts === undefined) return undefined;
    const { signal: _signal, ...rest } = opts;
    return rest.cost === undefined && rest.plan === undefined ? undefined : rest;
  }

  /** Concurrency policies count one key: the string key, or in a keyed decision the first concurrency policy's key. */
  function keyOf(target: LimiterKey): string {
    if (typeof target === 'string') return normalizeKey(target);
    const first = concurrency[0] as ConcurrencyPolicy;
    return normalizeKey(target[first.name] ?? Object.values(target)[0] ?? '');
  }

  function finishRate(
    key: string,
    cost: number,
    taken: number[],
    opts: CheckOptions | undefined,
    grants?: Grants,
    target: LimiterKey = key,
  ): Decision | Promise<Decision> {
    if (inner === undefined) return compose(key, cost, taken, -1, undefined, grants);
    const giveBack = (): void => {
      for (let i = 0; i < taken.length; i++) release(concurrency[i] as ConcurrencyPolicy, key, taken[i] as number);
    };
    let pending: Decision | Promise<Decision>;
    try {
      pending = inner.decide(target, rateCheck(opts));
    } catch (error) {
      giveBack();
      throw error;
    }
    const done = (rate: Decision): Decision => {
      if (rate.limited) giveBack();
      return compose(rate.key, cost, taken, -1, rate, grants);
    };
    if (pending instanceof Promise) {
      return pending.then(done, (error: unknown) => {
        giveBack();
        throw error;
      });
    }
    return done(pending);
  }

  function decide(target: LimiterKey, opts?: CheckOptions): Decision | Promise<Decision> {
    const key = keyOf(target);
    const cost = opts?.cost ?? 1;
    requests += 1;
    if (remote) return decideRemote(key, cost, opts, target);
    const taken: number[] = [];
    const now = clock();
    for (let i = 0; i < concurrency.length; i++) {
      const c = concurrency[i] as ConcurrencyPolicy;
      const s = stateOf(c, key);
      const id = nextId++;
      if (s.queue.length === 0 && acquireLease(s.leases, now, c.limit, c.leaseMs, id)) {
        taken.push(id);
        continue;
      }
      if (c.queueSize > 0 && s.queue.length < c.queueSize && !shadowMode && opts?.signal?.aborted !== true) {
        return queued(key, cost, taken, i, id, opts, target);
      }
      for (let j = 0; j < taken.length; j++) release(concurrency[j] as ConcurrencyPolicy, key, taken[j] as number);
      tidy(c, key, s);
      return compose(key, cost, [], i, undefined);
    }
    return finishRate(key, cost, taken, opts, undefined, target);
  }

  /** Leases taken in this process while Redis failed (released locally even after Redis is back). */
  const local = new Set<number>();
  const remote = concurrency.some((c) => c.redis !== undefined);

  async function decideRemote(key: string, cost: number, opts: CheckOptions | undefined, target: LimiterKey): Promise<Decision> {
    const taken: number[] = [];
    const grants: Grants = [];
    for (let i = 0; i < concurrency.length; i++) {
      const c = concurrency[i] as ConcurrencyPolicy;
      const id = nextId++;
      let granted: boolean;
      if (c.redis !== undefined) {
        try {
          const g = await c.redis.acquire(key, c.name, c.limit, c.leaseMs, leaseId(id));
          redisFailing = false;
          grants[i] = g;
          granted = g.granted;
        } catch (error) {
          redisFailed(error);
          granted = acquireLease(stateOf(c, key).leases, clock(), c.limit, c.leaseMs, id);
          if (granted) local.add(id);
        }
      } else {
        granted = acquireLease(stateOf(c, key).leases, clock(), c.limit, c.leaseMs, id);
      }
      if (!granted) {
        for (let j = 0; j < taken.length; j++) release(concurrency[j] as ConcurrencyPolicy, key, taken[j] as number);
        const s = c.keys.get(key);
        if (s !== undefined) tidy(c, key, s);
        return compose(key, cost, [], i, undefined, grants);
      }
      taken.push(id);
    }
    return finishRate(key, cost, taken, opts, grants, target);
  }

  async function queued(
    key: string,
    cost: number,
    taken: number[],
    from: number,
    id: number,
    opts: CheckOptions | undefined,
    target: LimiterKey,
  ): Promise<Decision> {
    for (let i = from; i < concurrency.length; i++) {
      const c = concurrency[i] as ConcurrencyPolicy;
      const s = stateOf(c, key);
      const leaseId = i === from ? id : nextId++;
      const got =
        (s.queue.length === 0 && acquireLease(s.leases, clock(), c.limit, c.leaseMs, leaseId)) ||
        (c.queueSize > s.queue.length && (await wait(c, key, s, leaseId, opts?.signal)));
      if (!got) {
        for (let j = 0; j < taken.length; j++) release(concurrency[j] as ConcurrencyPolicy, key, taken[j] as number);
        tidy(c, key, s);
        return compose(key, cost, [], i, undefined);
      }
      taken.push(leaseId);
    }
    return finishRate(key, cost, taken, opts, undefined, target);
  }

  /** What a request would get, without taking a lease (process-local leases only) or charging anything. */
  async function peek(target: LimiterKey, opts?: CheckOptions): Promise<Decision> {
    const key = keyOf(target);
    const now = clock();
    let refusedBy = -1;
    for (let i = 0; i < concurrency.length && refusedBy < 0; i++) {
      const c = concurrency[i] as ConcurrencyPolicy;
      const s = c.keys.get(key);
      if (s !== undefined) expireLeases(s.leases, now);
      if ((s?.leases.size ?? 0) >= c.limit) refusedBy = i;
    }
    const rate = inner === undefined ? undefined : await inner.peek(target, rateCheck(opts));
    return compose(key, opts?.cost ?? 1, [], refusedBy, rate, undefined, false);
  }

  const base: Limiter = inner ?? {
    check: (key, opts) => Promise.resolve(decide(key, opts)),
    decide,
    peek,
    refund: async () => ({ refunded: false, policies: [] }),
    async reset() {},
    policies: [],
    shadowPolicies: [],
    plans: new Map(),
    defaultPlan: 'default',
    mode,
    on: () => () => {},
    stats: () => ({ requests: 0, limited: 0, shadowLimited: 0, shadowOnly: 0, enforcedOnly: 0, storeErrors: 0, outages: 0, policies: [] }),
    resetStats() {},
    async close() {},
  };
  return {
    ...base,
    check(key, opts) {
      try {
        return Promise.resolve(decide(key, opts));
      } catch (error) {
        return Promise.reject(error);
      }
    },
    decide,
    peek,
    async reset(key) {
      for (const c of concurrency) c.keys.delete(key);
      await inner?.reset(key);
    },
    policies: Object.freeze(descriptions),
    plans: new Map([[base.defaultPlan, Object.freeze(descriptions)]]),
    stats() {
      const s = base.stats();
      const own = inner === undefined ? requests : s.requests + refused;
      return {
        ...s,
        requests: own,
        limited: s.limited + refused,
        policies: [
          ...concurrency.map((c, i) => ({ name: c.name, plan: base.defaultPlan, shadow: false, rejected: rejectedBy[i] as number })),
          ...s.policies,
        ],
      };
    },
    resetStats() {
      base.resetStats();
      requests = 0;
      refused = 0;
      rejectedBy.fill(0);
    },
  };
}
