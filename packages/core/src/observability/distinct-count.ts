/**
 * @module HyperLogLog (Flajolet et al., 2007) with 2^10 registers: the number of distinct keys in 1 KiB,
 * with a standard error of 1.04 / sqrt(1024), about 3.3 %; exact-ish (linear counting) for small sets.
 */

const P = 10;
const M = 1 << P;
const ALPHA = 0.7213 / (1 + 1.079 / M);

/** 32-bit FNV-1a over UTF-16 code units, then the murmur3 finalizer to spread the bits. */
export function hash32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

export class DistinctCount {
  private readonly registers = new Uint8Array(M);

  add(key: string): void {
    const h = hash32(key);
    const index = h >>> (32 - P);
    const rest = (h << P) >>> 0;
    const rank = rest === 0 ? 32 - P + 1 : Math.clz32(rest) + 1;
    if (rank > (this.registers[index] as number)) this.registers[index] = rank;
  }

  estimate(): number {
    let sum = 0;
    let zeros = 0;
    for (let i = 0; i < M; i++) {
      const r = this.registers[i] as number;
      sum += 2 ** -r;
      if (r === 0) zeros += 1;
    }
    const raw = (ALPHA * M * M) / sum;
    if (raw <= 2.5 * M && zeros > 0) return Math.round(M * Math.log(M / zeros));
    return Math.round(raw);
  }

  clear(): void {
    this.registers.fill(0);
  }
}
