/**
 * @module The memory store's apply path (`apply`, `peek`, `refund`, one policy or groups of them) against the
 * contract of stores/store.ts, on random plans and traces (issue 29: mutation testing of the apply path). The
 * reference keeps one row per (policy id, key) and calls the same kernels directly, so what it checks is the
 * store's own part: which row a policy reads (keys per policy, tables shared by policy id across plans, a key
 * never seen decided on a fresh row that is kept only when charged), that a group is all-or-nothing (enforced
 * policies one group, shadow policies another), that a state written under another limit is converted before a
 * charge and never by a peek, and every number of the result:
 * - charged: `F_ALLOWED | F_CHARGED`, the remaining after the charge, the charge's position, reset and delay;
 * - a peek of a group that would be charged: the same flags, a retry of 0 and the charge's delay, nothing
 *   charged, so what is left and the reset are those of the state as it stands;
 * - a group that is not charged: each policy's own flags and retry, no delay, and for a policy that admitted,
 *   the state as it stands (a cost that can never fit reports it);
 * - a refund reaches the row each charged policy's receipt names, with its position less what it gave before.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CompiledPolicy, StateTable } from '../algorithms/kernel.js';
import { createOutcome } from '../algorithms/kernel.js';
import { REFUND_KERNELS } from '../algorithms/refund-kernels.js';
import { compilePolicy } from '../policy.js';
import { ALGORITHM_VARIANTS } from '../testing/variants.js';
import { MemoryStore } from './memory-store.js';
import {
  F_ALLOWED,
  F_CHARGED,
  F_EXCEEDS,
  keyAt,
  R_DELAY,
  R_FLAGS,
  R_POSITION,
  R_REMAINING,
  R_RESET,
  R_RETRY_AFTER,
  RESULT_STRIDE,
  type StoreKey,
  type StorePlan,
} from './store.js';

/** One policy of a plan, with its numbers under plan A and plan B (same name: the same state). */
interface Slot {
  variant: number;
  windowMs: number;
  limits: [number, number];
  bursts: [number | undefined, number | undefined];
  shadow: boolean;
}

const slotArb: fc.Arbitrary<Slot> = fc.record({
  variant: fc.integer({ min: 0, max: ALGORITHM_VARIANTS.length - 1 }),
  windowMs: fc.constantFrom(1, 7, 100, 1000, 1500),
  limits: fc.tuple(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 5 })),
  bursts: fc.tuple(
    fc.option(fc.integer({ min: 1, max: 6 }), { nil: undefined }),
    fc.option(fc.integer({ min: 1, max: 6 }), { nil: undefined }),
  ),
  shadow: fc.boolean(),
});

function plansOf(slots: readonly Slot[]): [StorePlan, StorePlan] {
  const ordered = [...slots.filter((s) => !s.shadow), ...slots.filter((s) => s.shadow)];
  const enforcedCount = slots.filter((s) => !s.shadow).length;
  const plan = (which: 0 | 1): StorePlan => ({
    enforcedCount,
    policies: ordered.map((s, i) => {
      const v = ALGORITHM_VARIANTS[s.variant] as (typeof ALGORITHM_VARIANTS)[number];
      const bucket = v.algorithm === 'token-bucket' || v.algorithm === 'gcra' || v.algorithm === 'leaky-bucket';
      const burst = s.bursts[which];
      return compilePolicy(
        {
          name: `p${i}`,
          algorithm: v.algorithm,
          limit: s.limits[which],
          windowMs: s.windowMs,
          ...(v.anchor === undefined ? {} : { anchor: v.anchor }),
          ...(bucket && burst !== undefined ? { burst } : {}),
        },
        `policies[${i}]`,
        s.shadow,
      );
    }),
  });
  return [plan(0), plan(1)];
}

/** The reference: one row per (policy id, key), slot 0 of its own table. */
class Reference {
  private readonly rows = new Map<string, StateTable>();

  private fresh(p: CompiledPolicy): StateTable {
    const t: StateTable = { f: new Float64Array(p.kernel.stride), stride: p.kernel.stride, logs: [] };
    p.kernel.init(t, 0);
    return t;
  }

  apply(key: StoreKey, plan: StorePlan, cost: number, now: number, charge: boolean): number[] {
    const r: number[] = new Array(plan.policies.length * RESULT_STRIDE).fill(0);
    this.group(r, key, plan, 0, plan.enforcedCount, cost, now, charge);
    this.group(r, key, plan, plan.enforcedCount, plan.policies.length, cost, now, charge);
    return r;
  }

  private group(r: number[], key: StoreKey, plan: StorePlan, from: number, to: number, cost: number, now: number, charge: boolean): void {
    const rows: { t: StateTable; kept: boolean; name: string }[] = [];
    const outs = [];
    for (let i = from; i < to; i++) {
      const p = plan.policies[i] as CompiledPolicy;
      const name = `${p.id}\u0000${keyAt(key, i)}`;
      const kept = this.rows.get(name);
      const t = kept ?? this.fresh(p);
      const out = createOutcome();
      p.kernel.evaluate(t, 0, now, cost, p, out);
      rows.push({ t, kept: kept !== undefined, name });
      outs.push(out);
    }
    const all = outs.every((o) => o.allowed);
    for (let i = from; i < to; i++) {
      const p = plan.policies[i] as CompiledPolicy;
      const { t, kept, name } = rows[i - from] as (typeof rows)[number];
      const out = outs[i - from] as ReturnType<typeof createOutcome>;
      const o = i * RESULT_STRIDE;
      if (all) {
        r[o + R_FLAGS] = F_ALLOWED | F_CHARGED;
        r[o + R_REMAINING] = out.remaining;
        r[o + R_RETRY_AFTER] = 0;
        r[o + R_RESET] = out.resetMs;
        r[o + R_DELAY] = out.delayMs;
        if (charge) {
          if (!kept) this.rows.set(name, t);
          p.kernel.commit(t, 0, now, cost, p);
          r[o + R_POSITION] = p.kernel.position?.(t, 0, now, p) ?? 0;
        } else {
          // A peek charges nothing: what is left and the reset of the state as it stands.
          p.kernel.evaluate(t, 0, now, Number.POSITIVE_INFINITY, p, out);
          r[o + R_REMAINING] = out.remaining;
          r[o + R_RESET] = out.resetMs;
        }
      } else {
        r[o + R_FLAGS] = (out.allowed ? F_ALLOWED : 0) | (out.exceeds ? F_EXCEEDS : 0);
        r[o + R_RETRY_AFTER] = out.retryAfterMs;
        r[o + R_DELAY] = 0;
        if (out.allowed) p.kernel.evaluate(t, 0, now, Number.POSITIVE_INFINITY, p, out);
        r[o + R_REMAINING] = out.remaining;
        r[o + R_RESET] = out.resetMs;
      }
    }
  }

  refund(key: StoreKey, plan: StorePlan, cost: number, marks: readonly number[], now: number): number[] {
    const n = plan.policies.length;
    return plan.policies.map((p, i) => {
      const mark = marks[i] as number;
      const t = this.rows.get(`${p.id}\u0000${keyAt(key, i)}`);
      if (Number.isNaN(mark) || t === undefined) return 0;
      const position = (marks[n + i] as number) - (marks[2 * n] as number) * p.tokenTicks;
      return REFUND_KERNELS[p.algorithm](t, 0, now, cost, mark, position, p) ? 1 : 0;
    });
  }
}

type Op =
  | { kind: 'apply' | 'peek'; plan: 0 | 1; key: number; split: boolean; dt: number; cost: number }
  | { kind: 'refund'; which: number; dt: number; part: boolean; given: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constantFrom<'apply' | 'peek'>('apply', 'apply', 'peek'),
      plan: fc.constantFrom<0 | 1>(0, 0, 1),
      key: fc.integer({ min: 0, max: 2 }),
      split: fc.boolean(),
      dt: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 300 }), fc.integer({ min: 0, max: 1500 })),
      cost: fc.constantFrom(1, 500, 1000, 1000, 2000, 7000),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant<'refund'>('refund'),
      which: fc.nat(),
      dt: fc.integer({ min: 0, max: 300 }),
      part: fc.boolean(),
      given: fc.constantFrom(0, 0, 1, 500),
    }),
  },
);

/** A key for every policy, or one per policy (the second and later policies on keys of their own). */
function keyOf(op: { key: number; split: boolean }, n: number): StoreKey {
  return op.split ? Array.from({ length: n }, (_, i) => `k${op.key}.${i % 2}`) : `k${op.key}`;
}

describe('MemoryStore apply path', () => {
  it('answers apply, peek and refund as the contract says, row by row and number by number', () => {
    fc.assert(
      fc.property(fc.array(slotArb, { minLength: 1, maxLength: 3 }), fc.array(opArb, { minLength: 1, maxLength: 40 }), (slots, ops) => {
        const plans = plansOf(slots);
        const n = slots.length;
        const store = new MemoryStore({ sweepIntervalMs: 0 });
        const ref = new Reference();
        const receipts: { key: StoreKey; plan: StorePlan; cost: number; marks: number[] }[] = [];
        let now = 10_000;
        for (const op of ops) {
          now += op.dt;
          if (op.kind === 'refund') {
            const receipt = receipts[op.which % Math.max(1, receipts.length)];
            if (receipt === undefined) continue;
            const cost = op.part ? Math.max(1, Math.floor(receipt.cost / 2)) : receipt.cost;
            // `given`: what the receipt gave back before (milli-units), which the position is reduced by.
            const marks = [...receipt.marks.slice(0, 2 * n), op.given];
            const want = ref.refund(receipt.key, receipt.plan, cost, marks, now);
            expect(Array.from(store.refund(receipt.key, receipt.plan, cost, marks, now))).toEqual(want);
            continue;
          }
          const plan = plans[op.plan];
          const key = keyOf(op, n);
          const want = ref.apply(key, plan, op.cost, now, op.kind === 'apply');
          const got = Array.from(op.kind === 'apply' ? store.apply(key, plan, op.cost, now) : store.peek(key, plan, op.cost, now));
          expect(got, `${op.kind} ${JSON.stringify(key)} plan ${op.plan} cost ${op.cost} at ${now}`).toEqual(want);
          if (op.kind === 'apply') {
            const charged = (i: number) => ((want[i * RESULT_STRIDE + R_FLAGS] as number) & F_CHARGED) !== 0;
            const marks = [
              ...plan.policies.map((_, i) => (charged(i) ? now + (want[i * RESULT_STRIDE + R_RESET] as number) : Number.NaN)),
              ...plan.policies.map((_, i) => want[i * RESULT_STRIDE + R_POSITION] as number),
            ];
            if (marks.some((m, i) => i < n && !Number.isNaN(m))) receipts.push({ key, plan, cost: op.cost, marks });
          }
        }
      }),
      { numRuns: 150 },
    );
  });
});

describe('MemoryStore apply path: vectors', () => {
  it('a peek under another limit converts nothing: the receipt of the first limit still refunds', () => {
    for (const algorithm of ['token-bucket', 'gcra', 'leaky-bucket'] as const) {
      const planAt = (limit: number): StorePlan => ({
        enforcedCount: 1,
        policies: [compilePolicy({ name: 'api', algorithm, limit, windowMs: 1000 }, 'policies[0]', false)],
      });
      const [a, b] = [planAt(10), planAt(20)];
      const store = new MemoryStore({ sweepIntervalMs: 0 });
      const charged = Array.from(store.apply('k', a, 5000, 1000));
      expect(charged[R_FLAGS]).toBe(F_ALLOWED | F_CHARGED);
      // 5 of 10 used; under 20 per second the same debt is 5 of 20: 15 left. Not converted, the state still
      // refills as written, 10 per second: full in 500 ms (a leaky bucket would delay one more behind the
      // 5 under 20 per second, 250 ms).
      const delay = algorithm === 'leaky-bucket' ? 250 : 0;
      expect(Array.from(store.peek('k', b, 1000, 1000))).toEqual([F_ALLOWED | F_CHARGED, 15_000, 0, 500, delay]);
      const marks = [1000 + (charged[R_RESET] as number), charged[R_POSITION] as number, 0];
      expect(Array.from(store.refund('k', a, 5000, marks, 1000)), algorithm).toEqual([1]);
      expect(Array.from(store.peek('k', a, 10_000, 1000))[R_REMAINING]).toBe(10_000);
    }
  });
});
