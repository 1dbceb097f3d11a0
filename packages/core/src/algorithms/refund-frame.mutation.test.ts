/**
 * @module The refund frame's words, read and written directly (refund-frame.ts), on the second row of a
 * table so that a word written at the wrong offset shows in the first: a frame is live while its horizon
 * lies strictly after `now` (at the horizon it has ended), a mark only ever moves a live horizon later, an
 * ended frame starts over at zero, and a change of limit counts what the charges before it could still give
 * back, `(latest mark - now) * writer's rate`, until that latest mark, however far ahead. Issue 29 (mutation
 * testing; the limit-change-and-back bug: plans/bucket-refund.limit-back.test.ts).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { StateTable } from './kernel.js';
import { closeFrame, FRAME_AT, horizonAt, initFrame, MAX_REFUNDED, noteMark, recordRefund, refundedAt } from './refund-frame.js';

const STRIDE = 6;
/** The second row: its frame is at words 10 and 11; words 0-9 belong to the kernel or the first row. */
const O = STRIDE;
const SENTINEL = 7;

/** A two-row table, every word SENTINEL, with the second row's frame set to [refunded, horizon]. */
function table(refunded: number, horizon: number): StateTable {
  const t: StateTable = { f: new Float64Array(2 * STRIDE).fill(SENTINEL), stride: STRIDE, logs: [] };
  t.f[O + FRAME_AT] = refunded;
  t.f[O + FRAME_AT + 1] = horizon;
  return t;
}

/** The second row's frame, and that no other word moved. */
function frameOf(t: StateTable): [number, number] {
  for (let i = 0; i < t.f.length; i++) {
    if (i !== O + FRAME_AT && i !== O + FRAME_AT + 1) expect(t.f[i], `word ${i}`).toBe(SENTINEL);
  }
  return [t.f[O + FRAME_AT] as number, t.f[O + FRAME_AT + 1] as number];
}

const time = fc.integer({ min: -1_000_000, max: 1_000_000 });
const ticks = fc.integer({ min: 0, max: 2 ** 40 });

describe('a frame is live while its horizon lies after now', () => {
  it('refundedAt and horizonAt read the frame before its horizon, nothing from it on', () => {
    fc.assert(
      fc.property(ticks, time, fc.integer({ min: -5000, max: 5000 }), (refunded, now, ahead) => {
        const t = table(refunded, now + ahead);
        expect(refundedAt(t, O, now)).toBe(ahead > 0 ? refunded : 0);
        expect(horizonAt(t, O, now)).toBe(ahead > 0 ? now + ahead : Number.NEGATIVE_INFINITY);
        frameOf(t);
      }),
    );
  });

  it('at the horizon exactly, the frame has ended', () => {
    const t = table(500, 1000);
    expect(refundedAt(t, O, 1000)).toBe(0);
    expect(horizonAt(t, O, 1000)).toBe(Number.NEGATIVE_INFINITY);
    expect(refundedAt(t, O, 999)).toBe(500);
    expect(horizonAt(t, O, 999)).toBe(1000);
  });

  it('initFrame writes zero refunded and no horizon, in its own row only', () => {
    const t = table(123, 456);
    initFrame(t, O);
    expect(frameOf(t)).toEqual([0, Number.NEGATIVE_INFINITY]);
  });
});

describe('noteMark', () => {
  it('moves a live horizon to a later mark, never to an earlier one; an ended frame starts over', () => {
    fc.assert(
      fc.property(
        ticks,
        time,
        fc.integer({ min: -5000, max: 5000 }),
        fc.integer({ min: -5000, max: 5000 }),
        (refunded, now, ahead, markAhead) => {
          const h = now + ahead;
          const mark = now + markAhead;
          const t = table(refunded, h);
          noteMark(t, O, now, mark);
          const expected: [number, number] = ahead > 0 ? [refunded, Math.max(h, mark)] : [0, Number.NEGATIVE_INFINITY];
          expect(frameOf(t)).toEqual(expected);
        },
      ),
    );
  });

  it('vectors: a later mark, an earlier one, one at the horizon, and a frame ended at now', () => {
    const later = table(40, 200);
    noteMark(later, O, 100, 250);
    expect(frameOf(later)).toEqual([40, 250]);
    const earlier = table(40, 200);
    noteMark(earlier, O, 100, 150);
    expect(frameOf(earlier)).toEqual([40, 200]);
    const ended = table(40, 100);
    noteMark(ended, O, 100, 250);
    expect(frameOf(ended)).toEqual([0, Number.NEGATIVE_INFINITY]);
  });
});

describe('recordRefund', () => {
  it('counts only a counted refund, and the horizon covers the frame, the bucket full again and the mark', () => {
    fc.assert(
      fc.property(
        ticks,
        time,
        fc.integer({ min: -5000, max: 5000 }),
        fc.integer({ min: 1, max: 2 ** 30 }),
        fc.boolean(),
        fc.integer({ min: -5000, max: 5000 }),
        fc.integer({ min: 1, max: 5000 }),
        (refunded, now, ahead, take, counted, fullAhead, markAhead) => {
          const t = table(refunded, now + ahead);
          recordRefund(t, O, now, take, counted, now + fullAhead, now + markAhead);
          const live = ahead > 0;
          expect(frameOf(t)).toEqual([
            (live ? refunded : 0) + (counted ? take : 0),
            Math.max(live ? now + ahead : Number.NEGATIVE_INFINITY, now + fullAhead, now + markAhead),
          ]);
        },
      ),
    );
  });
});

describe('closeFrame (a change of limit or burst)', () => {
  it('counts (latest - now) x the writer rate more, and lives until the latest mark', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 30 }),
        time,
        fc.integer({ min: -5000, max: 5000 }),
        fc.integer({ min: -5000, max: 5000 }),
        fc.integer({ min: 1, max: 5000 }),
        (refunded, now, ahead, fullAhead, rateW) => {
          const t = table(refunded, now + ahead);
          closeFrame(t, O, now, now + fullAhead, rateW);
          const live = ahead > 0;
          const latest = Math.max(live ? now + ahead : Number.NEGATIVE_INFINITY, now + fullAhead);
          const expected: [number, number] =
            latest > now ? [(live ? refunded : 0) + (latest - now) * rateW, latest] : [0, Number.NEGATIVE_INFINITY];
          expect(frameOf(t)).toEqual(expected);
          // What the Redis reader relies on (frameAhead): the frame counted at least 1 tick per ms up to its horizon.
          if (latest > now) expect((t.f[O + FRAME_AT + 1] as number) - now).toBeLessThanOrEqual(t.f[O + FRAME_AT] as number);
        },
      ),
    );
  });

  it('vectors: the frame is later than the bucket, the bucket is later, nothing is pending', () => {
    const frameLater = table(10, 150);
    closeFrame(frameLater, O, 100, 120, 3);
    expect(frameOf(frameLater)).toEqual([10 + 50 * 3, 150]);
    const bucketLater = table(10, 150);
    closeFrame(bucketLater, O, 100, 180, 3);
    expect(frameOf(bucketLater)).toEqual([10 + 80 * 3, 180]);
    // A mark far past a full bucket of the new policy: the frame lives until it (never cut short, issue 29).
    const far = table(10, 50_000);
    closeFrame(far, O, 100, 700, 1);
    expect(frameOf(far)).toEqual([10 + 49_900, 50_000]);
    // The frame ended and the bucket is full exactly now: nothing left to give back, no frame.
    const done = table(10, 100);
    closeFrame(done, O, 100, 100, 3);
    expect(frameOf(done)).toEqual([0, Number.NEGATIVE_INFINITY]);
    const full = table(10, 90);
    closeFrame(full, O, 100, Number.NEGATIVE_INFINITY, 3);
    expect(frameOf(full)).toEqual([0, Number.NEGATIVE_INFINITY]);
  });

  it('never counts past MAX_REFUNDED', () => {
    const t = table(MAX_REFUNDED - 5, 200);
    closeFrame(t, O, 100, 150, 1000);
    expect(frameOf(t)).toEqual([MAX_REFUNDED, 200]);
  });
});
