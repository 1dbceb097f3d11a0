/**
 * @module Stores that apply every request to a MemoryStore (the reference) and to a RedisStore, so a test
 * drives one limiter and compares the two stores number by number: `TwinStore` keeps both answers of the
 * last apply; `PlanTwin` runs applies, peeks and refunds alike and records every disagreement.
 */
import type { MemoryStore, RedisStore, Store, StoreKey, StorePlan, StoreResult } from '@tollgate/core';

export interface TwinAnswer {
  readonly key: string;
  readonly cost: number;
  readonly now: number;
  /** RESULT_STRIDE numbers per policy. */
  readonly memory: readonly number[];
  /** The same from Redis, plus the `now` the script used. */
  readonly redis: readonly number[];
}

export class TwinStore implements Store {
  readonly kind = 'twin';
  last: TwinAnswer | undefined;
  /** The plan the limiter passes, for tests that call a store directly. */
  plan: StorePlan | undefined;

  constructor(
    readonly memory: MemoryStore,
    readonly redis: RedisStore,
  ) {}

  apply(key: string, plan: StorePlan, cost: number, now: number): Promise<StoreResult> {
    this.plan = plan;
    const memory = Array.from(this.memory.apply(key, plan, cost, now) as ArrayLike<number>);
    return Promise.resolve(this.redis.apply(key, plan, cost, now)).then((r) => {
      this.last = { key, cost, now, memory, redis: Array.from(r) };
      return r;
    });
  }

  async reset(key: string, plan: StorePlan): Promise<void> {
    this.memory.reset(key, plan);
    await this.redis.reset(key, plan);
  }
}

const FIELDS = ['flags', 'remaining', 'retryAfterMs', 'resetMs', 'delayMs'] as const;

/** Describes where two answers differ, or returns undefined when every per-policy number is equal. */
export function differences(a: TwinAnswer, names: readonly string[]): string | undefined {
  const out: string[] = [];
  for (let i = 0; i < names.length; i++) {
    for (let f = 0; f < FIELDS.length; f++) {
      const m = a.memory[i * 5 + f];
      const r = a.redis[i * 5 + f];
      if (m !== r) out.push(`${names[i]}.${FIELDS[f]}: memory ${m}, redis ${r}`);
    }
  }
  if (a.redis.length !== names.length * 5 + 1) out.push(`redis answered ${a.redis.length} numbers for ${names.length} policies`);
  return out.length === 0 ? undefined : `key '${a.key}' cost ${a.cost} at ${a.now}: ${out.join('; ')}`;
}

/** Runs every operation on both stores and records where they disagree. */
export class PlanTwin implements Store {
  readonly kind = 'plan-twin';
  diffs: string[] = [];
  /** The plan of the last apply, for tests that name the Redis keys (`redis.keyNames`). */
  plan: StorePlan | undefined;

  constructor(
    readonly memory: MemoryStore,
    readonly redis: RedisStore,
  ) {}

  private compare(op: string, m: ArrayLike<number>, r: ArrayLike<number>, count: number, now: number): void {
    for (let i = 0; i < count; i++) {
      if (m[i] !== r[i]) {
        this.diffs.push(`${op} at ${now}: [${i}] memory ${m[i]}, redis ${r[i]} (memory ${Array.from(m)}, redis ${Array.from(r)})`);
        return;
      }
    }
  }

  async apply(key: StoreKey, plan: StorePlan, cost: number, now: number): Promise<StoreResult> {
    this.plan = plan;
    const m = Array.from(this.memory.apply(key, plan, cost, now));
    const r = await this.redis.apply(key, plan, cost, now);
    this.compare(`apply ${JSON.stringify(key)} cost ${cost}`, m, r, plan.policies.length * 5, now);
    return r;
  }

  async peek(key: StoreKey, plan: StorePlan, cost: number, now: number): Promise<StoreResult> {
    const m = Array.from(this.memory.peek(key, plan, cost, now));
    const r = await this.redis.peek(key, plan, cost, now);
    this.compare(`peek ${JSON.stringify(key)} cost ${cost}`, m, r, plan.policies.length * 5, now);
    return r;
  }

  async refund(key: StoreKey, plan: StorePlan, cost: number, marks: readonly number[], now: number): Promise<ArrayLike<number>> {
    const m = Array.from(this.memory.refund(key, plan, cost, marks, now));
    const r = await this.redis.refund(key, plan, cost, marks, now);
    this.compare(`refund ${JSON.stringify(key)} cost ${cost} marks ${marks}`, m, r, plan.policies.length, now);
    return r;
  }

  async reset(key: string, plan: StorePlan): Promise<void> {
    this.memory.reset(key, plan);
    await this.redis.reset(key, plan);
  }
}
