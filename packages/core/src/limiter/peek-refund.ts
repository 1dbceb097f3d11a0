/**
 * @module The two store operations beside a check: `peek` (what is left now, charging nothing) and
 * `refund` (give back a charge by its receipt). Each goes to the store as one atomic call, watched by
 * the failure guard like a check, but a failure rejects instead of answering by the failure mode: a
 * dashboard or a refund must not act on an invented answer.
 */
import type { CompiledPolicy } from '../algorithms/kernel.js';
import { DecisionImpl, leavesLess } from '../decision.js';
import { codedError, describeValue } from '../errors.js';
import { CallFailure, type StoreGuard } from '../failure/store-guard.js';
import { hasLength, isResultOf, StoreResultError } from '../failure/store-result-error.js';
import { MILLI, toMilli } from '../internal/fixed-point.js';
import { isPromiseLike } from '../internal/promise.js';
import { type CompiledPlan, Receipt, type RefundResult } from '../plans/compiled-plan.js';
import { RESULT_STRIDE, type Store } from '../stores/store.js';
import type { ChargeReceipt, CheckOptions, Clock, Decision, PolicyResult, RefundOptions } from '../types.js';
import type { DecisionBuilder } from './build-decision.js';
import type { LimiterKey } from './limiter.js';
import { costOf, type Target, type Targets } from './target.js';

const NOTHING_REFUNDED: RefundResult = Object.freeze({ refunded: false, policies: Object.freeze([]) });

/** The identity, for `StoreGuard.watch` callers that want the result or the failure as it is. */
function same<T>(value: T): T {
  return value;
}

/** What `peek` and `refund` need of the limiter. */
export interface PeekRefundParts {
  readonly store: Store;
  readonly guard: StoreGuard;
  readonly targets: Targets;
  readonly builder: DecisionBuilder;
  readonly now: Clock;
  readonly defaultCost: number;
  /** Told of a refund the store made (the failure mode remembers the budget given back); undefined when nothing remembers. */
  readonly refunded?: (cp: CompiledPlan, storeKey: Target['storeKey'], cost: number, at: number) => void;
}

function unsupported(store: Store, operation: string): TypeError {
  return codedError(
    TypeError,
    'ERR_RL_STORE_UNSUPPORTED',
    `the '${store.kind}' store has no ${operation}(); MemoryStore and RedisStore have one`,
  );
}

/** A store call watched like a check's; a failure comes back as the error it carries. */
export async function watched<T>(guard: StoreGuard, storeKey: Target['storeKey'], pending: T | Promise<T>): Promise<T> {
  if (!isPromiseLike(pending)) return pending;
  const node = guard.nodeOfKey(storeKey);
  const out = await guard.watch<T, T | CallFailure>(node, guard.next(), pending, same, same);
  if (out instanceof CallFailure) throw out.error;
  return out;
}

/**
 * The Decision a check of `cost` would get now, charging nothing: whether it would be admitted, its
 * wait and delay; `remaining` and `resetMs` are those of the state as it stands (the store's peek).
 */
export async function peek(parts: PeekRefundParts, rawKey: LimiterKey, opts: CheckOptions | undefined): Promise<Decision> {
  const { store, guard, targets, builder, now, defaultCost } = parts;
  const t = targets.of(rawKey, opts);
  const cost = costOf(opts, defaultCost);
  if (store.peek === undefined) throw unsupported(store, 'peek');
  await guard.starting();
  const r = await watched(guard, t.storeKey, store.peek(t.storeKey, t.cp.storePlan, cost, now()));
  if (!isResultOf(r, t.cp.storePlan)) throw new StoreResultError(store.kind, r, t.cp.storePlan.policies.length * RESULT_STRIDE);
  const d = leastLeft(builder.build(t.key, cost, r, t.cp, t.cp.all, false, 'uncounted'));
  d.plan = t.cp.name;
  return d;
}

/**
 * A peek's headline (`policy`, `remaining`, `resetMs`) is the enforced policy with the least left (the
 * latest reset on a tie), as an admitted check's is, whatever `cost` asks: "what is left now" must not
 * change with the cost of a request not made. A check refused by several policies headlines the longest
 * wait instead (what its 429 says); a peek's `allowed` and `retryAfterMs` keep answering that.
 */
function leastLeft(d: DecisionImpl): DecisionImpl {
  if (!d.limited) return d;
  const all = d.policies;
  if (all.length < 2) return d;
  let b = all[0] as PolicyResult;
  for (const r of all) if (leavesLess(r, b)) b = r;
  if (b.name === d.policy) return d;
  return new DecisionImpl(
    d.allowed,
    d.limited,
    d.reason,
    d.mode,
    d.key,
    d.cost,
    b.name,
    b.remaining,
    d.retryAfterMs,
    b.resetMs,
    d.delayMs,
    all,
    d.shadow,
    d.degraded,
  );
}

/** Gives back a charge by its receipt (see `Limiter.refund`). */
export async function refund(
  parts: PeekRefundParts,
  charge: Decision | ChargeReceipt,
  opts: RefundOptions | undefined,
): Promise<RefundResult> {
  const { store, guard, builder, now } = parts;
  checkRefundOptions(opts);
  const given =
    charge instanceof DecisionImpl || (typeof charge === 'object' && charge !== null && 'allowed' in charge)
      ? (charge as Decision).receipt
      : charge;
  if (given === undefined) return NOTHING_REFUNDED;
  const receipt = Receipt.open(given, builder.issuer);
  if (receipt === undefined) {
    throw codedError(
      TypeError,
      'ERR_RL_INVALID_RECEIPT',
      `refund() takes a Decision or decision.receipt from this limiter's check(); received ${describeValue(charge)}`,
    );
  }
  // The key was reset since the charge: it went with the state (limiter/reset-log.ts).
  if (receipt.left <= 0 || builder.resets.staleSince(receipt.key, receipt.seq)) return NOTHING_REFUNDED;
  const give = refundCost(receipt, opts);
  if (store.refund === undefined) throw unsupported(store, 'refund');
  // What the receipt gave back before (Store.refund: the last of the marks).
  const marks = [...receipt.marks, Math.round(receipt.cost * MILLI) - receipt.left];
  // Spent before the call: a refund whose answer is lost is never sent twice.
  receipt.spend(give);
  const cp = receipt.compiled;
  const done = await watched(guard, receipt.key, store.refund(receipt.key, cp.storePlan, give, marks, now()));
  if (!hasLength(done, cp.all.length)) throw new StoreResultError(store.kind, done, cp.all.length);
  const names: string[] = [];
  for (let i = 0; i < cp.all.length; i++) if (done[i] === 1) names.push((cp.all[i] as CompiledPolicy).name);
  if (names.length > 0) parts.refunded?.(cp, receipt.key, give, now());
  return Object.freeze({ refunded: names.length > 0, policies: Object.freeze(names) });
}

/**
 * Refuses a key `RefundOptions` has not (one whose value is undefined counts as absent): a misspelt `cost`
 * (`{ cots: 1 }`) gave back the whole charge, more than the caller meant, with no error. Options of
 * `check()` are not read this way: their checks run on the decision path.
 */
function checkRefundOptions(opts: RefundOptions | undefined): void {
  if (opts === undefined || opts === null) return;
  for (const [key, value] of Object.entries(opts)) {
    if (key !== 'cost' && value !== undefined) {
      throw codedError(
        TypeError,
        'ERR_RL_UNKNOWN_OPTION',
        `${describeValue(key)} is not an option of refund() (valid: cost); nothing was given back`,
      );
    }
  }
}

/** The milli-units a refund gives back: `options.cost`, else what is left of the receipt. */
function refundCost(receipt: Receipt, opts: RefundOptions | undefined): number {
  const cost = opts?.cost === undefined ? receipt.left : toMilli(opts.cost);
  if (!(cost > 0) || cost > Math.round(receipt.cost * MILLI)) {
    throw codedError(
      RangeError,
      'ERR_RL_INVALID_REFUND_COST',
      `a refund's cost must be a positive multiple of 1/1000, at most the cost charged (${receipt.cost}); received ${describeValue(opts?.cost)}`,
    );
  }
  return Math.min(cost, receipt.left);
}
