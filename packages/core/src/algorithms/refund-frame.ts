/**
 * @module The refund frame of a bucket key (token-bucket, gcra, leaky-bucket): two words after the
 * kernel's own, so that several refunds on one key stay exact.
 *
 * A bucket refund gives back `min(cost, (mark - now) * rate)`, where the mark is when the bucket would
 * have been full again as of the charge: the part of the charge that has not leaked away. A refund of an
 * earlier charge makes the bucket fill sooner than the mark of a later one says, so that later charge's
 * refund would return refill the bucket would have capped (issue 10). The frame counts those refunds,
 * `refunded` (ticks, only ever growing while the frame lives), and each charge reports its position,
 * `refunded - e` (`e`: how far its mark was rounded up to the ms, in ticks), which its receipt keeps. A
 * refund then gives back at most its allowance
 *
 *   `(mark - now) * rate + position - refunded - given`   (`given`: what the receipt gave back before),
 *
 * never more than the state would hold had the charges been smaller from the start (the bound of
 * plans.property.test.ts, on random traces with any number of refunds).
 *
 * A refund of the newest charge (nothing charged after it: the debt left is exactly its allowance) moves
 * no other charge's refill, so it is not counted: refunds in the order opposite to the charges (a request
 * that fails fast before one that started earlier) stay exact for both. Counted are the others, which may
 * also count against a charge made before the refunded one: such a charge then gives back less than it
 * could (never more).
 *
 * The frame lives until `horizon`, the latest mark a receipt of the frame may carry; the key lives as
 * long (its expiry in Redis). Once it passes, every receipt of the frame is past its mark, and the frame
 * starts over at zero: a key that was never refunded has no frame and stores nothing more. A change of
 * limit or burst (gcra.ts, token-bucket.ts adopt) counts everything the charges before it could still give
 * back, so their receipts refund nothing after it; a receipt refunds only under the limit and burst the
 * state is in (algorithms/refund-kernels.ts). That frame lives until the latest mark of those charges, however
 * far it lies past a full bucket of the new limit: ended sooner, it would start over at zero while their
 * receipts still may refund, and after a change back to their limit they would (issue 29). It counted at
 * least one tick per ms up to that mark (every rate is a whole number of ticks per ms, at least 1), so
 * `horizon - now <= refunded`: the Redis reader takes such a horizon as one a writer left
 * (stores/redis/kernels/refund-frame.ts frameAhead), not as corrupt state.
 */
import type { StateTable } from './kernel.js';

/** Offset of the frame within a bucket row: [refunded ticks, horizon ms]. */
export const FRAME_AT = 4;
/** `refunded` never passes this (exact integers in doubles, Lua's too); a refund that would is refused. */
export const MAX_REFUNDED = 2 ** 52;

/** Ticks given back in the frame live at `now` (0 without one). */
export function refundedAt(t: StateTable, o: number, now: number): number {
  return (t.f[o + FRAME_AT + 1] as number) > now ? (t.f[o + FRAME_AT] as number) : 0;
}

/** The frame's horizon at `now`, or -Infinity without a live frame. */
export function horizonAt(t: StateTable, o: number, now: number): number {
  const h = t.f[o + FRAME_AT + 1] as number;
  return h > now ? h : Number.NEGATIVE_INFINITY;
}

export function initFrame(t: StateTable, o: number): void {
  t.f[o + FRAME_AT] = 0;
  t.f[o + FRAME_AT + 1] = Number.NEGATIVE_INFINITY;
}

/** After a charge whose mark is `mark`: a live frame's horizon covers it; an ended frame starts over. */
export function noteMark(t: StateTable, o: number, now: number, mark: number): void {
  if ((t.f[o + FRAME_AT + 1] as number) > now) {
    // Stryker disable next-line EqualityOperator: equivalent, `mark > horizon` -> `>=`: at equality it writes the horizon it read
    if (mark > (t.f[o + FRAME_AT + 1] as number)) t.f[o + FRAME_AT + 1] = mark;
  } else {
    initFrame(t, o);
  }
}

/**
 * Records a refund of `take` ticks at `now`, `counted` or not (the newest charge's), of a charge marked
 * `mark`; `fullAt` is when the bucket was full again before it.
 */
export function recordRefund(t: StateTable, o: number, now: number, take: number, counted: boolean, fullAt: number, mark: number): void {
  const h = Math.max(horizonAt(t, o, now), fullAt, mark);
  t.f[o + FRAME_AT] = refundedAt(t, o, now) + (counted ? take : 0);
  t.f[o + FRAME_AT + 1] = h;
}

/**
 * Before state written under another limit or burst is converted: every charge made before may still give
 * back at most `(latest mark - now) * writer's rate`, so that much more counts as given back, and the frame
 * lives until that mark (the writer's, however far past a full bucket of the reader's policy).
 */
export function closeFrame(t: StateTable, o: number, now: number, fullAt: number, rateW: number): void {
  const latest = Math.max(horizonAt(t, o, now), fullAt);
  if (!(latest > now)) {
    initFrame(t, o);
    return;
  }
  t.f[o + FRAME_AT] = Math.min(MAX_REFUNDED, refundedAt(t, o, now) + (latest - now) * rateW);
  t.f[o + FRAME_AT + 1] = latest;
}
