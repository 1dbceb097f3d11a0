/**
 * @module A small seeded random number generator (mulberry32) for the labs and the synthetic log: the same
 * seed gives the same numbers on every machine, so lab figures and generated logs can be tested exactly.
 */

export interface Random {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [min, max]. */
  int(min: number, max: number): number;
  /** Exponential with mean `mean` (inter-arrival times of a Poisson process). */
  exponential(mean: number): number;
  pick<T>(items: readonly T[]): T;
}

export function createRandom(seed: number): Random {
  let a = seed >>> 0;
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    exponential: (mean) => -mean * Math.log(1 - next()),
    pick: (items) => items[Math.floor(next() * items.length)] as (typeof items)[number],
  };
}
