/**
 * @module The request stream the comparison replays: one client, three situations every API meets.
 * Times are virtual milliseconds; nothing waits.
 */

export interface Phase {
  /** Short label for tables. */
  readonly name: string;
  /** What happens, in words. */
  readonly description: string;
  /** Arrival times (ms), in order. */
  readonly arrivals: readonly number[];
  /** Arrivals grouped for display (e.g. one group per burst or per second). */
  readonly groups: readonly number[];
}

/** `count` arrivals at `at`. */
function burst(at: number, count: number): number[] {
  return Array.from({ length: count }, () => at);
}

/**
 * With a policy of `limit` per `windowMs` (the demo uses 10 per second):
 * 1. a burst of 1.2 x limit just before a window boundary and another right at it (clients synchronised
 *    on the clock, cron jobs);
 * 2. idle, then 2.5 x limit at once (a batch job waking up);
 * 3. sustained traffic 20 % above the rate for six windows (a client that ignores 429s).
 */
export function createStream(limit: number, windowMs: number): Phase[] {
  const over = Math.round(limit * 1.2);
  const boundary = windowMs;
  const phase1 = [...burst(boundary - windowMs / 10, over), ...burst(boundary, over)];
  const idleUntil = 5 * windowMs;
  const phase2 = burst(idleUntil, Math.round(limit * 2.5));
  const start = 7 * windowMs;
  const gap = windowMs / over;
  const phase3 = Array.from({ length: over * 6 }, (_, i) => start + Math.floor(i * gap));
  return [
    {
      name: 'boundary',
      description: `${over} requests at ${boundary - windowMs / 10} ms and ${over} at ${boundary} ms, across a window boundary`,
      arrivals: phase1,
      groups: [over, over],
    },
    {
      name: 'burst',
      description: `idle until ${idleUntil} ms, then ${phase2.length} requests at once`,
      arrivals: phase2,
      groups: [phase2.length],
    },
    {
      name: 'sustained',
      description: `${over} requests per ${windowMs} ms, evenly spaced, for ${6 * windowMs} ms from ${start} ms (20 % over the rate)`,
      arrivals: phase3,
      groups: Array.from({ length: 6 }, () => over),
    },
  ];
}
