/**
 * @module How long to wait before retry number `attempt` (1 for the first retry). Two jitters, both
 * from "Exponential Backoff And Jitter" (AWS Architecture Blog, 2015), with the server's wait as a
 * floor, because a client that retries before `Retry-After` is only refused again:
 *
 * - `'full'`: `floor + random(0, min(cap - floor, span * 2^(attempt-1)))`, `span = max(baseDelayMs, floor)`.
 *   The spread doubles with each attempt, so clients refused together fan out over a wider and wider
 *   window. Fewest calls to the server of the two in the AWS study.
 * - `'decorrelated'`: `random(low, min(cap, max(low, previous * 3)))`, `low = max(baseDelayMs, floor)`,
 *   `previous` the last wait, `low` before the first retry. Each wait grows from the previous one (not
 *   from the attempt count), which spreads retries as well and finishes sooner under moderate contention.
 *
 * The cap bounds the draw's range, not the drawn wait: AWS's `min(cap, floor + random(...))` puts every
 * draw above `cap - floor` exactly on the cap, so clients refused together with a wait near the cap
 * (`Retry-After: 20` under a 30 s cap: half of them) all came back at one instant, the storm jitter is
 * there to prevent. Here they spread evenly over what is left up to the cap. A floor at or above the cap
 * is returned as it is (the caller gives up first). Without a server wait the floor is 0. `random` is
 * injected so tests can pin it.
 */

export type Jitter = 'full' | 'decorrelated';

export interface BackoffInput {
  readonly attempt: number;
  /** What the server asked for, or undefined. */
  readonly floorMs: number | undefined;
  /** The previous wait (decorrelated jitter), 0 before the first retry (read as the first retry's `low`). */
  readonly previousMs: number;
  readonly jitter: Jitter;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  readonly random: () => number;
}

/** The wait before the next attempt, in whole ms, never below the server's floor. */
export function backoffDelay(input: BackoffInput): number {
  const floor = input.floorMs ?? 0;
  const cap = input.maxDelayMs;
  if (input.jitter === 'full') {
    const span = Math.max(input.baseDelayMs, floor);
    const spread = Math.min(cap - floor, span * 2 ** Math.min(30, input.attempt - 1));
    return spread <= 0 ? floor : Math.min(cap, Math.ceil(floor + input.random() * spread));
  }
  const low = Math.max(input.baseDelayMs, floor);
  // Before the first retry the previous wait is `low` (AWS starts `sleep` at `base`): from 0, every
  // client refused together would wait exactly `low` and come back together.
  const previous = input.previousMs > 0 ? input.previousMs : low;
  const high = Math.min(cap, Math.max(low, previous * 3));
  return high <= low ? low : Math.min(high, Math.ceil(low + input.random() * (high - low)));
}
