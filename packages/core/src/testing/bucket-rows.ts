/**
 * @module A bucket kernel's row by hand, for the refund tests (plans/bucket-refund.*.test.ts): a table of
 * three rows, a charge and its receipt as the store keeps them, a refund of that receipt, and what the row
 * answers to a few costs without charging.
 */
import { expect } from 'vitest';
import { type CompiledPolicy, createOutcome, type Outcome, type StateTable } from '../algorithms/kernel.js';
import { REFUND_KERNELS } from '../algorithms/refund-kernels.js';
import { compilePolicy } from '../policy.js';
import type { AnyPolicyOptions } from '../types.js';

/** Words of a bucket row (the kernel's, then the CLOCK word), and the row the tests use. */
export const STRIDE = 6;
export const SLOT = 1;

/** A table of three rows (garbage around the used one), row SLOT initialised by `p`'s kernel. */
export function table(p: CompiledPolicy): StateTable {
  const t: StateTable = { f: new Float64Array(3 * STRIDE).fill(-7), stride: STRIDE, logs: [] };
  p.kernel.init(t, SLOT);
  return t;
}

/** A charge's receipt: the decision's mark and the charge's position. */
export interface Receipt {
  mark: number;
  position: number;
}

/** Charges `cost` milli-units at `now`; its receipt, as the store keeps it. */
export function charge(t: StateTable, now: number, cost: number, p: CompiledPolicy): Receipt {
  const out = createOutcome();
  p.kernel.consume(t, SLOT, now, cost, p, out);
  expect(out.allowed, `charge of ${cost} at ${now}`).toBe(true);
  return { mark: now + out.resetMs, position: (p.kernel.position as NonNullable<typeof p.kernel.position>)(t, SLOT, now, p) };
}

/** Gives back `cost` of the charge `r` at `now`; whether the kernel took it. */
export function refund(t: StateTable, now: number, cost: number, r: Receipt, p: CompiledPolicy): boolean {
  return REFUND_KERNELS[p.algorithm](t, SLOT, now, cost, r.mark, r.position, p);
}

/** What the row answers at `now` to each of `costs` (a copy: nothing charged). */
export function answers(t: StateTable, now: number, p: CompiledPolicy, costs: readonly number[]): Outcome[] {
  return costs.map((cost) => {
    const out = createOutcome();
    p.kernel.evaluate({ f: t.f.slice(), stride: t.stride, logs: [] }, SLOT, now, cost, p, out);
    return { ...out };
  });
}

/** A policy compiled as a limiter compiles its own (named `p`). */
export function policyOf(options: AnyPolicyOptions): CompiledPolicy {
  return compilePolicy(options, 'p', false);
}

/** A table of one row, initialised by `p`'s kernel. */
export function row(p: CompiledPolicy): StateTable {
  const t: StateTable = { f: new Float64Array(p.kernel.stride), stride: p.kernel.stride, logs: [] };
  p.kernel.init(t, 0);
  return t;
}

/** `evaluate` on a copy of the one row (it must change nothing), then `consume`: both answers, which must agree. */
export function decide(t: StateTable, now: number, cost: number, p: CompiledPolicy): Outcome {
  const copy: StateTable = { f: t.f.slice(), stride: t.stride, logs: [] };
  const evaluated = createOutcome();
  p.kernel.evaluate(copy, 0, now, cost, p, evaluated);
  expect(Array.from(copy.f), 'evaluate writes nothing').toEqual(Array.from(t.f));
  const consumed = createOutcome();
  p.kernel.consume(t, 0, now, cost, p, consumed);
  expect(consumed, `consume agrees with evaluate at ${now}, cost ${cost}`).toEqual(evaluated);
  return consumed;
}
