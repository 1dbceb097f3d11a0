/**
 * @module The bucket kernels' rows (token-bucket, gcra, leaky-bucket), read word by word on random traces
 * (issue 29: each check pins mutants that the answers of a memory store let live, because only the Redis twin's
 * key expiry or the refund frame's later arithmetic reads them). The row under test is the middle one of three,
 * so that a word written at the wrong offset shows in a neighbour. Checked after every step, against the
 * arithmetic of the modules' own comments done again in BigInt:
 * - a charge leaves the exact full-again time in the row (GCRA: the TAT as whole ms plus a fraction below the
 *   rate; token bucket: the tokens and the refill time), with the policy's limit and burst;
 * - its mark never lies before the charge: a live frame's horizon moves to the charge's full-again time rounded
 *   up when that is later, and its receipt's position is what the frame counts less the rounding;
 * - an ended frame starts over at [0, -Infinity], a rejected request changes no word;
 * - the key expires when the bucket is full again and the frame has ended, not a ms earlier;
 * - the first charge after a change of limit or burst (`adopt`) counts everything the charges before it
 *   could still give back, `(latest mark - now) * writer's rate`, keeps the frame until that latest mark
 *   (however far past a full bucket of the new policy: issue 29's limit-change-and-back bug), and leaves an
 *   idle row's frame (full, no live frame) as it was; a refusal under the new limit changes no word.
 * Plus a vector of a case only some seeds reach: a row a limit change finds full again expires at once.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compilePolicy } from '../policy.js';
import { type CompiledPolicy, createOutcome, type StateTable } from './kernel.js';
import { FRAME_AT } from './refund-frame.js';

type Bucket = 'token-bucket' | 'gcra' | 'leaky-bucket';
const STRIDE = 6;
const SLOT = 1;
const O = SLOT * STRIDE;
const SENTINEL = -7;

const big = (x: number) => BigInt(x);
const ceilB = (a: bigint, b: bigint) => (a <= 0n ? -(-a / b) : (a + b - 1n) / b);
/** The smaller of two BigInts (Math.min takes numbers only). */
const minB = (a: bigint, b: bigint) => (a < b ? a : b);
const gcdB = (a: bigint, b: bigint): bigint => (b === 0n ? a : gcdB(b, a % b));

function policy(algorithm: Bucket, limit: number, windowMs: number, burst: number | undefined): CompiledPolicy {
  return compilePolicy({ name: 'p', algorithm, limit, windowMs, ...(burst === undefined ? {} : { burst }) }, 'p', false);
}

/** A three-row table, rows 0 and 2 every word SENTINEL, row 1 initialised by the kernel. */
function table(p: CompiledPolicy): StateTable {
  const t: StateTable = { f: new Float64Array(3 * STRIDE).fill(SENTINEL), stride: STRIDE, logs: [] };
  p.kernel.init(t, SLOT);
  return t;
}

function row(t: StateTable): number[] {
  for (let i = 0; i < t.f.length; i++) {
    if ((i < O || i >= O + STRIDE) && t.f[i] !== SENTINEL) expect.fail(`word ${i} of another row: ${t.f[i]}`);
  }
  return Array.from(t.f.subarray(O, O + STRIDE));
}

/** The writer's rate (ticks per ms), ticks per milli-unit and capacity in ticks, for its limit and burst. */
function scale(limit: number, burst: number, windowMs: number): { rate: bigint; tpm: bigint; cap: bigint } {
  const g = gcdB(big(windowMs), big(limit * 1000));
  const tpm = big(windowMs) / g;
  return { rate: big(limit * 1000) / g, tpm, cap: big(burst * 1000) * tpm };
}

type Words = number[];
type Scale = ReturnType<typeof scale>;
const NEG = Number.NEGATIVE_INFINITY;
const num = (x: bigint) => Number(x);
const ms = (x: number) => big(x);

/** When the row's bucket is full again, rounded up to the ms, in its writer's scale (-Infinity: full). */
function fullMark(alg: Bucket, r: Words, w: Scale): number {
  if (alg !== 'token-bucket') return (r[0] as number) + ((r[1] as number) > 0 ? 1 : 0);
  const tokens = r[0] as number;
  if (tokens === Number.POSITIVE_INFINITY || big(tokens) >= w.cap) return NEG;
  return num(ms(r[1] as number) + ceilB(w.cap - big(tokens), w.rate));
}

/** The debt of a row in its writer's ticks at `now` (what a token bucket lacks after refilling to now). */
function debtOf(alg: Bucket, r: Words, now: number, w: Scale): bigint {
  if (alg !== 'token-bucket') return (r[0] as number) < now ? 0n : ms((r[0] as number) - now) * w.rate + big(r[1] as number);
  const stored = r[0] as number;
  if (stored === Number.POSITIVE_INFINITY) return 0n;
  const tokens = minB(big(stored), w.cap);
  const last = r[1] as number;
  const refilled = now > last ? tokens + ms(now - last) * w.rate : tokens;
  return refilled >= w.cap ? 0n : w.cap - refilled;
}

/** The words a charge (or a conversion) leaves for a debt of `debt` ticks of `p` at `now`, `last` the refill time. */
function charged(
  alg: Bucket,
  now: number,
  last: number,
  debt: bigint,
  p: CompiledPolicy,
  w: Scale,
): { words: Words; mark: number; e: bigint } {
  if (alg === 'token-bucket') {
    const at = Math.max(now, last);
    const mark = debt <= 0n ? at : num(ms(at) + ceilB(debt, w.rate));
    return { words: [num(w.cap - debt), at, p.limit, p.capacity], mark, e: debt <= 0n ? 0n : ceilB(debt, w.rate) * w.rate - debt };
  }
  const full = ms(now) * w.rate + debt;
  const whole = full / w.rate;
  const frac = full % w.rate;
  return { words: [num(whole), num(frac), p.limit, p.capacity], mark: num(whole) + (frac > 0n ? 1 : 0), e: frac > 0n ? w.rate - frac : 0n };
}

/** The frame after a mark at `now`: a live one keeps its count and moves its horizon later; an ended one starts over. */
function framed(refunded: number, horizon: number, now: number, mark: number): [number, number] {
  return horizon > now ? [refunded, Math.max(horizon, mark)] : [0, NEG];
}

/**
 * The frame a charge under `p` finds on row `r` at `now`: for a row in a writer's scale (not idle), closed
 * first (`adopt`: everything the charges before it could still give back counts, and the frame lives until
 * their latest mark, however far past a full bucket of `p`); else as it stands.
 */
function frameBeforeCharge(alg: Bucket, r: Words, now: number, p: CompiledPolicy): [number, number] {
  const live = (r[5] as number) > now;
  const idle = alg === 'token-bucket' ? r[0] === Number.POSITIVE_INFINITY : (r[0] as number) < now;
  if ((r[2] === p.limit && r[3] === p.capacity) || r[2] === 0 || (idle && !live)) return [r[4] as number, r[5] as number];
  const ww = scale(r[2] as number, r[3] as number, p.windowMs);
  const latest = Math.max(live ? (r[5] as number) : NEG, fullMark(alg, r, ww));
  if (!(latest > now)) return [0, NEG];
  return [(live ? (r[4] as number) : 0) + num(ms(latest - now) * ww.rate), latest];
}

/**
 * A consume at `now`: the words after it, from the words before it (in `p`'s scale, idle, or in a
 * writer's scale): a refusal writes no word, whatever room the converted debt left; a charge closes a
 * writer's frame (frameBeforeCharge) and writes the converted debt plus the cost in `p`'s scale.
 */
function checkCharge(
  alg: Bucket,
  t: StateTable,
  now: number,
  cost: number,
  p: CompiledPolicy,
  out: ReturnType<typeof createOutcome>,
): void {
  const before = row(t);
  const w = scale(p.limit, p.capacity, p.windowMs);
  const need = big(cost) * w.tpm;
  const foreign = before[2] !== 0 && (before[2] !== p.limit || before[3] !== p.capacity);
  const ww = foreign ? scale(before[2] as number, before[3] as number, p.windowMs) : w;
  const debt = foreign ? minB(ceilB(debtOf(alg, before, now, ww) * w.tpm, ww.tpm), w.cap) : debtOf(alg, before, now, w);
  p.kernel.consume(t, SLOT, now, cost, p, out);
  const after = row(t);
  if (debt + need > w.cap) {
    expect(out.allowed).toBe(false);
    expect(after).toEqual(before);
    return;
  }
  expect(out.allowed).toBe(true);
  const { words, mark, e } = charged(alg, now, alg === 'token-bucket' ? (before[1] as number) : now, debt + need, p, w);
  const [refunded, horizon] = frameBeforeCharge(alg, before, now, p);
  const frame = framed(refunded, horizon, now, mark);
  expect(after).toEqual([...words, ...frame]);
  // The receipt's position: what the live frame counts, less how far its mark was rounded up.
  expect(p.kernel.position?.(t, SLOT, now, p)).toBe((frame[1] > now ? frame[0] : 0) - num(e));
}

/** The key expires when the bucket is full again (in its writer's scale) and its frame has ended. */
function checkExpiry(alg: Bucket, t: StateTable, p: CompiledPolicy): void {
  const r = row(t);
  const w = scale(r[2] as number, r[3] as number, p.windowMs);
  expect(p.kernel.expiresAt(t, SLOT, p)).toBe(Math.max(fullMark(alg, r, w), r[5] as number));
}

interface Step {
  dt: number;
  cost: number;
  frame: { refunded: number; ahead: number } | undefined;
  change: { limit: number; burst: number | undefined } | undefined;
}

const stepArb: fc.Arbitrary<Step> = fc.record({
  dt: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 400 }), fc.integer({ min: 0, max: 3000 })),
  cost: fc.constantFrom(1, 1000, 2000, 500, 3000, 7), // milli-units
  frame: fc.option(fc.record({ refunded: fc.integer({ min: 0, max: 10_000 }), ahead: fc.integer({ min: -300, max: 3000 }) }), {
    freq: 4,
    nil: undefined,
  }),
  change: fc.option(
    fc.record({ limit: fc.integer({ min: 1, max: 12 }), burst: fc.option(fc.integer({ min: 1, max: 15 }), { nil: undefined }) }),
    {
      freq: 5,
      nil: undefined,
    },
  ),
});

const caseArb = fc.record({
  algorithm: fc.constantFrom<Bucket>('token-bucket', 'gcra', 'leaky-bucket'),
  windowMs: fc.constantFrom(1, 7, 100, 999, 1000, 1500),
  limit: fc.integer({ min: 1, max: 12 }),
  burst: fc.option(fc.integer({ min: 1, max: 15 }), { nil: undefined }),
  steps: fc.array(stepArb, { minLength: 1, maxLength: 25 }),
});

describe('bucket rows, word by word, on random traces', () => {
  it('a new row, then charges, frames, expiry, positions and limit changes: exactly the words the comments promise', () => {
    fc.assert(
      fc.property(caseArb, ({ algorithm, windowMs, limit, burst, steps }) => {
        let p = policy(algorithm, limit, windowMs, burst);
        const t = table(p);
        expect(row(t)).toEqual(algorithm === 'token-bucket' ? [Number.POSITIVE_INFINITY, NEG, 0, 0, 0, NEG] : [NEG, 0, 0, 0, 0, NEG]);
        const out = createOutcome();
        let now = 100_000;
        for (const step of steps) {
          now += step.dt;
          if (step.frame !== undefined) {
            t.f[O + FRAME_AT] = step.frame.refunded;
            t.f[O + FRAME_AT + 1] = now + step.frame.ahead;
          }
          if (step.change !== undefined) p = policy(algorithm, step.change.limit, windowMs, step.change.burst);
          checkCharge(algorithm, t, now, step.cost, p, out);
          checkExpiry(algorithm, t, p);
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe('bucket rows: vectors', () => {
  it('token-bucket: a row a limit change finds full again is charged from full (a trace found it)', () => {
    // Window 1 ms: one milli-unit charged under limit 2 at 100 000 has leaked by 100 001, where limit 1 charges it.
    const two = policy('token-bucket', 2, 1, undefined);
    const one = policy('token-bucket', 1, 1, undefined);
    const t = table(two);
    const out = createOutcome();
    two.kernel.consume(t, SLOT, 100_000, 1, two, out);
    expect(out.allowed).toBe(true);
    one.kernel.consume(t, SLOT, 100_001, 1, one, out);
    expect(out.allowed).toBe(true);
    expect(row(t).slice(0, 4)).toEqual([one.capTicks - one.tokenTicks, 100_001, 1, 1]);
    expect(one.kernel.expiresAt(t, SLOT, one)).toBe(100_002);
  });
});
