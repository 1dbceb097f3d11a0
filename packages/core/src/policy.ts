/**
 * @module Policy compilation: validates a policy's options once, at construction, and precomputes the
 * integer parameters the algorithms use, so a decision does no division it could have done earlier.
 */
import { concurrency } from './algorithms/concurrency.js';
import { algorithms } from './algorithms/index.js';
import type { CompiledPolicy } from './algorithms/kernel.js';
import { RateLimitConfigError } from './errors.js';
import { gcd, MILLI } from './internal/fixed-point.js';
import { PEER_POLICY_OPTIONS, peerHint } from './internal/peer-options.js';
import { type KeysEnum, positiveInteger } from './internal/read-options.js';
import type { AlgorithmId, AnyPolicyOptions, ConcurrencyPolicyOptions, PolicyAlgorithm, PolicyOptions, QuotaUnit } from './types.js';

const ALGORITHM_IDS = Object.keys(algorithms) as AlgorithmId[];
const BUCKETS: ReadonlySet<AlgorithmId> = new Set(['token-bucket', 'gcra', 'leaky-bucket']);

/** The bucket family (token-bucket, gcra, leaky-bucket) has a `burst` capacity; the window family does not. */
export function isBucket(algorithm: PolicyAlgorithm): boolean {
  return BUCKETS.has(algorithm as AlgorithmId);
}
const UNITS: readonly QuotaUnit[] = ['requests', 'content-bytes', 'concurrent-requests'];
const NAME_PATTERN = /^[\x21-\x7e](?:[\x20-\x7e]{0,62}[\x21-\x7e])?$/;

const POLICY_KEYS: KeysEnum<PolicyOptions> = {
  name: true,
  algorithm: true,
  limit: true,
  windowMs: true,
  burst: true,
  anchor: true,
  delayAfter: true,
  maxDelayMs: true,
  unit: true,
};

function isPositiveInteger(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v > 0;
}

const CONCURRENCY_KEYS: KeysEnum<ConcurrencyPolicyOptions> = {
  name: true,
  algorithm: true,
  limit: true,
  leaseMs: true,
  maxLeaseMs: true,
  queue: true,
  unit: true,
};

function concurrencyInteger(value: unknown, path: string, hint: string): number {
  return positiveInteger(value, 'ERR_RL_INVALID_CONCURRENCY', path, `must be a positive integer (${hint})`);
}

/** A concurrency policy (algorithms/concurrency.ts): `windowMs` is its lease time, `capacity` its limit. */
function compileConcurrency(options: ConcurrencyPolicyOptions, path: string): CompiledPolicy {
  for (const key of Object.keys(options)) {
    if (key in POLICY_KEYS && !(key in CONCURRENCY_KEYS)) {
      throw new RateLimitConfigError(
        'ERR_RL_OPTION_NOT_APPLICABLE',
        `${path}.${key}`,
        "applies to rate algorithms only, not 'concurrency' (it counts requests in flight, with no window: leaseMs is how long a lease lives); remove it",
        (options as unknown as Record<string, unknown>)[key],
      );
    }
    if (!(key in CONCURRENCY_KEYS)) {
      throw new RateLimitConfigError(
        'ERR_RL_UNKNOWN_OPTION',
        `${path}.${key}`,
        `is not an option of a concurrency policy (valid: ${Object.keys(CONCURRENCY_KEYS).join(', ')}; in the adapters' options also key)`,
        (options as unknown as Record<string, unknown>)[key],
      );
    }
  }
  if (options.unit !== undefined && options.unit !== 'concurrent-requests') {
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_UNIT',
      `${path}.unit`,
      "of a concurrency policy can only be 'concurrent-requests'",
      options.unit,
    );
  }
  const name = options.name ?? 'default';
  if (typeof name !== 'string' || !NAME_PATTERN.test(name)) {
    throw new RateLimitConfigError('ERR_RL_INVALID_NAME', `${path}.name`, 'must be 1 to 64 printable ASCII characters', options.name);
  }
  let queue: CompiledPolicy['queue'];
  if (options.queue !== undefined) {
    const q = options.queue as unknown;
    if (q === null || typeof q !== 'object' || Array.isArray(q)) {
      throw new RateLimitConfigError(
        'ERR_RL_INVALID_CONCURRENCY',
        `${path}.queue`,
        'must be an object like { size: 10, timeoutMs: 5_000 }',
        q,
      );
    }
    for (const key of Object.keys(q)) {
      if (key !== 'size' && key !== 'timeoutMs') {
        throw new RateLimitConfigError(
          'ERR_RL_UNKNOWN_OPTION',
          `${path}.queue.${key}`,
          'is not a queue option (valid: size, timeoutMs)',
          key,
        );
      }
    }
    queue = Object.freeze({
      size: concurrencyInteger(options.queue.size, `${path}.queue.size`, 'requests that may wait per key'),
      timeoutMs: concurrencyInteger(options.queue.timeoutMs, `${path}.queue.timeoutMs`, 'how long a request may wait, ms'),
    });
  }
  const limit = concurrencyInteger(options.limit, `${path}.limit`, 'requests in flight per key');
  const leaseMs =
    options.leaseMs === undefined
      ? 60_000
      : concurrencyInteger(options.leaseMs, `${path}.leaseMs`, 'ms after which an unreleased lease expires');
  const maxLeaseMs = maxLease(options.maxLeaseMs, leaseMs, path);
  return Object.freeze({
    name,
    algorithm: 'concurrency',
    kernel: concurrency,
    shadow: false,
    limit,
    windowMs: leaseMs,
    capacity: limit,
    unit: 'concurrent-requests',
    anchorFirst: false,
    delayAfter: 0,
    capMilli: limit * MILLI,
    rate: 1,
    tokenTicks: 1,
    capTicks: limit * MILLI,
    delayTicks: 0,
    maxDelayTicks: Number.POSITIVE_INFINITY,
    // Leases count requests in flight, whatever the limit: a change of limit (or plan) keeps them.
    id: `enforce:${name}:concurrency:${leaseMs}`,
    queue,
    maxLeaseMs,
  });
}

/** `maxLeaseMs` of a concurrency policy: at least its `leaseMs`; `5 * leaseMs` when not given. */
function maxLease(value: unknown, leaseMs: number, path: string): number {
  if (value === undefined) return 5 * leaseMs;
  const ms = concurrencyInteger(value, `${path}.maxLeaseMs`, 'the longest a request holds its lease, renewals included');
  if (ms < leaseMs) {
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_CONCURRENCY',
      `${path}.maxLeaseMs`,
      `must be at least leaseMs (${leaseMs}): a lease lives leaseMs before any renewal`,
      value,
    );
  }
  return ms;
}

/** True for `{ algorithm: 'concurrency', ... }`. */
export function isConcurrencyOptions(p: unknown): p is ConcurrencyPolicyOptions {
  return typeof p === 'object' && p !== null && (p as { algorithm?: unknown }).algorithm === 'concurrency';
}

/** ERR_RL_PRECISION's product that passed 2^53 and what brings it back, for a policy of `algorithm`. */
function precisionFix(algorithm: PolicyAlgorithm, limit: number, capacity: number, tokenTicks: number, windowMs: number): string {
  const over = (product: string, value: number) => `${product} = ${value} passes 2^53`;
  if (!Number.isSafeInteger(limit * MILLI))
    return `${over('limit x 1000', limit * MILLI)}; use a smaller limit (count in a larger unit: kilobytes for bytes)`;
  if (isBucket(algorithm)) {
    return (
      `${over(`burst x 1000 x ${tokenTicks}`, capacity * MILLI * tokenTicks)} (${tokenTicks}: windowMs over its greatest common ` +
      'divisor with limit x 1000); use a smaller burst, or a windowMs that shares more factors with limit x 1000 (whole seconds usually do)'
    );
  }
  // The other window algorithms form no product past `limit x 1000`: only sliding-window gets here.
  return `${over('limit x 1000 x windowMs x 2', capacity * MILLI * windowMs * 2)}; use a smaller limit or a shorter window`;
}

/** Validates `options` (found at `path`, e.g. `policies[1]`) and compiles it. */
export function compilePolicy(input: AnyPolicyOptions, path: string, shadow: boolean): CompiledPolicy {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw new RateLimitConfigError('ERR_RL_INVALID_POLICY', path, 'must be an object like { limit: 100, windowMs: 60_000 }', input);
  }
  if (isConcurrencyOptions(input) && !shadow) return compileConcurrency(input, path);
  const options = input as PolicyOptions;
  // The algorithm first: when it is the problem (a shadow 'concurrency' policy, a typo), the options
  // that belong to it (leaseMs, queue) are not, and 'leaseMs is not a policy option' sent users the wrong way.
  const algorithm = readAlgorithm(options, path);
  rejectUnknownPolicyKeys(options, path, algorithm);
  const name = readName(options, path);
  const { limit, windowMs } = readRate(options, path);
  const bucket = isBucket(algorithm);
  checkBurst(options, path, algorithm, bucket);
  checkShaping(options, path, algorithm);
  const unit = readUnit(options, path, algorithm);
  const capacity = bucket ? (options.burst ?? limit) : limit;
  const capMilli = capacity * MILLI;
  const g = gcd(windowMs, limit * MILLI);
  const rate = (limit * MILLI) / g;
  const tokenTicks = windowMs / g;
  const capTicks = capMilli * tokenTicks;
  const delayAfter = options.delayAfter ?? 0;
  // Every product an algorithm forms must stay an exact integer.
  const largest = bucket ? capTicks : algorithm === 'sliding-window' ? capMilli * windowMs * 2 : capMilli;
  if (!Number.isSafeInteger(largest) || !Number.isSafeInteger(limit * MILLI)) {
    throw new RateLimitConfigError(
      'ERR_RL_PRECISION',
      path,
      `is too large for exact integer arithmetic (limit ${limit}, windowMs ${windowMs}${bucket ? `, burst ${capacity}` : ''}): ` +
        precisionFix(algorithm, limit, capacity, tokenTicks, windowMs),
      options,
    );
  }
  // The window algorithms' state (milli-units counted) means the same under any limit, and bucket state
  // records the limit and burst it was written under (gcra.ts, token-bucket.ts convert it): a change of
  // limit or plan keeps it, so neither is part of the identity.
  const params = algorithm === 'fixed-window' ? `${windowMs}/${options.anchor ?? 'clock'}` : `${windowMs}`;
  return Object.freeze({
    name,
    algorithm,
    kernel: algorithms[algorithm],
    shadow,
    limit,
    windowMs,
    capacity,
    unit,
    anchorFirst: options.anchor === 'first-request',
    delayAfter,
    capMilli,
    rate,
    tokenTicks,
    capTicks,
    delayTicks: delayAfter * MILLI * tokenTicks,
    maxDelayTicks:
      options.maxDelayMs === undefined ? Number.POSITIVE_INFINITY : delayAfter * MILLI * tokenTicks + options.maxDelayMs * rate,
    id: `${shadow ? 'shadow' : 'enforce'}:${name}:${algorithm}:${params}`,
    queue: undefined,
  });
}

/**
 * Throws ERR_RL_OPTION_NOT_APPLICABLE for a concurrency policy's option (the algorithm is missing or
 * wrong, as for `burst` on a window), ERR_RL_UNKNOWN_OPTION for a key no policy has.
 */
function rejectUnknownPolicyKeys(options: PolicyOptions, path: string, algorithm: AlgorithmId): void {
  for (const key of Object.keys(options)) {
    if (key in CONCURRENCY_KEYS && !(key in POLICY_KEYS)) {
      throw new RateLimitConfigError(
        'ERR_RL_OPTION_NOT_APPLICABLE',
        `${path}.${key}`,
        `applies to algorithm 'concurrency' only, not '${algorithm}'; set algorithm: 'concurrency' in policies, or remove it`,
        (options as unknown as Record<string, unknown>)[key],
      );
    }
    if (!(key in POLICY_KEYS)) {
      throw new RateLimitConfigError(
        'ERR_RL_UNKNOWN_OPTION',
        `${path}.${key}`,
        `is not a policy option (valid: ${Object.keys(POLICY_KEYS).join(', ')}; in the adapters' options also key)${peerHint(key, PEER_POLICY_OPTIONS)}`,
        (options as unknown as Record<string, unknown>)[key],
      );
    }
  }
}

function readAlgorithm(options: PolicyOptions, path: string): AlgorithmId {
  const algorithm = options.algorithm ?? 'gcra';
  if ((algorithm as string) === 'concurrency') {
    throw new RateLimitConfigError(
      'ERR_RL_OPTION_NOT_APPLICABLE',
      `${path}.algorithm`,
      "'concurrency' is for enforced policies only (a shadow policy never admits anything, so it cannot hold leases); list it in policies",
      options.algorithm,
    );
  }
  if (!ALGORITHM_IDS.includes(algorithm)) {
    throw new RateLimitConfigError(
      'ERR_RL_UNKNOWN_ALGORITHM',
      `${path}.algorithm`,
      `must be one of ${ALGORITHM_IDS.map((a) => `'${a}'`).join(', ')}`,
      options.algorithm,
    );
  }
  return algorithm;
}

function readName(options: PolicyOptions, path: string): string {
  const name = options.name ?? 'default';
  if (typeof name !== 'string' || !NAME_PATTERN.test(name)) {
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_NAME',
      `${path}.name`,
      'must be 1 to 64 printable ASCII characters, not starting or ending with a space (it becomes a header item name)',
      options.name,
    );
  }
  return name;
}

function readRate(options: PolicyOptions, path: string): { limit: number; windowMs: number } {
  const { limit, windowMs } = options;
  if (!isPositiveInteger(limit)) {
    // express-rate-limit takes a function of the request; here a limit per request is a plan.
    const perRequest =
      typeof limit === 'function'
        ? "; a limit that depends on the request is a plan: plans: { free: [...], pro: [...] }, plan: (req) => 'pro'"
        : '';
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_LIMIT',
      `${path}.limit`,
      `must be a positive integer (requests per window)${perRequest}`,
      limit,
    );
  }
  if (!isPositiveInteger(windowMs)) {
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_WINDOW',
      `${path}.windowMs`,
      'must be a positive integer number of milliseconds, e.g. 60_000 for a minute',
      windowMs,
    );
  }
  return { limit, windowMs };
}

function checkBurst(options: PolicyOptions, path: string, algorithm: AlgorithmId, bucket: boolean): void {
  if (options.burst !== undefined) {
    if (!bucket) {
      throw new RateLimitConfigError(
        'ERR_RL_OPTION_NOT_APPLICABLE',
        `${path}.burst`,
        `applies to token-bucket, gcra and leaky-bucket only, not '${algorithm}'; remove it`,
        options.burst,
      );
    }
    if (!isPositiveInteger(options.burst)) {
      throw new RateLimitConfigError(
        'ERR_RL_INVALID_BURST',
        `${path}.burst`,
        'must be a positive integer (how many requests may arrive at once); it must be at least the largest cost you send',
        options.burst,
      );
    }
  }
}

/** `anchor` (fixed-window), `delayAfter` and `maxDelayMs` (leaky-bucket). */
function checkShaping(options: PolicyOptions, path: string, algorithm: AlgorithmId): void {
  if (options.anchor !== undefined) {
    if (algorithm !== 'fixed-window') {
      throw new RateLimitConfigError(
        'ERR_RL_OPTION_NOT_APPLICABLE',
        `${path}.anchor`,
        `applies to fixed-window only, not '${algorithm}'; remove it`,
        options.anchor,
      );
    }
    if (options.anchor !== 'clock' && options.anchor !== 'first-request') {
      throw new RateLimitConfigError('ERR_RL_INVALID_ANCHOR', `${path}.anchor`, "must be 'clock' or 'first-request'", options.anchor);
    }
  }
  if (options.delayAfter !== undefined) {
    if (algorithm !== 'leaky-bucket') {
      throw new RateLimitConfigError(
        'ERR_RL_OPTION_NOT_APPLICABLE',
        `${path}.delayAfter`,
        `applies to leaky-bucket only, not '${algorithm}'; remove it`,
        options.delayAfter,
      );
    }
    if (typeof options.delayAfter !== 'number' || !Number.isSafeInteger(options.delayAfter) || options.delayAfter < 0) {
      throw new RateLimitConfigError(
        'ERR_RL_INVALID_DELAY_AFTER',
        `${path}.delayAfter`,
        'must be a non-negative integer (excess requests let through without delay)',
        options.delayAfter,
      );
    }
  }
  if (options.maxDelayMs !== undefined) {
    if (algorithm !== 'leaky-bucket') {
      throw new RateLimitConfigError(
        'ERR_RL_OPTION_NOT_APPLICABLE',
        `${path}.maxDelayMs`,
        `applies to leaky-bucket only, not '${algorithm}'; remove it`,
        options.maxDelayMs,
      );
    }
    if (typeof options.maxDelayMs !== 'number' || !Number.isSafeInteger(options.maxDelayMs) || options.maxDelayMs < 0) {
      throw new RateLimitConfigError(
        'ERR_RL_INVALID_MAX_DELAY',
        `${path}.maxDelayMs`,
        'must be a non-negative integer number of ms (the longest a request may wait before it is rejected instead)',
        options.maxDelayMs,
      );
    }
  }
}

function readUnit(options: PolicyOptions, path: string, algorithm: AlgorithmId): QuotaUnit {
  const unit = options.unit ?? 'requests';
  if (!UNITS.includes(unit)) {
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_UNIT',
      `${path}.unit`,
      `must be one of ${UNITS.map((u) => `'${u}'`).join(', ')}`,
      options.unit,
    );
  }
  if (unit === 'concurrent-requests') {
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_UNIT',
      `${path}.unit`,
      `'concurrent-requests' belongs to algorithm 'concurrency' (requests in flight, released when they finish), not '${algorithm}'; use { algorithm: 'concurrency', limit }`,
      options.unit,
    );
  }
  return unit;
}
