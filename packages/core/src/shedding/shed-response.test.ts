/**
 * @module The 503 of a shed request: its problem detail counts in words that agree with the numbers.
 */
import { describe, expect, it } from 'vitest';
import { createLoadShedder, type LoadShedderState } from './load-shedder.js';
import { OVERLOADED_TYPE, planShed } from './shed-response.js';

/** A fixed shedder's state with a cap of `limit` and `inFlight` requests holding a slot. */
function state(inFlight: number, limit: number): LoadShedderState {
  const shedder = createLoadShedder({ maxInFlight: limit });
  for (let i = 0; i < inFlight; i++) expect(shedder.acquire()).toBeDefined();
  return shedder.state();
}

describe('planShed', () => {
  it.each([
    [1, 1, 1, 'The server is at its capacity (1 request in flight, limit 1); retry in 1 second.'],
    [999, 1, 1, 'The server is at its capacity (1 request in flight, limit 1); retry in 1 second.'],
    [1001, 8, 8, 'The server is at its capacity (8 requests in flight, limit 8); retry in 2 seconds.'],
    [30_000, 0, 4, 'The server is at its capacity (0 requests in flight, limit 4); retry in 30 seconds.'],
  ])('retryAfterMs %d, %d in flight of %d: "%s"', (retryAfterMs, inFlight, limit, detail) => {
    const plan = planShed(retryAfterMs, 'normal', state(inFlight, limit));
    expect(plan.status).toBe(503);
    expect(plan.problem).toMatchObject({ type: OVERLOADED_TYPE, status: 503, detail });
    expect(JSON.parse(plan.body as string).detail).toBe(detail);
    expect(plan.headers).toContainEqual(['Retry-After', String(Math.ceil(retryAfterMs / 1000))]);
  });
});
