/**
 * @module What a check is decided for: its plan, its store key (one key, or one per policy) and the key
 * text a Decision reports, and its cost in milli-units. Bad input throws here, before any state is read.
 */
import { createHash } from 'node:crypto';
import { codedError, describeValue } from '../errors.js';
import { MILLI, requestCostToMilli } from '../internal/fixed-point.js';
import { isWellFormed, sha256 } from '../internal/text.js';
import { LineThrottle, type Logger, safeLog } from '../logging.js';
import { type CompiledPlan, keysFor } from '../plans/compiled-plan.js';
import type { StoreKey } from '../stores/store.js';
import type { CheckOptions } from '../types.js';
import type { LimiterKey } from './limiter.js';

/** Keys longer than this are replaced by their SHA-256, so a store never holds a huge key. */
export const MAX_KEY_LENGTH = 256;

/** What a hashed key begins with: `sha256:` and 43 base64url characters. */
export const HASHED_KEY_PREFIX = 'sha256:';

/** At most one `WRN_RL_UNKNOWN_PLAN` line per this many ms: plan names can come from requests, so from an attacker. */
export const UNKNOWN_PLAN_LOG_INTERVAL_MS = 60_000;

/** The most characters of an unknown plan's name a `WRN_RL_UNKNOWN_PLAN` line shows. */
const LOGGED_PLAN_LENGTH = 64;

/** Put before the UTF-16 code units of a key with no UTF-8 form: UTF-8 never holds the byte 0xFF. */
const UTF16_DOMAIN = Buffer.of(0xff);

/**
 * True for a key kept as it is: at most `MAX_KEY_LENGTH` characters, not beginning with `sha256:` and
 * well-formed (no unpaired surrogate). Every other key is hashed, so no kept key can equal a digest.
 */
export function isPlainKey(key: string): boolean {
  return key.length <= MAX_KEY_LENGTH && !(key.charCodeAt(0) === 0x73 && key.startsWith(HASHED_KEY_PREFIX)) && isWellFormed(key);
}

/**
 * The key as stores hold it: `key` itself when `isPlainKey`, else `sha256:<digest>`. The mapping is
 * one-to-one: a key too long, one that looks like a digest (`sha256:...`, so a client cannot send another
 * key's digest) and one with an unpaired UTF-16 surrogate (which has no UTF-8 form, so two such keys would
 * reach a hash or Redis alike) are all hashed, the last by its UTF-16 code units. Rejects non-strings.
 */
export function normalizeKey(key: string): string {
  if (typeof key !== 'string') {
    throw codedError(TypeError, 'ERR_RL_INVALID_KEY', `the key must be a string; received ${describeValue(key)}`);
  }
  return isPlainKey(key) ? key : HASHED_KEY_PREFIX + digestOf(key);
}

/** SHA-256, base64url, of the key's UTF-8 bytes, or for a key without a UTF-8 form of 0xFF and its UTF-16LE units. */
function digestOf(key: string): string {
  if (isWellFormed(key)) return sha256(key);
  return createHash('sha256').update(UTF16_DOMAIN).update(key, 'utf16le').digest('base64url');
}

/** A check's cost in milli-units: `options.cost`, else `fallback` (the limiter's, already in milli-units). */
export function costOf(options: CheckOptions | undefined, fallback: number): number {
  const cost = options?.cost;
  return cost === undefined ? fallback : costToMilli(cost);
}

function costToMilli(cost: number): number {
  // A cost past exact arithmetic (Infinity, 1e13) is OVERSIZE_MILLI: above every capacity, so a 413.
  const milli = cost === 1 ? MILLI : requestCostToMilli(cost);
  if (milli < 0) {
    throw codedError(
      RangeError,
      'ERR_RL_INVALID_COST',
      `cost must be a positive finite multiple of 1/1000 (e.g. 1, 2.5, 0.001); received ${describeValue(cost)}`,
    );
  }
  return milli;
}

/** The plan, the store key and the Decision's `key` text of a check. */
export interface Target {
  readonly cp: CompiledPlan;
  readonly storeKey: StoreKey;
  readonly key: string;
}

/** Turns a check's key and options into its Target, by the limiter's plans. */
export class Targets {
  /** `WRN_RL_UNKNOWN_PLAN` lines: at most one per interval, counting the checks that named an unknown plan since. */
  private readonly lines = new LineThrottle(UNKNOWN_PLAN_LOG_INTERVAL_MS);

  constructor(
    private readonly plans: ReadonlyMap<string, CompiledPlan>,
    readonly defaultPlan: CompiledPlan,
    private readonly unknownPlan: CompiledPlan,
    private readonly logger: Logger,
    /** `validate` lets WRN_RL_UNKNOWN_PLAN through. */
    private readonly warnUnknown: boolean,
    private readonly now: () => number,
  ) {}

  /** The Target of `rawKey` under `opts.plan` (else the default plan). */
  of(rawKey: LimiterKey, opts: CheckOptions | undefined): Target {
    const cp = opts?.plan === undefined ? this.defaultPlan : this.named(opts.plan);
    if (typeof rawKey !== 'object' || rawKey === null) {
      const key = normalizeKey(rawKey as string);
      return { cp, storeKey: key, key };
    }
    const { storeKey, text } = keysFor(cp, rawKey, normalizeKey);
    return { cp, storeKey, key: text };
  }

  /** The plan named `name`; the `unknownPlan` fallback, with a warning once per name, for a name no plan has. */
  private named(name: string): CompiledPlan {
    const cp = this.plans.get(name);
    if (cp !== undefined) return cp;
    if (typeof name !== 'string') {
      throw codedError(TypeError, 'ERR_RL_INVALID_PLAN', `the plan must be a plan name (a string); received ${describeValue(name)}`);
    }
    if (this.warnUnknown) this.warn(name);
    return this.unknownPlan;
  }

  /** One line for the first unknown plan, then at most one per interval, counting the checks it stood for. */
  private warn(name: string): void {
    const since = this.lines.take(this.now());
    if (since === undefined) return;
    safeLog(
      this.logger,
      'warn',
      {
        code: 'WRN_RL_UNKNOWN_PLAN',
        // A name from a request is the client's to choose: a line is never larger than a key would be.
        plan: name.length > LOGGED_PLAN_LENGTH ? `${name.slice(0, LOGGED_PLAN_LENGTH)}… (${name.length} characters)` : name,
        appliedPlan: this.unknownPlan.name,
        plans: [...this.plans.keys()],
        alsoSinceLastLine: since,
      },
      'WRN_RL_UNKNOWN_PLAN: a check named a plan that does not exist; the unknownPlan fallback applies (at most one line a minute)',
    );
  }
}
