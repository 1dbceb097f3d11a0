/**
 * @module withRetry against servers nobody tuned for it (issue 28): a tollgate Express app (draft-11
 * `RateLimit` + `Retry-After`), express-rate-limit with its legacy `X-RateLimit-*` and its draft-7
 * `RateLimit` headers, and nginx `limit_req` (a bare 503). Real servers on loopback, real time, kept
 * short; plus ky and axios using withRetry as their fetch.
 */
import { RateLimitClientError, withRetry } from '@tollgate/client';
import axios from 'axios';
import ky from 'ky';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { describeNginx, maxInWindow, startErl, startNginx, startTollgate, type TestServer } from './servers.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Runs `n` requests one after another through `f`; returns their statuses and the total time. */
async function sequential(f: typeof fetch, url: string, n: number): Promise<{ statuses: number[]; ms: number }> {
  const start = performance.now();
  const statuses: number[] = [];
  for (let i = 0; i < n; i++) {
    const res = await f(url);
    await res.arrayBuffer();
    statuses.push(res.status);
  }
  return { statuses, ms: performance.now() - start };
}

describe('withRetry against a tollgate Express app', () => {
  it('waits the Retry-After of each 429 and gets every request through', async () => {
    server = await startTollgate({ algorithm: 'fixed-window', anchor: 'first-request', limit: 3, windowMs: 1_000 });
    const waits: number[] = [];
    const f = withRetry(fetch, { onRetry: (e) => waits.push(e.delayMs), random: () => 0 });
    const all = await Promise.all(Array.from({ length: 6 }, () => f(`${server?.url}/a`)));
    expect(all.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    // Three refused once each, all told "Retry-After: 1" (the window's end, rounded up): none came back sooner.
    expect(waits).toEqual([1000, 1000, 1000]);
    expect(server.seen.received).toHaveLength(9);
    expect(maxInWindow(server.seen.admitted, 1_000)).toBeLessThanOrEqual(3 * 2); // two fixed windows can touch
  });

  it('with pacing, reads draft-11 RateLimit and spreads the quota instead of being refused', async () => {
    server = await startTollgate({ algorithm: 'fixed-window', anchor: 'first-request', limit: 4, windowMs: 1_000 });
    const f = withRetry(fetch, { pacing: { paceBelow: 0.5 } });
    const { statuses } = await sequential(f, `${server.url}/p`, 8);
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(server.seen.received).toHaveLength(8);
    expect(f.stats()).toMatchObject({ retries: 0 });
    expect(f.stats().pacedMs).toBeGreaterThan(0);
  });

  it('never retries a POST, and returns a 413 (cost above capacity) as it is', async () => {
    server = await startTollgate({ algorithm: 'fixed-window', anchor: 'first-request', limit: 1, windowMs: 60_000 });
    const f = withRetry(fetch);
    expect((await f(`${server.url}/x`)).status).toBe(200);
    const post = await f(`${server.url}/x`, { method: 'POST', body: 'x' });
    expect(post.status).toBe(429);
    expect(Number(post.headers.get('retry-after'))).toBeGreaterThan(0);
    const tooBig = await f(`${server.url}/x`, { headers: { 'x-cost': '5' } });
    expect(tooBig.status).toBe(413);
    expect(server.seen.received).toHaveLength(3);
  });

  it('a deadline ends the call with ERR_RL_DEADLINE_EXCEEDED in flight, or returns the 429 when the wait would pass it', async () => {
    server = await startTollgate({ algorithm: 'fixed-window', anchor: 'first-request', limit: 1, windowMs: 60_000 });
    const f = withRetry(fetch, { timeoutMs: 10_000 });
    await f(`${server.url}/d`);
    const start = performance.now();
    const res = await f(`${server.url}/d`);
    expect(res.status).toBe(429);
    // At once: waiting out the 60 s window would pass the 10 s deadline (half of it is slack for a loaded machine).
    expect(performance.now() - start).toBeLessThan(5_000);
    // A fetch that ignores its signal still cannot hold the call past the deadline.
    const hang = withRetry(() => new Promise<Response>(() => undefined), { timeoutMs: 50 });
    await expect(hang(`${server.url}/d`)).rejects.toBeInstanceOf(RateLimitClientError);
  });
});

describe('withRetry against express-rate-limit', () => {
  it.each(['legacy', 'draft-7'] as const)('%s headers: pacing waits for the reset instead of taking 429s', async (dialect) => {
    server = await startErl(3, 1_000, dialect);
    const f = withRetry(fetch, { pacing: true });
    const { statuses } = await sequential(f, `${server.url}/e`, 6);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200]);
    expect(server.seen.received).toHaveLength(6);
    expect(f.stats().pacedMs).toBeGreaterThan(0);
  });

  it('without pacing, each 429 is retried after its Retry-After and nothing is lost', async () => {
    server = await startErl(2, 1_000, 'legacy');
    const f = withRetry(fetch, { random: () => 0 });
    const all = await Promise.all(Array.from({ length: 4 }, () => f(`${server?.url}/e`)));
    expect(all.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(server.seen.admitted).toHaveLength(4);
    expect(server.seen.received.length).toBeLessThanOrEqual(6);
  });
});

describeNginx('withRetry against nginx limit_req', () => {
  it('backs off on its bare 503s until every request gets through', async () => {
    const nginx = await startNginx('20r/s', 0);
    server = nginx;
    // Eight at once against one request per 50 ms: the shared budget's floor (10 retries per 10 s) is
    // too small for this burst of contention, so this client is given a bigger one.
    const f = withRetry(fetch, { retries: 10, baseDelayMs: 50, budget: { minRetriesPerSecond: 5 } });
    const all = await Promise.all(Array.from({ length: 8 }, () => f(`${nginx.url}/n`)));
    expect(all.map((r) => r.status)).toEqual(Array.from({ length: 8 }, () => 200));
    expect(f.stats().retries).toBeGreaterThan(0);
    // nginx writes a request's access log line after it sent the response: wait for the last ones.
    const served = async () => (await nginx.log()).split('\n').filter((l) => l.includes('GET /n ') && l.includes('" 200 '));
    await vi.waitFor(async () => expect(await served()).toHaveLength(8), { timeout: 5_000, interval: 20 });
    expect(await served()).toHaveLength(8);
  });
});

describe('ky and axios with withRetry as their fetch', () => {
  it('ky: fetch option, its own retry off', async () => {
    server = await startTollgate({ algorithm: 'fixed-window', anchor: 'first-request', limit: 2, windowMs: 1_000 });
    const api = ky.create({ prefixUrl: server.url, fetch: withRetry(fetch), retry: 0 });
    const bodies = await Promise.all(Array.from({ length: 4 }, () => api.get('k').json<{ ok: boolean }>()));
    expect(bodies).toEqual(Array.from({ length: 4 }, () => ({ ok: true })));
    expect(server.seen.admitted).toHaveLength(4);
  });

  it('axios: the fetch adapter with env.fetch', async () => {
    server = await startTollgate({ algorithm: 'fixed-window', anchor: 'first-request', limit: 2, windowMs: 1_000 });
    const api = axios.create({ baseURL: server.url, adapter: 'fetch', env: { fetch: withRetry(fetch) } });
    const responses = await Promise.all(Array.from({ length: 4 }, () => api.get('/x')));
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(server.seen.admitted).toHaveLength(4);
  });
});
