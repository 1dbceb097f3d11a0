/**
 * @module Small statistics over samples: median, percentiles by nearest rank, and a compact spread.
 */

/** The `q`-quantile (0..1) by nearest rank of a copy of `values` sorted ascending; NaN when empty. */
export function quantile(values: ArrayLike<number>, q: number): number {
  if (values.length === 0) return Number.NaN;
  if (!(q >= 0 && q <= 1)) throw new RangeError(`quantile: q must be within [0, 1]; received ${q}`);
  const sorted = Float64Array.from(values).sort();
  const rank = Math.max(1, Math.ceil(q * sorted.length));
  return sorted[rank - 1] as number;
}

/** The median: the mean of the two middle values for an even count; NaN when empty. */
export function median(values: ArrayLike<number>): number {
  if (values.length === 0) return Number.NaN;
  const sorted = Float64Array.from(values).sort();
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** Smallest and largest value; NaN for both when empty. */
export function range(values: ArrayLike<number>): { min: number; max: number } {
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < values.length; i++) {
    const v = values[i] as number;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  return values.length === 0 ? { min: Number.NaN, max: Number.NaN } : { min, max };
}
