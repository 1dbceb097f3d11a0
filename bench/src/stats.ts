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

/**
 * A percentile bootstrap interval for the median of pooled groups: `resamples` times, groups are drawn
 * with replacement, as many draws as there are groups, and the median of all the drawn values is taken;
 * the interval is the (1 - level) / 2 and (1 + level) / 2 quantiles of those medians. Groups are what varies
 * together (one process's pairs share its JIT decisions), so resampling groups, not values, keeps that
 * variation in the interval. Seeded, so one set of groups always gives the same interval. NaN for both
 * when there is no value.
 */
export function bootstrapMedianInterval(
  groups: readonly (readonly number[])[],
  level = 0.9,
  resamples = 2000,
  seed = 0x9e3779b9,
): { low: number; high: number } {
  if (!(level > 0 && level < 1)) throw new RangeError(`bootstrapMedianInterval: level must be within (0, 1); received ${level}`);
  const kept = groups.filter((g) => g.length > 0);
  if (kept.length === 0) return { low: Number.NaN, high: Number.NaN };
  let s = seed >>> 0 || 1;
  const next = (n: number): number => {
    // xorshift32: reproducible and plenty for picking groups.
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s % n;
  };
  const medians = new Float64Array(resamples);
  for (let b = 0; b < resamples; b++) {
    const pool: number[] = [];
    for (let i = 0; i < kept.length; i++) pool.push(...(kept[next(kept.length)] as readonly number[]));
    medians[b] = median(pool);
  }
  return { low: quantile(medians, (1 - level) / 2), high: quantile(medians, (1 + level) / 2) };
}
