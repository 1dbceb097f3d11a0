/**
 * @module The batcher's state per plan, and the states of the other plans that reach the same Redis keys:
 * what this process holds for a key (its batches, the rejection it answers, the calls in flight) is found
 * by the key's Redis names, not only by the plan object that took it, so every limiter of the process that
 * maps the key to those keys sees it (two limiters with one `name`: a middleware and a `peek` on the side;
 * a plan table's plans with a policy in common; a restore's charge of one policy, `subPlan`).
 *
 * A policy's Redis keys are named by its `CompiledPolicy.id` (the limiter's name, the role, the policy's
 * name, algorithm and window: what its key names carry, key-names.ts), so on one store equal ids are
 * equal keys. Each plan keeps its own batches (its checks spend them; a unit charged under one limit is
 * no unit a check under another may spend, and a restore's charge goes to Redis, not to a batch), but the
 * plans that share a policy id are peers (`PlanStates.reaching`): a reset, a loss, a refund or a restore's
 * charge of the key reaches what a peer holds in it, and a peek counts the units a peer holds in the keys
 * they share. Before, each plan saw only its own: after `B.reset(key)` A spent the batches it took before
 * it on the fresh state (1,085 of 1,000) and kept answering its rejection for a second, and B's peek
 * counted A's batches as spent (615 of 700 left).
 */
import type { StorePlan } from '../../store.js';
import { BUCKET, FIXED_WINDOW, milliPerMs, planKinds } from './exactness.js';
import type { KeyEntry } from './key-entry.js';

export interface PlanState {
  readonly kinds: Uint8Array;
  readonly entries: Map<string, KeyEntry>;
  /** Per policy: the largest batch `maxShare` allows, milli-units. */
  readonly shareMilli: number;
  readonly hasBucket: boolean;
  /**
   * One fixed-window policy: a refusal's wait is the window's end whatever the cost, so a rejection
   * Redis gave answers every cost above what it said was left (Block.holds), not only its own.
   */
  readonly anyCost: boolean;
  /** Per policy: milli-units refilled per ms (buckets; 0 for windows) and capacity, milli-units. */
  readonly rates: Float64Array;
  readonly caps: Float64Array;
  /** Per policy: the Redis state it reaches (`CompiledPolicy.id`). */
  readonly ids: readonly string[];
  /** Its policies' ids, limits and bursts: a peer of the same decides a check as this plan does. */
  readonly identity: string;
  /**
   * The doorway for keys not tracked yet: decisions per hash slot in the current interval (one for the
   * whole table). A key gets an entry once its slot has seen `doorwayAt` decisions in an interval, plus a
   * margin that grows with the untracked decisions of the interval before (many cold keys share a slot),
   * so a key seen once (the cold key of a large key space) costs a hash and an array read, no allocation.
   */
  slotCounts: Uint16Array;
  /** When the doorway's interval began (the limiter's `now`); untracked decisions in it and in the one before. */
  doorSince: number;
  doorSeen: number;
  doorMargin: number;
}

/**
 * A plan state and, for a peer, where the asking plan's policies are in it: `at[i]`, the peer's position of
 * policy `i` (-1: not in it); undefined for the asking plan's own state.
 */
export type Reaching = readonly [PlanState, Int16Array | undefined];

/** A doorway's hash slots at first (2 KiB); local-batcher.ts grows them with the cold traffic. */
export const DOORWAY_FIRST_SLOTS = 1_024;

export class PlanStates {
  private readonly plans = new WeakMap<StorePlan, PlanState | null>();
  /** Per policy id, the states with a policy of it: the peers (pruned of dead ones as states are made). */
  private readonly byId = new Map<string, WeakRef<PlanState>[]>();

  constructor(
    /** `localBatch.maxShare`: the largest share of each limit one batch may take. */
    private readonly maxShare: number,
  ) {}

  /** The state of `plan` (made on first use), or undefined when the plan is not batched (exactness.ts). */
  of(plan: StorePlan): PlanState | undefined {
    let ps = this.plans.get(plan);
    if (ps === undefined) {
      ps = this.make(plan);
      this.plans.set(plan, ps);
    }
    return ps ?? undefined;
  }

  /**
   * `ps` itself, then each live peer with where `ps`'s policies are in it: every state that may hold
   * something of a key of `ps`'s in Redis. A plan alone on its keys (the usual case) costs one look per policy.
   */
  *reaching(ps: PlanState): Generator<Reaching> {
    yield [ps, undefined];
    if (ps.ids.every((id) => (this.byId.get(id)?.length ?? 0) <= 1)) return;
    const seen = new Set([ps]);
    for (const id of ps.ids) {
      for (const ref of this.byId.get(id) ?? []) {
        const other = ref.deref();
        if (other === undefined || seen.has(other)) continue;
        seen.add(other);
        yield [other, Int16Array.from(ps.ids, (mine) => other.ids.indexOf(mine))];
      }
    }
  }

  private make(plan: StorePlan): PlanState | null {
    const kinds = planKinds(plan);
    if (kinds === undefined) return null;
    const ps: PlanState = {
      kinds,
      entries: new Map(),
      shareMilli: Math.min(...plan.policies.map((p) => Math.floor(this.maxShare * p.capMilli))),
      hasBucket: kinds.includes(BUCKET),
      anyCost: kinds.length === 1 && kinds[0] === FIXED_WINDOW,
      rates: Float64Array.from(plan.policies, (p, i) => (kinds[i] === BUCKET ? milliPerMs(p) : 0)),
      caps: Float64Array.from(plan.policies, (p) => p.capMilli),
      ids: plan.policies.map((p) => p.id),
      identity: JSON.stringify(plan.policies.map((p) => [p.id, p.limit, p.capMilli])),
      slotCounts: new Uint16Array(DOORWAY_FIRST_SLOTS),
      doorSince: Number.NEGATIVE_INFINITY,
      doorSeen: 0,
      doorMargin: 0,
    };
    const ref = new WeakRef(ps);
    for (const id of new Set(ps.ids)) {
      const live = (this.byId.get(id) ?? []).filter((r) => r.deref() !== undefined);
      live.push(ref);
      this.byId.set(id, live);
    }
    for (const [id, refs] of this.byId) if (refs.every((r) => r.deref() === undefined)) this.byId.delete(id);
    return ps;
  }
}
