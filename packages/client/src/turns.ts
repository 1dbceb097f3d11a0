/**
 * @module Turns between the shapers of one process that share one budget (the same store object, key
 * and policy names). Without them, a task of cost 5 at one shaper's head starves while another shaper's
 * cost-1 tasks take each unit as it frees: a refusal takes nothing, so the costly head is never found
 * with five units free. Once a head is refused, its shaper joins a line, and a shaper behind another
 * in the line does not check its head until those ahead were admitted (or left: their queue emptied, or
 * they closed). Refused first, served first: the costly head's place is kept, the budget is never
 * exceeded (every start is still the store's own decision). While nobody waits, nobody queues: shapers
 * check freely.
 *
 * Across processes the line cannot be kept without a store operation that reserves units ahead of time
 * (see the README, "Mixed costs across processes"); this covers the shapers one process shares a store between.
 */
import type { PolicyDescription, Store } from '@tollgate/core';

/** One budget's line of shapers whose head was refused (or is waiting behind one that was). */
export class Turns {
  private readonly line: object[] = [];
  private changed: { readonly promise: Promise<void>; readonly resolve: () => void } | undefined;
  /** Shapers using this line: the registry forgets it when the last one closes. */
  users = 0;

  /** Whether `who` may check its head now: nobody waits, or it is first. */
  mayCheck(who: object): boolean {
    return this.line.length === 0 || this.line[0] === who;
  }

  /** `who` waits for the budget (its head refused, or behind those who were): it keeps its place. */
  join(who: object): void {
    if (!this.line.includes(who)) this.line.push(who);
  }

  /** `who` was admitted, or has nothing left to wait for: those behind it move up. */
  leave(who: object): void {
    const i = this.line.indexOf(who);
    if (i < 0) return;
    this.line.splice(i, 1);
    const changed = this.changed;
    this.changed = undefined;
    changed?.resolve();
  }

  /** Settles at the next change of the line. */
  next(): Promise<void> {
    if (this.changed === undefined) {
      let resolve: () => void = () => undefined;
      const promise = new Promise<void>((r) => {
        resolve = r;
      });
      this.changed = { promise, resolve };
    }
    return this.changed.promise;
  }
}

const registry = new WeakMap<Store, Map<string, Turns>>();

function budgetName(key: string, policies: readonly PolicyDescription[]): string {
  return JSON.stringify([key, ...policies.map((p) => p.name)]);
}

/** The line of the budget `key` and `policies` name on `store`, shared by every shaper of this process on it. */
export function joinTurns(store: Store, key: string, policies: readonly PolicyDescription[]): Turns {
  let byBudget = registry.get(store);
  if (byBudget === undefined) {
    byBudget = new Map();
    registry.set(store, byBudget);
  }
  const name = budgetName(key, policies);
  let turns = byBudget.get(name);
  if (turns === undefined) {
    turns = new Turns();
    byBudget.set(name, turns);
  }
  turns.users++;
  return turns;
}

/** A shaper using `turns` closed: the line is forgotten with its last user. */
export function leaveTurns(store: Store, key: string, policies: readonly PolicyDescription[], turns: Turns): void {
  turns.users--;
  if (turns.users > 0) return;
  const byBudget = registry.get(store);
  const name = budgetName(key, policies);
  if (byBudget?.get(name) === turns) byBudget.delete(name);
}
