/**
 * @module The keys every cell uses: IPv4-shaped like an ip key extractor makes them, visited in one
 * fixed shuffled order so that every subject sees the same sequence.
 */

export function makeKeys(n: number): string[] {
  const keys = new Array<string>(n);
  for (let i = 0; i < n; i++) keys[i] = `ip:10.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`;
  return keys;
}

/** A permutation of 0..n-1 from a fixed-seed linear congruential generator (Fisher-Yates). */
export function shuffledOrder(n: number): Uint32Array {
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  let seed = 0x9e3779b9;
  for (let i = n - 1; i > 0; i--) {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    const j = seed % (i + 1);
    const t = order[i] as number;
    order[i] = order[j] as number;
    order[j] = t;
  }
  return order;
}
