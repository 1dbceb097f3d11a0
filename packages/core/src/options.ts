/**
 * @module Limiter options: the public `LimiterOptions`, and `parseLimiterOptions()` which validates them
 * once and returns a frozen `LimiterConfig`. Undefined values count as absent; unknown keys are errors.
 */

import type { CompiledPolicy } from './algorithms/kernel.js';
import { monotonicClock } from './clock.js';
import { parseValidate, type ValidateOption } from './diagnostics.js';
import { RateLimitConfigError } from './errors.js';
import { MILLI, toMilli } from './internal/fixed-point.js';
import { PEER_LIMITER_OPTIONS } from './internal/peer-options.js';
import {
  type KeysEnum,
  omitUndefined,
  positiveInteger,
  readOptions,
  readSwitchOptions,
  rejectUnknownKeys,
} from './internal/read-options.js';
import { checkLogger, type Logger, toLogger } from './logging.js';
import { type PlanConfig, type PlanOptions, parsePlans } from './plans/plan-options.js';
import { compilePolicy, isBucket } from './policy.js';
import { MemoryStore } from './stores/memory-store.js';
import { checkState } from './stores/state-claims.js';
import type { Store } from './stores/store.js';
import type { AnyPolicyOptions, Clock, PolicyOptions } from './types.js';

/** Shadow policies: candidates evaluated beside the enforced ones, never blocking, to roll out a new limit safely. */
export interface ShadowOptions {
  /**
   * Candidate policies evaluated on every request with their own state, in the same store call; they
   * never consume the enforced budget and never block. Compare them in `limiter.stats()`.
   */
  policies: PolicyOptions | readonly PolicyOptions[];
}

/** The options of `createLimiter`: policies or plans, shadow policies, the store, the clock, the failure mode and the observability switches. */
export interface LimiterOptions extends PlanOptions {
  /**
   * The limiter's identity in the store: part of every key name (`<prefix>:v2:<name>:{<key>}:<policy>` on
   * Redis), so limiters with different names never share state, and the same limiter in several
   * processes (the same name) shares it, across restarts and changes of limit. 1 to 64 printable ASCII
   * characters without spaces, colons or braces, e.g. `'login'`. Without a name the key names are those
   * of earlier versions, and a second limiter without a name that would use the same keys on the same
   * store is refused (`ERR_RL_SHARED_STATE`). Also the `limiter` label (`tollgate.limiter`) of the
   * limiter's metrics. Defaults to none.
   */
  name?: string;
  /**
   * The enforced policies; a request is admitted only if every one admits it. Required, unless `plans`
   * lists several sets of policies instead (this is the one-plan form: its plan is named `'default'`).
   * Rate policies, and concurrency policies (`{ algorithm: 'concurrency', limit }`, see
   * `ConcurrencyPolicyOptions`), decided together all or nothing.
   */
  policies?: AnyPolicyOptions | readonly AnyPolicyOptions[];
  /**
   * Candidate policies evaluated on every request beside the enforced ones, with their own state, in the
   * same store call: they never consume the enforced budget and never block (`decision.shadow` carries
   * their verdicts; compare them in `limiter.stats()`). To try a new limit or algorithm before enforcing
   * it; `mode: 'shadow'` instead puts the whole limiter in shadow. Defaults to none.
   */
  shadowPolicies?: PolicyOptions | readonly PolicyOptions[];
  /** The older spelling of `shadowPolicies`: `shadow: { policies }`. Still accepted; pass one of the two. */
  shadow?: ShadowOptions;
  /**
   * `'enforce'` blocks over-limit requests; `'shadow'` computes and charges exactly as enforcing would but
   * never blocks (`decision.allowed` is always true, `decision.limited` carries the verdict).
   * Defaults to `'enforce'`.
   */
  mode?: 'enforce' | 'shadow';
  /** Where state lives. Defaults to a new `MemoryStore()` (bounded to 1,000,000 entries). */
  store?: Store;
  /** Integer milliseconds. Defaults to a monotonic clock anchored to the Unix epoch. */
  clock?: Clock;
  /** The cost of a check that passes none. A positive multiple of 1/1000. Defaults to `1`. */
  cost?: number;
  /** Receives warnings and errors, pino-style `(fields, message)`. Defaults to `console`, one line per entry. */
  logger?: Logger;
  /**
   * Switches warnings off: `false` silences every one, `{ WRN_RL_UNKNOWN_PLAN: false }` one code (every
   * `WRN_RL_*` code of docs/errors.md is accepted). Defaults to all on.
   */
  validate?: ValidateOption;
  /**
   * What a check answers when the store cannot decide it (the key's node is down or silent, or the key's
   * state gave an error); the decision has `degraded: true`:
   * - `'local'`: decide with an in-process limiter holding `localShare` of each limit, continuing each key
   *   from the store's last answer about it (an exhausted key stays exhausted), so limiting never
   *   switches off (whoever can make the store fail or slow cannot lift the limits);
   * - `'open'`: admit, with `reason: 'store-error'` (availability first, no limit at all meanwhile);
   * - `'closed'`: reject with `reason: 'store-error'` (adapters answer 503, never 429).
   * Defaults to `'local'`.
   */
  onStoreError?: 'open' | 'closed' | 'local';
  /**
   * How long a check may wait for the store, in ms. A node fails when calls are pending on it and none
   * of its calls has settled for this long, counting only time this process could read replies; and a
   * call on a node that answers, but slowly, is answered by `onStoreError` once it has waited this long
   * (plus 0.1 ms per call queued ahead of it) of event-loop idle time. A blocked or busy event loop (a
   * backlog of replies draining) never counts. Synchronous stores (MemoryStore) are never timed out.
   * Defaults to `50`: a check then waits at most about 70 ms for Redis.
   */
  storeTimeoutMs?: number;

  /**
   * `onStoreError: 'local'`: the share of each policy's limit (and burst) the in-process fallback allows,
   * in (0, 1]; e.g. 0.25 on four instances keeps the total near the global limit. Defaults to `1`.
   */
  localShare?: number;
  /**
   * One circuit breaker per store node (Redis connection or Cluster master): after `failureThreshold`
   * outage events in a row (all calls in flight when a node fails are one event), checks for that node's
   * keys skip it and get the failure mode's answer, except one probe at a time (first after 10 ms, doubling
   * up to `cooldownMs` while probes hang); the first reply closes it. `false`: always call the store.
   * On by default: absent or `true` is `{ failureThreshold: 1, cooldownMs: 1_000 }`.
   */
  breaker?: BreakerOptions | boolean;
  /**
   * The sketches behind `limiter.hotKeys(n)`: each monitors `size` keys (the keys rejected most, and those
   * most often admitted near their limit) per epoch of `epochMs`, and a report covers the current epoch and
   * the one before. Memory is fixed by `size` whatever the number of keys, and a count errs by at most N / size
   * (N the decisions in the window). Off by default, since keeping them costs decisions over the limit a few
   * percent: `true` is `{ size: 128, epochMs: 60_000 }`. Off (absent or `false`): no sketches and no
   * counting; `hotKeys()` then returns an empty report of `size` 0.
   */
  hotKeys?: HotKeysOptions | boolean;
}

/** The hot-key sketches: how many keys each keeps, and the epoch they count over. */
export interface HotKeysOptions {
  /** Keys each sketch monitors, an integer from 1 to 65,536. Defaults to `128`. */
  size?: number;
  /** The epoch, in ms (a positive integer): reports cover one to two epochs. Defaults to `60_000`. */
  epochMs?: number;
}

/** The per-node circuit breaker of a store: how many failures open it and how long it stays open. */
export interface BreakerOptions {
  /** Outage events in a row that open a node's breaker. Defaults to `1`. */
  failureThreshold?: number;
  /** The longest wait between probes of an open node, in ms. Defaults to `1_000`. */
  cooldownMs?: number;
}

/** `LimiterOptions` resolved and validated. */
export interface LimiterConfig {
  /** The limiter's `name`, part of its key names; undefined without one. */
  readonly name: string | undefined;
  /** The default plan's enforced policies. */
  readonly policies: readonly CompiledPolicy[];
  /** Every plan, its enforced policies and their local fallback twins (`localPolicies` of each plan). */
  readonly plans: PlanConfig;
  readonly localPlans: ReadonlyMap<string, readonly CompiledPolicy[]>;
  readonly shadowPolicies: readonly CompiledPolicy[];
  readonly mode: 'enforce' | 'shadow';
  readonly store: Store;
  readonly ownsStore: boolean;
  readonly clock: Clock;
  readonly defaultCost: number;
  readonly logger: Logger;
  readonly onStoreError: 'open' | 'closed' | 'local';
  readonly storeTimeoutMs: number;
  /** The enforced and shadow policies scaled by `localShare`, for `onStoreError: 'local'`. */
  readonly localPolicies: readonly CompiledPolicy[];
  readonly breaker: Readonly<Required<BreakerOptions>> | false;
  readonly hotKeys: Readonly<Required<HotKeysOptions>> | false;
  readonly validate: ValidateOption;
}

/** Every option `createLimiter` takes (the adapters pass these through). */
export const LIMITER_KEYS: KeysEnum<LimiterOptions> = {
  name: true,
  policies: true,
  plans: true,
  defaultPlan: true,
  unknownPlan: true,
  shadowPolicies: true,
  shadow: true,
  mode: true,
  store: true,
  clock: true,
  cost: true,
  logger: true,
  validate: true,
  onStoreError: true,
  storeTimeoutMs: true,
  localShare: true,
  breaker: true,
  hotKeys: true,
};

/** Printable ASCII without space, colon or braces: a key name segment before the hash tag (stores/redis/key-names.ts). */
const LIMITER_NAME = /^[!-9;-z|~]{1,64}$/;

function readLimiterName(name: unknown): string | undefined {
  if (name === undefined) return undefined;
  if (typeof name !== 'string' || !LIMITER_NAME.test(name)) {
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_LIMITER_NAME',
      'name',
      "must be 1 to 64 printable ASCII characters without spaces, colons or braces (it becomes part of every key name), e.g. 'login'",
      name,
    );
  }
  return name;
}

/** `p` as a policy of the limiter named `limiter`: the name goes into its storage identity and key names. */
function ofLimiter(p: CompiledPolicy, limiter: string | undefined): CompiledPolicy {
  // Unnamed ids start with their role and a colon; a limiter name has no colon, so the two never meet.
  return limiter === undefined ? p : Object.freeze({ ...p, limiter, id: `${limiter}|${p.id}` });
}

function compileList(list: unknown, path: string, shadow: boolean, limiter?: string): CompiledPolicy[] {
  const items = Array.isArray(list) ? list : [list];
  if (items.length === 0) {
    throw new RateLimitConfigError(
      'ERR_RL_NO_POLICIES',
      path,
      'must list at least one policy, e.g. [{ limit: 100, windowMs: 60_000 }]',
      list,
    );
  }
  const compiled = items.map((p, i) =>
    ofLimiter(compilePolicy(p as PolicyOptions, Array.isArray(list) ? `${path}[${i}]` : path, shadow), limiter),
  );
  const seen = new Map<string, number>();
  compiled.forEach((p, i) => {
    const first = seen.get(p.name);
    if (first !== undefined) {
      throw new RateLimitConfigError(
        'ERR_RL_DUPLICATE_POLICY',
        `${path}[${i}].name`,
        `repeats the name of ${path}[${first}]; give every policy a unique name (names label the RateLimit headers)`,
        p.name,
      );
    }
    seen.set(p.name, i);
  });
  return compiled;
}

function isStore(value: unknown): value is Store {
  const s = value as Store | null;
  return typeof s === 'object' && s !== null && typeof s.apply === 'function' && typeof s.reset === 'function';
}

/** `shadowPolicies`, or the policies of its older spelling `shadow: { policies }`; undefined when neither. */
function readShadowPolicies(options: LimiterOptions): LimiterOptions['shadowPolicies'] {
  const shadow = options.shadow;
  if (shadow === undefined) return options.shadowPolicies;
  if (shadow === null || typeof shadow !== 'object' || shadow.policies === undefined) {
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_SHADOW',
      'shadow',
      'must be an object like { policies: [{ algorithm: "gcra", limit: 100, windowMs: 60_000 }] } (or pass shadowPolicies: [...])',
      shadow,
    );
  }
  rejectUnknownKeys(shadow, { policies: true }, 'shadow');
  if (options.shadowPolicies !== undefined) {
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_OPTION',
      'shadow',
      "is the older spelling of 'shadowPolicies'; pass only 'shadowPolicies'",
      shadow,
    );
  }
  return shadow.policies;
}

/** Where a list of compiled policies came from: its option path, and whether it was given as an array. */
interface PolicyPlace {
  readonly list: readonly CompiledPolicy[];
  readonly path: string;
  readonly array: boolean;
}

/** Throws when the default cost is above a policy's capacity (no request could pass), naming the option as written. */
function checkCostFits(defaultCost: number, places: readonly PolicyPlace[]): void {
  for (const { list, path, array } of places) {
    list.forEach((p, i) => {
      // A concurrency policy takes one lease whatever the cost.
      if (defaultCost <= p.capMilli || p.algorithm === 'concurrency') return;
      const field = isBucket(p.algorithm) ? 'burst' : 'limit';
      throw new RateLimitConfigError(
        'ERR_RL_COST_EXCEEDS_CAPACITY',
        `${array ? `${path}[${i}]` : path}.${field}`,
        `(${p.capacity}, policy '${p.name}') is below the cost ${defaultCost / MILLI}, so no request could ever pass; ` +
          `raise ${field} or lower cost`,
        p.capacity,
      );
    });
  }
}

/** The local fallback's policies of each plan (onStoreError 'local'): each scaled by `localShare`. */
function localPlansOf(
  options: LimiterOptions,
  plans: PlanConfig,
  shadowList: LimiterOptions['shadowPolicies'],
  shadowPath: string,
  localShare: number,
  name: string | undefined,
): Map<string, readonly CompiledPolicy[]> {
  const localPlans = new Map<string, readonly CompiledPolicy[]>();
  for (const plan of plans.plans.keys()) {
    const list = options.plans === undefined ? options.policies : options.plans[plan];
    const path = options.plans === undefined ? 'policies' : `plans['${plan}']`;
    localPlans.set(
      plan,
      scalePolicies(list as AnyPolicyOptions | readonly AnyPolicyOptions[], shadowList, path, shadowPath, localShare, name),
    );
  }
  return localPlans;
}

/** Validates limiter options and resolves defaults. Throws `RateLimitConfigError` naming the option. */
export function parseLimiterOptions(input: LimiterOptions, nameByAdapter = false): LimiterConfig {
  const options = readOptions(input, LIMITER_KEYS, 'options', '{ policies: [{ limit: 100, windowMs: 60_000 }] }', PEER_LIMITER_OPTIONS);
  const name = readLimiterName(options.name);
  const plans = parsePlans(options as Parameters<typeof parsePlans>[0], (list, path) => compileList(list, path, false, name));
  const policies = plans.plans.get(plans.defaultPlan) as CompiledPolicy[];
  const shadowList = readShadowPolicies(options);
  const shadowPath = options.shadow === undefined ? 'shadowPolicies' : 'shadow.policies';
  const shadowPolicies = shadowList === undefined ? [] : compileList(shadowList, shadowPath, true, name);
  const mode = options.mode ?? 'enforce';
  if (mode !== 'enforce' && mode !== 'shadow') {
    throw new RateLimitConfigError('ERR_RL_INVALID_MODE', 'mode', "must be 'enforce' or 'shadow'", options.mode);
  }
  if (options.store !== undefined && !isStore(options.store)) {
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_STORE',
      'store',
      'must implement the Store interface (apply, reset), e.g. new MemoryStore() or new RedisStore({ client })',
      options.store,
    );
  }
  if (options.clock !== undefined && typeof options.clock !== 'function') {
    throw new RateLimitConfigError('ERR_RL_INVALID_CLOCK', 'clock', 'must be a function returning integer milliseconds', options.clock);
  }
  checkLogger(options.logger, 'logger');
  const defaultCost = options.cost === undefined ? MILLI : toMilli(options.cost);
  if (defaultCost < 0) {
    throw new RateLimitConfigError('ERR_RL_INVALID_COST', 'cost', 'must be a positive finite multiple of 1/1000', options.cost);
  }
  const all = [...[...plans.plans.values()].flat(), ...shadowPolicies];
  checkCostFits(defaultCost, [
    ...[...plans.plans].map(([plan, list]) =>
      options.plans === undefined
        ? { list, path: 'policies', array: Array.isArray(options.policies) }
        : { list, path: `plans['${plan}']`, array: Array.isArray((options.plans as Record<string, unknown>)[plan]) },
    ),
    { list: shadowPolicies, path: shadowPath, array: Array.isArray(shadowList) },
  ]);
  const onStoreError = options.onStoreError ?? 'local';
  if (onStoreError !== 'open' && onStoreError !== 'closed' && onStoreError !== 'local') {
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_ON_STORE_ERROR',
      'onStoreError',
      "must be 'open', 'closed' or 'local'",
      options.onStoreError,
    );
  }
  const storeTimeoutMs = positiveInteger(
    options.storeTimeoutMs ?? 50,
    'ERR_RL_INVALID_STORE_TIMEOUT',
    'storeTimeoutMs',
    'must be a positive integer number of ms (tens of ms keep a slow store from becoming your latency)',
  );
  const localShare = options.localShare ?? 1;
  if (typeof localShare !== 'number' || !(localShare > 0 && localShare <= 1)) {
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_LOCAL_SHARE',
      'localShare',
      'must be a number in (0, 1], e.g. 1 / instances',
      options.localShare,
    );
  }
  const localPlans =
    onStoreError === 'local'
      ? localPlansOf(options, plans, shadowList, shadowPath, localShare, name)
      : new Map<string, readonly CompiledPolicy[]>();
  const localPolicies = localPlans.get(plans.defaultPlan) ?? [];
  const ownsStore = options.store === undefined;
  const store = options.store ?? new MemoryStore();
  // Last, once every option is valid. The limiter's token is its first policy, which its StoreGuard also
  // holds (the default plan's first policy): it takes the claim once built and gives it back on close().
  checkState(store, [...new Set(all)], policies[0] as CompiledPolicy, nameByAdapter);
  return Object.freeze({
    name,
    policies,
    plans,
    localPlans,
    shadowPolicies,
    mode,
    store,
    ownsStore,
    clock: options.clock ?? monotonicClock,
    defaultCost,
    logger: toLogger(options.logger),
    onStoreError,
    storeTimeoutMs,
    localPolicies,
    breaker: parseBreaker(options.breaker),
    hotKeys: parseHotKeys(options.hotKeys),
    validate: parseValidate(options.validate),
  });
}

/** Each policy with its limit and burst multiplied by `share` (at least 1), for the local fallback. */
function scalePolicies(
  policies: AnyPolicyOptions | readonly AnyPolicyOptions[],
  shadow: LimiterOptions['shadowPolicies'],
  path: string,
  shadowPath: string,
  share: number,
  limiter: string | undefined,
): CompiledPolicy[] {
  const scale = (list: AnyPolicyOptions | readonly AnyPolicyOptions[], shadow: boolean, path: string) =>
    (Array.isArray(list) ? list : [list]).map((p: AnyPolicyOptions, i) =>
      ofLimiter(
        compilePolicy(
          omitUndefined({
            ...p,
            limit: Math.max(1, Math.floor(p.limit * share)),
            burst: !('burst' in p) || p.burst === undefined ? undefined : Math.max(1, Math.floor(p.burst * share)),
          }) as AnyPolicyOptions,
          `${path}[${i}] (scaled by localShare)`,
          shadow,
        ),
        limiter,
      ),
    );
  return [...scale(policies, false, path), ...(shadow ? scale(shadow, true, shadowPath) : [])];
}

function parseBreaker(input: BreakerOptions | boolean | undefined): Readonly<Required<BreakerOptions>> | false {
  const options = readSwitchOptions(
    input,
    { failureThreshold: true, cooldownMs: true },
    'breaker',
    '{ failureThreshold: 1, cooldownMs: 1_000 }',
    'ERR_RL_INVALID_BREAKER',
    'on',
  );
  if (options === false) return false;
  const { failureThreshold = 1, cooldownMs = 1_000 } = options;
  return Object.freeze({
    failureThreshold: positiveInteger(failureThreshold, 'ERR_RL_INVALID_BREAKER', 'breaker.failureThreshold', 'must be a positive integer'),
    cooldownMs: positiveInteger(cooldownMs, 'ERR_RL_INVALID_BREAKER', 'breaker.cooldownMs', 'must be a positive integer number of ms'),
  });
}

/** The largest hot-key sketch: the 8 sketches of this many keys hold about 50 MB when full (about 100 bytes per key), plus the key strings. */
const MAX_HOT_KEYS_SIZE = 65_536;

function parseHotKeys(input: HotKeysOptions | boolean | undefined): Readonly<Required<HotKeysOptions>> | false {
  const options = readSwitchOptions(
    input,
    { size: true, epochMs: true },
    'hotKeys',
    '{ size: 128, epochMs: 60_000 }',
    'ERR_RL_INVALID_HOT_KEYS',
    'off',
  );
  if (options === false) return false;
  const { size = 128, epochMs = 60_000 } = options;
  return Object.freeze({
    size: positiveInteger(
      size,
      'ERR_RL_INVALID_HOT_KEYS',
      'hotKeys.size',
      `must be an integer from 1 to ${MAX_HOT_KEYS_SIZE}`,
      MAX_HOT_KEYS_SIZE,
    ),
    epochMs: positiveInteger(epochMs, 'ERR_RL_INVALID_HOT_KEYS', 'hotKeys.epochMs', 'must be a positive integer number of ms'),
  });
}
