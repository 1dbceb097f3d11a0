/**
 * @module The retry storm (issue 28): 200 clients start together against one 50 r/s limit (a tollgate
 * Express app, gcra, burst 10, every client on the same key). Each client is its own `withRetry` (its
 * own budget, as 200 separate processes would be). With withRetry every request succeeds, the server
 * receives at most a small multiple of the 200 requests it had to serve, and no one-second window admits
 * more than limit + burst. The same clients with a naive fixed-delay retry (every 100 ms, the way a
 * hand-written loop does it) show the storm it prevents. The figures go to packages/client/README.md.
 */
import { type FetchLike, withRetry } from '@tollgate/client';
import { afterEach, describe, expect, it } from 'vitest';
import { maxInWindow, startTollgate, type TestServer, warmUp } from './servers.js';

const CLIENTS = 200;
const LIMIT = 50;
const BURST = 10;
/** The most requests the server may receive per request it serves, with withRetry. */
const MAX_AMPLIFICATION = 3;
/**
 * The most retries one 100 ms may receive with jitter: the 190 clients refused at once come back over a
 * second or more (about 20 per 100 ms); without jitter they all come back in the same instant.
 */
const MAX_RETRIES_PER_100_MS = 80;
/** The naive client: a fixed delay between attempts, ignoring what the server says, giving up after a while. */
const NAIVE_DELAY_MS = 100;
const NAIVE_GIVE_UP_MS = 6_000;

interface StormResult {
  readonly succeeded: number;
  readonly received: number;
  readonly longestWaitMs: number;
  readonly maxReceivedPerSecond: number;
  readonly maxAdmittedPerSecond: number;
  /** The most requests received in any 100 ms once the first attempts are in (from 500 ms on): retries coming back together. */
  readonly maxRetriesPer100Ms: number;
  readonly wallMs: number;
}

async function storm(server: TestServer, client: () => FetchLike): Promise<StormResult> {
  await warmUp(server, CLIENTS);
  const clients = Array.from({ length: CLIENTS }, client);
  const start = performance.now();
  const waits = await Promise.all(
    clients.map(async (f) => {
      const res = await f(`${server.url}/storm`);
      await res.arrayBuffer();
      return { ok: res.status === 200, ms: performance.now() - start };
    }),
  );
  return {
    succeeded: waits.filter((w) => w.ok).length,
    received: server.seen.received.length,
    longestWaitMs: Math.round(Math.max(...waits.map((w) => w.ms))),
    maxReceivedPerSecond: maxInWindow(server.seen.received, 1_000),
    maxAdmittedPerSecond: maxInWindow(server.seen.admitted, 1_000),
    maxRetriesPer100Ms: maxInWindow(
      server.seen.received.filter((t) => t >= start + 500),
      100,
    ),
    wallMs: Math.round(performance.now() - start),
  };
}

/** Retries every refused request after a fixed NAIVE_DELAY_MS, ignoring what the server says, until NAIVE_GIVE_UP_MS. */
function naive(): FetchLike {
  return async (input, init) => {
    const deadline = performance.now() + NAIVE_GIVE_UP_MS;
    for (;;) {
      const res = await fetch(input, init);
      if (res.status !== 429 || performance.now() > deadline) return res;
      await res.arrayBuffer();
      await new Promise((r) => setTimeout(r, NAIVE_DELAY_MS));
    }
  };
}

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('a retry storm: 200 clients at once against 50 r/s', () => {
  const policy = { algorithm: 'gcra', limit: LIMIT, windowMs: 1_000, burst: BURST } as const;
  const results: Record<string, StormResult> = {};

  it('with withRetry: every request succeeds, the server sees a small multiple of the ideal, no second above limit + burst', async () => {
    server = await startTollgate(policy);
    let mostRetries = 0;
    const r = await storm(server, () => withRetry(fetch, { onRetry: (e) => (mostRetries = Math.max(mostRetries, e.attempt)) }));
    results.withRetry = r;
    console.log(`storm with withRetry: ${JSON.stringify({ ...r, mostRetries })}`);
    expect(r.succeeded).toBe(CLIENTS);
    expect(r.received).toBeLessThanOrEqual(MAX_AMPLIFICATION * CLIENTS);
    expect(r.maxAdmittedPerSecond).toBeLessThanOrEqual(LIMIT + BURST);
    expect(r.maxRetriesPer100Ms).toBeLessThanOrEqual(MAX_RETRIES_PER_100_MS);
  }, 30_000);

  it("with jitter: 'decorrelated': the same, its first retries spread as well", async () => {
    server = await startTollgate(policy);
    const r = await storm(server, () => withRetry(fetch, { jitter: 'decorrelated' }));
    console.log(`storm with decorrelated jitter: ${JSON.stringify(r)}`);
    expect(r.succeeded).toBe(CLIENTS);
    expect(r.received).toBeLessThanOrEqual(MAX_AMPLIFICATION * CLIENTS);
    expect(r.maxAdmittedPerSecond).toBeLessThanOrEqual(LIMIT + BURST);
    // main before: every first retry waited exactly Retry-After, 190 of them in one 100 ms.
    expect(r.maxRetriesPer100Ms).toBeLessThanOrEqual(MAX_RETRIES_PER_100_MS);
  }, 30_000);

  it('with a naive fixed-delay retry: the same clients storm the server', async () => {
    server = await startTollgate(policy);
    const r = await storm(server, naive);
    results.naive = r;
    console.log(`storm with a naive 100 ms retry: ${JSON.stringify(r)}`);
    // The limiter still holds the line on admissions; what grows is the load of refusals.
    expect(r.maxAdmittedPerSecond).toBeLessThanOrEqual(LIMIT + BURST);
    // How many the naive loop manages to send is bounded by how fast this machine answers (each client
    // loops as fast as its round trips allow), so the bounds leave room for a loaded CI machine: it sent
    // 2.9 to 6.4 times the ideal in our runs, withRetry 1.4 to 2.3 (packages/client/README.md).
    const withRetry = results.withRetry;
    if (withRetry !== undefined) expect(r.received).toBeGreaterThan(withRetry.received);
    expect(r.received).toBeGreaterThan(2 * CLIENTS);
  }, 30_000);
});
