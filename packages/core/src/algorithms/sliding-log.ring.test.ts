/**
 * @module sliding-log's ring against a model written from the module's contract (issue 29: the decision tests
 * never look inside the log, so mutants of the full-log fold, the same-ms merge and the ring's growth and
 * shrinking lived through them). The model is a plain list of (time, cost) entries:
 * - a charge is recorded at the key's high-water mark (`max(now, highWater)`); a charge in the millisecond of
 *   the newest entry adds to it; entries that left `(highWater - W, highWater]` are dropped first;
 * - a full log (`MAX_LOG_ENTRIES` entries) folds its oldest entry's cost into the next one, which keeps its own
 *   (later) time: the merged cost leaves the window later than exact, never earlier, and nothing is lost;
 * - memory: the ring starts at 4 entries, doubles when full (up to `MAX_LOG_ENTRIES`) and halves, after an
 *   expiry, when it is less than a quarter full (down to 4);
 * - `evaluate` reads the window `(max(now, highWater) - W, ...]`, answers from the contract (remaining, the
 *   wait until enough of the oldest entries have left, the reset when the newest leaves) and changes nothing;
 * - the row's word is the time the newest entry leaves the window.
 * After every step the ring (entries in order, sum, high-water mark, capacity) and the answer must equal the
 * model's. Costs are whole milli-units, so every sum is exact.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compilePolicy } from '../policy.js';
import type { CompiledPolicy, LogRing, Outcome, StateTable } from './kernel.js';
import { createOutcome } from './kernel.js';
import { MAX_LOG_ENTRIES, slidingLog } from './sliding-log.js';

const STRIDE = 2;
const SLOT = 1;
const MIN_ENTRIES = 4;

interface Entry {
  time: number;
  cost: number;
}

interface Model {
  entries: Entry[];
  highWater: number;
  /** The ring's capacity in entries; 0 before the first charge (no ring). */
  capacity: number;
}

function policy(limit: number, windowMs: number): CompiledPolicy {
  return compilePolicy({ name: 'p', algorithm: 'sliding-log', limit, windowMs }, 'p', false);
}

function table(): StateTable {
  const t: StateTable = { f: new Float64Array(3 * STRIDE).fill(-7), stride: STRIDE, logs: [] };
  slidingLog.init(t, SLOT);
  return t;
}

function newModel(): Model {
  return { entries: [], highWater: Number.NEGATIVE_INFINITY, capacity: 0 };
}

const sumOf = (entries: readonly Entry[]): number => entries.reduce((s, e) => s + e.cost, 0);

/** The model's answer to a request of `cost` milli-units at `now` (the contract in the module comment). */
function modelEvaluate(m: Model, now: number, cost: number, p: CompiledPolicy): Outcome {
  const w = p.windowMs;
  const cap = p.capMilli;
  const edge = Math.max(now, m.highWater) - w;
  const live = m.entries.filter((e) => e.time > edge);
  const sum = sumOf(live);
  const newest = live.at(-1);
  const reset = newest === undefined ? 0 : newest.time + w - now;
  if (cost > cap) {
    return { allowed: false, exceeds: true, remaining: Math.max(0, cap - sum), retryAfterMs: 0, resetMs: reset, delayMs: 0 };
  }
  if (sum + cost <= cap) {
    const at = Math.max(now, m.highWater);
    return { allowed: true, exceeds: false, remaining: cap - sum - cost, retryAfterMs: 0, resetMs: at + w - now, delayMs: 0 };
  }
  let freed = 0;
  let wait = 0;
  for (const e of live) {
    freed += e.cost;
    if (freed >= sum + cost - cap) {
      wait = e.time + w - now;
      break;
    }
  }
  return { allowed: false, exceeds: false, remaining: Math.max(0, cap - sum), retryAfterMs: wait, resetMs: reset, delayMs: 0 };
}

/** The model's charge of `cost` at `now` (admitted). */
function modelCommit(m: Model, now: number, cost: number, w: number): void {
  if (m.capacity === 0) {
    m.capacity = MIN_ENTRIES;
  } else {
    const edge = Math.max(now, m.highWater) - w;
    m.entries = m.entries.filter((e) => e.time > edge);
    if (m.capacity > MIN_ENTRIES && m.entries.length * 4 < m.capacity) m.capacity /= 2;
  }
  m.highWater = Math.max(now, m.highWater);
  const newest = m.entries.at(-1);
  if (newest !== undefined && newest.time === m.highWater) {
    newest.cost += cost;
    return;
  }
  if (m.entries.length === MAX_LOG_ENTRIES) {
    const [oldest, next] = m.entries as [Entry, Entry];
    next.cost += oldest.cost;
    m.entries.shift();
  } else if (m.entries.length === m.capacity) {
    m.capacity *= 2;
  }
  m.entries.push({ time: m.highWater, cost });
}

/** The ring's live entries, oldest first. */
function entriesOf(r: LogRing): Entry[] {
  const capacity = r.buf.length / 2;
  const out: Entry[] = [];
  for (let i = 0; i < r.size; i++) {
    const j = ((r.head + i) % capacity) * 2;
    out.push({ time: r.buf[j] as number, cost: r.buf[j + 1] as number });
  }
  return out;
}

function snapshot(t: StateTable): unknown {
  const r = t.logs[SLOT];
  return { f: Array.from(t.f), ring: r === undefined ? undefined : { ...r, buf: Array.from(r.buf) } };
}

function expectSame(t: StateTable, m: Model, w: number, label: string): void {
  const r = t.logs[SLOT];
  if (m.capacity === 0) {
    expect(r, label).toBeUndefined();
    return;
  }
  if (r === undefined) throw new Error(`${label}: no ring`);
  expect(r.buf.length / 2, `${label}: capacity`).toBe(m.capacity);
  expect(r.head, `${label}: head within the ring`).toBeLessThan(m.capacity);
  expect(entriesOf(r), `${label}: entries`).toEqual(m.entries);
  expect(r.sum, `${label}: sum`).toBe(sumOf(m.entries));
  expect(r.highWater, `${label}: high-water mark`).toBe(m.highWater);
  expect(t.f[SLOT * STRIDE], `${label}: expiry word`).toBe((m.entries.at(-1) as Entry).time + w);
  // The other rows are untouched.
  expect(t.f[0]).toBe(-7);
  expect(t.f[2 * STRIDE]).toBe(-7);
}

/** One request through `evaluate` then `commit` (as a group store does), checked against the model. */
function step(t: StateTable, m: Model, now: number, cost: number, p: CompiledPolicy, label: string): Outcome {
  const out = createOutcome();
  const before = snapshot(t);
  slidingLog.evaluate(t, SLOT, now, cost, p, out);
  expect(snapshot(t), `${label}: evaluate changes nothing`).toEqual(before);
  expect({ ...out }, `${label}: answer`).toEqual(modelEvaluate(m, now, cost, p));
  if (out.allowed) {
    slidingLog.commit(t, SLOT, now, cost, p);
    modelCommit(m, now, cost, p.windowMs);
  }
  expectSame(t, m, p.windowMs, label);
  return out;
}

const stepArb = fc.record({
  // Mostly forward, sometimes the same millisecond, sometimes a clock stepping back.
  dt: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 40 }), fc.integer({ min: -30, max: -1 }), fc.integer({ min: 100, max: 3000 })),
  cost: fc.oneof(fc.constantFrom(1, 999, 1000, 2000, 3000), fc.integer({ min: 1, max: 5000 })),
});

describe('sliding-log ring (model)', () => {
  it('grows, wraps, merges and shrinks exactly as the model, with the contract answers', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.constantFrom(1, 5, 97, 1000),
        fc.array(stepArb, { minLength: 1, maxLength: 120 }),
        (limit, windowMs, steps) => {
          const p = policy(limit, windowMs);
          const t = table();
          const m = newModel();
          let now = 10_000;
          steps.forEach((s, i) => {
            now += s.dt;
            step(t, m, now, s.cost, p, `step ${i} at ${now}`);
          });
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a full log folds its oldest entry into the next, keeping both times and every cost (random traces)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(1100, 1_000_000),
        fc.constantFrom(1030, 1_000_000),
        fc.integer({ min: MAX_LOG_ENTRIES - 6, max: MAX_LOG_ENTRIES }),
        fc.array(stepArb, { minLength: 1, maxLength: 60 }),
        (limit, windowMs, fill, steps) => {
          const p = policy(limit, windowMs);
          const t = table();
          const m = newModel();
          // A log filled at distinct milliseconds, costs 1..fill milli-units so that every entry differs.
          for (let i = 0; i < fill; i++) {
            slidingLog.commit(t, SLOT, i, i + 1, p);
            modelCommit(m, i, i + 1, windowMs);
          }
          expectSame(t, m, windowMs, 'filled');
          let now = fill;
          steps.forEach((s, i) => {
            now += Math.min(s.dt, 3);
            step(t, m, now, s.cost, p, `step ${i} at ${now}`);
          });
        },
      ),
      { numRuns: 40 },
    );
  });

  it('vector: the ring halves only when less than a quarter full', () => {
    const w = 100;
    const p = policy(100, w);
    const t = table();
    const m = newModel();
    // Five entries: the ring of 4 doubles to 8.
    for (const at of [0, 10, 20, 30, 40]) step(t, m, at, 1000, p, `at ${at}`);
    expect((t.logs[SLOT] as LogRing).buf.length / 2).toBe(8);
    // At 125 the window (25, 125] keeps 30 and 40: a quarter of 8, so the ring stays at 8.
    step(t, m, 125, 1000, p, 'a quarter full');
    expect((t.logs[SLOT] as LogRing).buf.length / 2).toBe(8);
    // At 235 the window (135, 235] holds none of them: the ring, empty, halves to 4 before 235 is recorded.
    step(t, m, 235, 1000, p, 'empty');
    expect((t.logs[SLOT] as LogRing).buf.length / 2).toBe(4);
  });

  it('vector: a ring that wraps around its end grows with its entries in order', () => {
    const w = 100;
    const p = policy(100, w);
    const t = table();
    const m = newModel();
    for (const at of [0, 10, 20]) step(t, m, at, 1000, p, `at ${at}`);
    // At 105 the entry at 0 leaves the window (5, 105]: the head moves on, and 105 and 106 fill the ring of 4
    // around its end (106 in its first slot).
    for (const at of [105, 106]) step(t, m, at, 1000, p, `at ${at}`);
    const r = t.logs[SLOT] as LogRing;
    expect([r.buf.length / 2, r.head, r.size]).toEqual([4, 1, 4]);
    // A fifth entry: the ring doubles, unwrapped (the oldest entry first).
    step(t, m, 107, 1000, p, 'grows');
    expect([r.buf.length / 2, r.head, r.size]).toEqual([8, 0, 5]);
    expect(entriesOf(r).map((e) => e.time)).toEqual([10, 20, 105, 106, 107]);
  });

  it('vector: the fold at MAX_LOG_ENTRIES, repeated around the ring', () => {
    const w = 1_000_000;
    const p = policy(10_000_000, w);
    const t = table();
    const m = newModel();
    for (let i = 0; i < MAX_LOG_ENTRIES; i++) {
      slidingLog.commit(t, SLOT, i, 1000 + i, p);
      modelCommit(m, i, 1000 + i, w);
    }
    expectSame(t, m, w, 'filled');
    const r = t.logs[SLOT] as LogRing;
    expect(r.size).toBe(MAX_LOG_ENTRIES);
    expect(r.buf.length).toBe(2 * MAX_LOG_ENTRIES);
    const total = r.sum;
    // One more at a new millisecond: the entry of 0 (cost 1000) merges into that of 1 (cost 1001), at time 1.
    step(t, m, MAX_LOG_ENTRIES, 7, p, 'first fold');
    const first = entriesOf(r);
    expect(first.length).toBe(MAX_LOG_ENTRIES);
    expect(first[0]).toEqual({ time: 1, cost: 2001 });
    expect(first[1]).toEqual({ time: 2, cost: 1002 });
    expect(first.at(-1)).toEqual({ time: MAX_LOG_ENTRIES, cost: 7 });
    expect(r.sum).toBe(total + 7);
    // The same millisecond again merges into the newest entry: no fold.
    step(t, m, MAX_LOG_ENTRIES, 5, p, 'same ms');
    expect(entriesOf(r)[0]).toEqual({ time: 1, cost: 2001 });
    expect(entriesOf(r).at(-1)).toEqual({ time: MAX_LOG_ENTRIES, cost: 12 });
    // Around the ring twice: every fold keeps the sum and the later time.
    // (Checked against the model every 61 charges: a full comparison reads the 1024 entries.)
    const out = createOutcome();
    for (let i = 1; i <= 2 * MAX_LOG_ENTRIES; i++) {
      slidingLog.consume(t, SLOT, MAX_LOG_ENTRIES + i, 1, p, out);
      expect(out.allowed).toBe(true);
      modelCommit(m, MAX_LOG_ENTRIES + i, 1, w);
      if (i % 61 === 0) expectSame(t, m, w, `fold ${i}`);
    }
    expectSame(t, m, w, 'folded around the ring twice');
    expect(r.sum).toBe(total + 12 + 2 * MAX_LOG_ENTRIES);
    expect(entriesOf(r)[0]?.time).toBe(2 * MAX_LOG_ENTRIES + 1);
  });

  it('vector: the merged cost leaves the window with the later entry, never earlier', () => {
    const w = 5000;
    // Room for the full log and one more unit: the fold decides when that room frees.
    const p = policy(MAX_LOG_ENTRIES + 1, w);
    const t = table();
    const m = newModel();
    for (let i = 0; i < MAX_LOG_ENTRIES; i++) step(t, m, i * 2, 1000, p, `fill ${i}`);
    // At 2048: the entries of 0 and 2 merge (cost 2000 at 2); the log is full of the limit.
    step(t, m, 2 * MAX_LOG_ENTRIES, 1000, p, 'fold');
    // A unit waits for the entry of 2 (holding 0's cost too) to leave at 2 + w, not 0's exact w.
    const rejected = step(t, m, 2 * MAX_LOG_ENTRIES, 1000, p, 'full');
    expect(rejected).toMatchObject({ allowed: false, retryAfterMs: 2 + w - 2 * MAX_LOG_ENTRIES });
    expect(step(t, m, w + 1, 1000, p, 'one ms before').allowed).toBe(false);
    // At 2 + w both costs leave at once: two units fit.
    expect(step(t, m, 2 + w, 2000, p, 'after').allowed).toBe(true);
  });
});
