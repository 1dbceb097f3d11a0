/**
 * @module A store that applies every request to a MemoryStore (the reference) and to a RedisStore, and
 * keeps both answers, so a test drives one limiter and compares the two stores number by number.
 */
import type { MemoryStore, RedisStore, Store, StorePlan, StoreResult } from '@tollgate/core';

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
