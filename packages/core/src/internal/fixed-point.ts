/**
 * @module Fixed-point helpers. Costs are kept in milli-units (1/1000 of a request, as nginx keeps
 * excess), times in integer milliseconds; every quantity an algorithm compares is an integer below
 * 2^53, so no decision depends on float rounding.
 */

/** Milli-units per unit of cost. */
export const MILLI = 1000;

/** Greatest common divisor of two non-negative integers. */
export function gcd(a: number, b: number): number {
  let x = a;
  let y = b;
  while (y !== 0) {
    const t = x % y;
    x = y;
    y = t;
  }
  return x;
}

/**
 * Converts a cost to milli-units, or returns -1 when it is not a positive finite multiple of 1/1000.
 * Tolerates the binary representation error of decimal literals (0.1 * 1000 = 100.00000000000001): the
 * literal and the product are each off by at most half an ulp, so a few epsilons relative to the value;
 * a fixed tolerance would grow past half a milli-unit for large costs and round 1000000.0005 silently.
 */
export function toMilli(cost: number): number {
  if (typeof cost !== 'number' || !(cost > 0) || cost === Number.POSITIVE_INFINITY) return -1;
  const scaled = cost * MILLI;
  const rounded = Math.round(scaled);
  if (rounded < 1 || Math.abs(scaled - rounded) > 4 * Number.EPSILON * scaled || rounded > Number.MAX_SAFE_INTEGER) {
    return -1;
  }
  return rounded;
}

/**
 * What a request cost too large for exact arithmetic becomes: 2^53 milli-units, above every policy's
 * capacity (a safe integer, checked when the policy is compiled) and exact as a Lua number, so every
 * algorithm and store answers it as "can never fit" (413).
 */
export const OVERSIZE_MILLI = 2 ** 53;

/**
 * A request's cost in milli-units, or -1 when it is not a positive multiple of 1/1000 (`toMilli`),
 * except that a positive cost past exact arithmetic
 * (above ~9.007e12 units, `Infinity`) is `OVERSIZE_MILLI` rather than invalid. Such a cost exceeds
 * any capacity; treating it as invalid would charge the default cost and admit a forged huge request.
 */
export function requestCostToMilli(cost: number): number {
  if (typeof cost === 'number' && cost * MILLI > Number.MAX_SAFE_INTEGER) return OVERSIZE_MILLI;
  return toMilli(cost);
}

/** Floor division of non-negative integers (b > 0), exact for values below 2^53. */
export function floorDiv(a: number, b: number): number {
  let q = Math.floor(a / b);
  // The quotient is correctly rounded, so it can only be one off near an integer: correct it.
  if (q * b > a) q -= 1;
  else if ((q + 1) * b <= a) q += 1;
  return q;
}

/** Ceiling division of non-negative integers (b > 0), exact for values below 2^53. */
export function ceilDiv(a: number, b: number): number {
  const q = floorDiv(a, b);
  return q * b === a ? q : q + 1;
}

/** Milli-units back to policy units, floored to the 1/1000. */
export function fromMilli(milli: number): number {
  return milli <= 0 ? 0 : Math.floor(milli) / MILLI;
}

/** Ticks to milli-units, floored (one milli-unit is `tokenTicks` ticks; often exactly 1). */
export function ticksToMilli(ticks: number, tokenTicks: number): number {
  return tokenTicks === 1 ? ticks : floorDiv(ticks, tokenTicks);
}
