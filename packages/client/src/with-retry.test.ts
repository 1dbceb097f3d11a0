/**
 * withRetry's rules on virtual time: a scripted fetch answers each attempt, fake timers drive every wait.
 * The real-server behaviour (tollgate, express-rate-limit, nginx, the storm) is in test/client/.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { RateLimitConfigError } from '@tollgate/core';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type FetchLike, RateLimitClientError, withRetry } from './index.js';
import { followerCount } from './linked-signal.js';

const URL_ = 'http://127.0.0.1:1/api';

/** A fetch that answers from a script and records when (virtual ms) and how each attempt was made. */
function scripted(...answers: (Response | Error)[]) {
  const calls: { at: number; method: string; init: RequestInit | undefined }[] = [];
  const fetch: FetchLike = async (input, init) => {
    calls.push({ at: Date.now(), method: init?.method ?? (input instanceof Request ? input.method : 'GET'), init });
    if (init?.signal?.aborted) throw init.signal.reason;
    const next = answers.shift() ?? new Response('ok');
    if (next instanceof Error) throw next;
    return next;
  };
  return { fetch, calls };
}

const refused = (status: number, headers: Record<string, string> = {}) => new Response('no', { status, headers });

beforeEach(() => {
  vi.useFakeTimers({ now: Date.parse('2026-12-02T04:00:00Z') });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('withRetry', () => {
  it('waits what Retry-After says, plus jitter above it, then returns the success', async () => {
    const { fetch, calls } = scripted(refused(429, { 'retry-after': '2' }), refused(503, { 'retry-after': '1' }));
    const f = withRetry(fetch, { random: () => 0.5 });
    const done = f(URL_);
    await vi.advanceTimersByTimeAsync(10_000);
    const res = await done;
    expect(res.status).toBe(200);
    const t0 = calls[0]?.at ?? 0;
    // 2 s + half of a 2 s spread; then 1 s + half of a 2 s spread (attempt 2 doubles the 1 s span).
    expect(calls.map((c) => c.at - t0)).toEqual([0, 3000, 3000 + 2000]);
    expect(f.stats()).toMatchObject({ requests: 1, retries: 2 });
  });

  it('waits for an async onRetry before the wait; its rejection ends the call, never an unhandled rejection', async () => {
    const order: string[] = [];
    const ok = scripted(refused(429, { 'retry-after': '1' }));
    const done = withRetry(ok.fetch, {
      random: () => 0,
      onRetry: async (e) => {
        await new Promise((r) => setTimeout(r, 500));
        order.push(`logged ${e.attempt}`);
      },
    })(URL_);
    await vi.advanceTimersByTimeAsync(5_000);
    expect((await done).status).toBe(200);
    expect(order).toEqual(['logged 1']);
    // The retry left 1 s after onRetry settled (500 ms), not after it was called.
    expect((ok.calls[1]?.at ?? 0) - (ok.calls[0]?.at ?? 0)).toBe(1_500);

    const failing = scripted(refused(429, { 'retry-after': '1' }));
    const call = withRetry(failing.fetch, {
      onRetry: async () => {
        throw new Error('log sink down');
      },
    })(URL_);
    await expect(call).rejects.toThrow('log sink down');
    expect(failing.calls).toHaveLength(1);

    // One that never settles is not waited for past the call's deadline.
    const stuck = scripted(refused(429, { 'retry-after': '1' }));
    const hung = withRetry(stuck.fetch, { timeoutMs: 3_000, onRetry: () => new Promise(() => {}) })(URL_);
    const outcome = hung.then(
      () => 'resolved',
      (e: { code?: string }) => e.code,
    );
    await vi.advanceTimersByTimeAsync(3_000);
    expect(await outcome).toBe('ERR_RL_DEADLINE_EXCEEDED');
  });

  it("waits a RateLimit item's t when there is no Retry-After, and the HTTP-date form", async () => {
    const { fetch, calls } = scripted(
      refused(429, { ratelimit: '"default";r=0;t=4' }),
      refused(429, { 'retry-after': new Date(Date.now() + 8_000).toUTCString() }),
    );
    const done = withRetry(fetch, { random: () => 0 })(URL_);
    await vi.advanceTimersByTimeAsync(20_000);
    expect((await done).status).toBe(200);
    const t0 = calls[0]?.at ?? 0;
    // The date names an instant 8 s after the script was written: the second retry waits what is left of it.
    expect(calls.map((c) => c.at - t0)).toEqual([0, 4000, 8000]);
  });

  it('never retries a 413, another status, or a POST without being told; does with an Idempotency-Key or retryNonIdempotent', async () => {
    for (const status of [413, 400, 500]) {
      const { fetch, calls } = scripted(refused(status, { 'retry-after': '1' }));
      expect((await withRetry(fetch)(URL_)).status).toBe(status);
      expect(calls).toHaveLength(1);
    }
    const post = scripted(refused(429, { 'retry-after': '1' }));
    expect((await withRetry(post.fetch)(URL_, { method: 'POST', body: 'x' })).status).toBe(429);
    expect(post.calls).toHaveLength(1);

    const keyed = scripted(refused(429, { 'retry-after': '1' }));
    const a = withRetry(keyed.fetch)(URL_, { method: 'POST', body: 'x', headers: { 'Idempotency-Key': 'k1' } });
    await vi.advanceTimersByTimeAsync(5_000);
    expect((await a).status).toBe(200);
    expect(keyed.calls.map((c) => c.method)).toEqual(['POST', 'POST']);

    const told = scripted(refused(429, { 'retry-after': '1' }));
    const b = withRetry(told.fetch, { retryNonIdempotent: true })(new Request(URL_, { method: 'PATCH', body: 'x' }));
    await vi.advanceTimersByTimeAsync(5_000);
    expect((await b).status).toBe(200);
    expect(told.calls).toHaveLength(2);
    expect(() => withRetry(told.fetch, { retryOn: [429, 413] })).toThrow(RateLimitConfigError);
  });

  it('returns the refused response when the server asks for longer than maxDelayMs, or the retries are spent', async () => {
    const long = scripted(refused(429, { 'retry-after': '120' }));
    const f = withRetry(long.fetch, { maxDelayMs: 60_000 });
    const res = await f(URL_);
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('120');
    expect(f.stats().tooLongRefused).toBe(1);

    const spent = scripted(...Array.from({ length: 5 }, () => refused(503)));
    const g = withRetry(spent.fetch, { retries: 2, random: () => 0.5 });
    const done = g(URL_);
    await vi.advanceTimersByTimeAsync(5_000);
    expect((await done).status).toBe(503);
    expect(spent.calls).toHaveLength(3);
  });

  it('keeps a retry budget shared by every call: a server that fails everything gets little more than its normal load', async () => {
    const always = scripted(...Array.from({ length: 1000 }, () => refused(503)));
    const f = withRetry(always.fetch, { random: () => 0, budget: { ratio: 0.1, minRetriesPerSecond: 0.2, windowMs: 10_000 } });
    const calls = Promise.all(Array.from({ length: 100 }, () => f(URL_)));
    await vi.advanceTimersByTimeAsync(30_000);
    expect((await calls).every((r) => r.status === 503)).toBe(true);
    // 100 first attempts; retries at most 2 (the floor) + 0.1 * 100 = 12, against 500 without a budget.
    expect(always.calls).toHaveLength(112);
    // 88 refused at once, the 12 retried refused after their retry failed too.
    expect(f.stats()).toMatchObject({ requests: 100, retries: 12, budgetRefused: 100 });
  });

  it('gives the budget back for a retry that is never sent: its call aborted while waiting, or its onRetry threw', async () => {
    const always = scripted(...Array.from({ length: 100 }, () => refused(503, { 'retry-after': '1' })));
    // The floor is 2 retries in the window, and no share of the requests; each retry waits 1 s.
    const f = withRetry(always.fetch, { retries: 1, random: () => 0, budget: { ratio: 0, minRetriesPerSecond: 0.2, windowMs: 10_000 } });
    for (let i = 0; i < 3; i++) {
      const controller = new AbortController();
      const call = f(URL_, { signal: controller.signal });
      await vi.advanceTimersByTimeAsync(10);
      controller.abort(new Error('gave up'));
      await expect(call).rejects.toThrow('gave up');
    }
    const g = withRetry(always.fetch, {
      retries: 1,
      random: () => 0,
      budget: { ratio: 0, minRetriesPerSecond: 0.2, windowMs: 10_000 },
      onRetry: () => {
        throw new Error('onRetry failed');
      },
    });
    for (let i = 0; i < 3; i++) await expect(g(URL_)).rejects.toThrow('onRetry failed');
    // Neither spent its floor: both still retry twice.
    const both = Promise.all([f(URL_), f(URL_), f(URL_)]);
    await vi.advanceTimersByTimeAsync(5_000);
    await both;
    expect(f.stats()).toMatchObject({ retries: 2, budgetRefused: 1 });
  });

  it('retries a network error with backoff; an abort ends the call at once, waiting or in flight', async () => {
    const flaky = scripted(new TypeError('fetch failed'), new TypeError('fetch failed'));
    const f = withRetry(flaky.fetch, { random: () => 1 - Number.EPSILON });
    const done = f(URL_);
    await vi.advanceTimersByTimeAsync(1_000);
    expect((await done).status).toBe(200);
    const t0 = flaky.calls[0]?.at ?? 0;
    expect(flaky.calls.map((c) => c.at - t0)).toEqual([0, 100, 300]);

    const waiting = scripted(refused(429, { 'retry-after': '5' }));
    const controller = new AbortController();
    const call = withRetry(waiting.fetch)(URL_, { signal: controller.signal });
    const settled = call.catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(1_000);
    controller.abort();
    expect(await settled).toMatchObject({ name: 'AbortError' });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(waiting.calls).toHaveLength(1);
  });

  it("never retries fetch's own input errors (a bad URL, a GET with a body, a bad header or method): they throw at once", async () => {
    let calls = 0;
    const counted: FetchLike = (input, init) => {
      calls++;
      return fetch(input, init);
    };
    const f = withRetry(counted);
    const bad: [string, RequestInit | undefined][] = [
      ['not a url', undefined],
      [URL_, { method: 'GET', body: 'x' }],
      [URL_, { headers: { 'bad header': 'x' } }],
      [URL_, { method: 'bad method' }],
    ];
    for (const [input, init] of bad) await expect(f(input, init)).rejects.toBeInstanceOf(TypeError);
    expect(calls).toBeLessThanOrEqual(bad.length);
    expect(f.stats()).toMatchObject({ retries: 0, budgetRefused: 0 });
    // A network failure is still retried: undici's "fetch failed" (with its cause), a browser's "Failed to fetch".
    const flaky = scripted(new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED') }), new TypeError('Failed to fetch'));
    const g = withRetry(flaky.fetch);
    const done = g(URL_);
    await vi.advanceTimersByTimeAsync(1_000);
    expect((await done).status).toBe(200);
    expect(g.stats()).toMatchObject({ retries: 2 });
  });

  it('timeoutMs bounds the whole call: a wait past it is not started, a slow attempt is aborted with ERR_RL_DEADLINE_EXCEEDED', async () => {
    const slowRetry = scripted(refused(429, { 'retry-after': '3' }));
    const res = await withRetry(slowRetry.fetch, { timeoutMs: 2_000 })(URL_);
    expect(res.status).toBe(429);

    const hang: FetchLike = (_input, init) =>
      new Promise((_resolve, reject) => init?.signal?.addEventListener('abort', () => reject(init.signal?.reason)));
    const call = withRetry(hang, { timeoutMs: 2_000 })(URL_).catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(2_000);
    const error = await call;
    expect(error).toBeInstanceOf(RateLimitClientError);
    expect(error).toMatchObject({ code: 'ERR_RL_DEADLINE_EXCEEDED' });
  });

  /**
   * A server with a fixed window of `limit` per `windowMs`, aligned to `origin`, answering every request
   * with draft-11 headers (`t` rounded up to the second) and 429 over the limit.
   */
  /** A fixed-window server counting each request when it arrives; the response comes `latencyMs` later. */
  /** `n` calls at once through a pacing withRetry over `fetch`, run `ms` of virtual time; their statuses. */
  async function burst(fetch: FetchLike, n: number, ms: number): Promise<number[]> {
    const f = withRetry(fetch, { pacing: true, retries: 0 });
    const calls = Promise.all(Array.from({ length: n }, () => f(URL_)));
    await vi.advanceTimersByTimeAsync(ms);
    return (await calls).map((r) => r.status);
  }

  function windowServer(limit: number, windowMs: number, origin: number, latencyMs = 0) {
    const sent: { at: number; status: number }[] = [];
    let window = -1;
    let used = 0;
    const fetch: FetchLike = async () => {
      const now = Date.now();
      const w = Math.floor((now - origin) / windowMs);
      if (w !== window) {
        window = w;
        used = 0;
      }
      const status = used < limit ? 200 : 429;
      if (status === 200) used++;
      sent.push({ at: now - origin, status });
      const t = Math.ceil((origin + (w + 1) * windowMs - now) / 1000);
      const headers = { 'ratelimit-policy': `"w";q=${limit};w=${windowMs / 1000}`, ratelimit: `"w";r=${limit - used};t=${t}` };
      if (latencyMs > 0) await new Promise((r) => setTimeout(r, latencyMs));
      return new Response(status === 200 ? 'ok' : 'no', { status, headers });
    };
    return { fetch, sent };
  }

  it('pacing: spreads the last tenth of an advertised quota evenly over the time to the reset, one interval apart', async () => {
    const origin = Date.now();
    const server = windowServer(100, 2_000, origin);
    const f = withRetry(server.fetch, { pacing: true, retries: 0 });
    // 89 used: 11 left, above a tenth of 100; the 90th response says 10 left, 2 s to the reset.
    for (let i = 0; i < 90; i++) await f(URL_);
    await Promise.all([...Array.from({ length: 10 }, () => f(URL_)), vi.advanceTimersByTimeAsync(2_000)]);
    // 10 left over 2,000 ms: one every 200 ms, all before the reset (not 0, 200, 425, 676, ... 3,860).
    expect(server.sent.slice(90).map((s) => s.at)).toEqual([0, 200, 400, 600, 800, 1000, 1200, 1400, 1600, 1800]);
    expect(server.sent.every((s) => s.status === 200)).toBe(true);
    expect(f.stats().pacedMs).toBeGreaterThan(0);
  });

  it('pacing at zero: waiters for the reset are not sent at once; a probe goes first, the rest follow its numbers, none refused', async () => {
    const origin = Date.now();
    const server = windowServer(5, 2_000, origin);
    // No jitter past the reset (random 0): one client's probe and pacing alone.
    const f = withRetry(server.fetch, { pacing: true, retries: 0, random: () => 0 });
    for (let i = 0; i < 5; i++) await f(URL_);
    // Twenty callers at once with nothing left: twenty at the reset would be five admitted, fifteen 429s.
    const calls = Promise.all(Array.from({ length: 20 }, () => f(URL_)));
    await vi.advanceTimersByTimeAsync(12_000);
    const statuses = (await calls).map((r) => r.status);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    const later = server.sent.slice(5);
    expect(later).toHaveLength(20);
    // Five per window, the first of each window alone at its start (the probe), then the rest.
    for (let w = 1; w <= 4; w++) {
      const inWindow = later.filter((s) => s.at >= w * 2_000 && s.at < (w + 1) * 2_000);
      expect(inWindow).toHaveLength(5);
      expect(inWindow[0]?.at).toBe(w * 2_000);
    }
  });

  it("pacing with responses on their way: a response's remaining does not count the attempts still in flight, none refused", async () => {
    const origin = Date.now();
    const server = windowServer(10, 2_000, origin, 50);
    const f = withRetry(server.fetch, { pacing: true, retries: 0 });
    const warm = f(URL_);
    await vi.advanceTimersByTimeAsync(50);
    await warm;
    // Thirty at once with 9 left: nine go; the first response back says 8 left, but the eight others
    // are still on their way (main before: eight more were sent at once, and refused).
    const calls = Promise.all(Array.from({ length: 30 }, () => f(URL_)));
    await vi.advanceTimersByTimeAsync(10_000);
    const statuses = (await calls).map((r) => r.status);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    expect(server.sent.filter((s) => s.status !== 200)).toEqual([]);
  });

  it('pacing: new numbers wake the waiters to ask again, never to leave unpaced; a reset past what is left of maxDelayMs is answered at once', async () => {
    const t0 = Date.now();
    const sent: number[] = [];
    let answers = 0;
    const fetch: FetchLike = async () => {
      sent.push(Date.now() - t0);
      answers++;
      // The second request is slow: its answer (nothing left, 2 s) lands while the others wait.
      if (answers === 2) await new Promise((r) => setTimeout(r, 250));
      return new Response('ok', { headers: { ratelimit: `"d";r=${answers === 1 ? 1 : 0};t=2` } });
    };
    const f = withRetry(fetch, { pacing: true, maxDelayMs: 5_000, random: () => 0 });
    await f(URL_);
    const slow = f(URL_);
    const waiters = Promise.all(Array.from({ length: 8 }, () => f(URL_)));
    await vi.advanceTimersByTimeAsync(5_000);
    await slow;
    // The slow answer at 250 ms wakes them; they ask again and wait for its reset (2,250 ms), where one
    // probes; its answer (nothing left, 2 s more) paces the next probe; then the reset is past what is
    // left of their 5 s: they are answered at once, unsent, never released unpaced.
    expect(sent.slice(2)).toEqual([2_250, 4_250]);
    const statuses = (await waiters).map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(2);
    expect(statuses.filter((s) => s === 429)).toHaveLength(6);
    expect(f.stats().pacedRefused).toBe(6);
  });

  it('pacing: a probe answered with Retry-After alone (no quota numbers) holds the others until then', async () => {
    const t0 = Date.now();
    const sent: number[] = [];
    let first = true;
    const fetch: FetchLike = async () => {
      sent.push(Date.now() - t0);
      if (first) {
        first = false;
        return new Response('ok', { headers: { ratelimit: '"d";r=0;t=1' } });
      }
      return sent.length === 2 ? new Response('no', { status: 429, headers: { 'retry-after': '3' } }) : new Response('ok');
    };
    const f = withRetry(fetch, { pacing: true, retries: 0, random: () => 0 });
    await f(URL_);
    const calls = Promise.all([f(URL_), f(URL_), f(URL_)]);
    await vi.advanceTimersByTimeAsync(5_000);
    await calls;
    // The probe at the reset (1 s) is told to wait 3 s: the others go then, not at once.
    expect(sent).toEqual([0, 1_000, 4_000, 4_000]);
  });

  it('pacing: a success without numbers ends a nothing-left that only a Retry-After past maxDelayMs set (an absurd one never ended)', async () => {
    const sent: number[] = [];
    const t0 = Date.now();
    let first = true;
    const fetch: FetchLike = async () => {
      sent.push(Date.now() - t0);
      if (!first) return new Response('ok');
      first = false;
      return new Response('no', { status: 429, headers: { 'retry-after': '9'.repeat(400) } });
    };
    const f = withRetry(fetch, { pacing: true, maxDelayMs: 1_500 });
    // Refused at once: the wait is past maxDelayMs.
    expect((await f(URL_)).status).toBe(429);
    // Within maxDelayMs of that refusal, a call is answered with it at once, unsent.
    const local = await f(URL_);
    expect([local.status, local.headers.get('retry-after')]).toEqual([429, '1000000000']);
    await vi.advanceTimersByTimeAsync(1_500);
    // Then one goes to the server: it takes it, and nothing left is disproved (an absurd one never ends).
    expect((await f(URL_)).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await f(URL_)).status).toBe(200);
    expect(sent).toEqual([0, 1_500, 1_500, 1_500, 1_500]);
    expect(f.stats()).toMatchObject({ pacedMs: 0, pacedRefused: 1 });
  });

  it('pacing: a success that was on its way when the refusal came does not end the nothing-left', async () => {
    const sent: number[] = [];
    const t0 = Date.now();
    const fetch: FetchLike = async (input) => {
      sent.push(Date.now() - t0);
      if (String(input).endsWith('slow')) {
        await new Promise((r) => setTimeout(r, 100));
        return new Response('ok');
      }
      return sent.length === 3 ? new Response('no', { status: 429, headers: { 'retry-after': '3600' } }) : new Response('ok');
    };
    const f = withRetry(fetch, { pacing: true, maxDelayMs: 1_500 });
    // Heard from once (a first burst to a partition not heard from waits for one answer). The query is not
    // part of the line: the slow call is on the same one.
    await f(URL_);
    const slow = f(`${URL_}?slow`);
    expect((await f(URL_)).status).toBe(429);
    await vi.advanceTimersByTimeAsync(100);
    expect((await slow).status).toBe(200);
    // The 200 left before the 429 was seen: still nothing left, the next call is answered at once, unsent.
    expect((await f(URL_)).status).toBe(429);
    expect(sent).toEqual([0, 0, 0]);
    // maxDelayMs after the refusal, one goes to the server again.
    await vi.advanceTimersByTimeAsync(1_400);
    expect((await f(URL_)).status).toBe(200);
    expect(sent).toEqual([0, 0, 0, 1_500]);
  });

  it('pacing a first burst to an origin not heard from: one probe goes alone, the rest follow its numbers, none refused', async () => {
    const origin = Date.now();
    const server = windowServer(10, 2_000, origin, 50);
    // Thirty at once, nothing known yet. Before: all thirty were sent at once, twenty refused.
    expect((await burst(server.fetch, 30, 10_000)).filter((s) => s !== 200)).toEqual([]);
    expect(server.sent[0]?.at).toBe(0);
    expect(server.sent[1]?.at).toBe(50);
  });

  it('pacing counts the units granted to requests still waiting for their slots: 250 at once against 100 per 5 s, none refused', async () => {
    const origin = Date.now();
    const server = windowServer(100, 5_000, origin, 20);
    await burst(server.fetch, 250, 30_000);
    // Before: 52 to 54 refused (an answer's numbers did not count the units granted to paced slots not sent yet).
    expect(server.sent.filter((s) => s.status !== 200)).toEqual([]);
    expect(server.sent.length).toBeGreaterThan(200);
  });

  it('pacing: only a 429 or 503 is a refusal a local one repeats, or a Retry-After without numbers that spends a quota', async () => {
    // A 404 that spent the last unit: the next call, its reset an hour away, is answered locally with a
    // 429 (before: a 404, an existing resource reported missing).
    const missing = scripted(
      new Response('ok', { headers: { ratelimit: '"d";r=1;t=3600' } }),
      new Response('no such repo', { status: 404, headers: { ratelimit: '"d";r=0;t=3600' } }),
    );
    const f = withRetry(missing.fetch, { pacing: true, maxDelayMs: 2_000 });
    await f(`${URL_}/repos/a`);
    expect((await f(`${URL_}/repos/a`)).status).toBe(404);
    const local = await f(`${URL_}/repos/a`);
    expect([local.status, local.headers.get('retry-after'), missing.calls.length]).toEqual([429, '3600', 2]);
    // A 503 that said so is repeated as a 503.
    const busy = scripted(refused(503, { ratelimit: '"d";r=0;t=3600' }));
    const g = withRetry(busy.fetch, { pacing: true, maxDelayMs: 2_000, retries: 0 });
    await g(URL_);
    expect((await g(URL_)).status).toBe(503);
    // A 202 asking to poll in 3 s spends nothing: the next call is sent (before: a local 429).
    const accepted = scripted(new Response(null, { status: 202, headers: { 'retry-after': '3' } }));
    const h = withRetry(accepted.fetch, { pacing: true, maxDelayMs: 2_000 });
    await h(URL_, { method: 'POST' });
    expect((await h(URL_, { method: 'POST' })).status).toBe(200);
    expect(accepted.calls).toHaveLength(2);
  });

  it("pacing: a response a cache served (Age above 0) neither paces nor disproves a spent quota: the server's refusal still holds", async () => {
    const cachedOk = (age: string) =>
      new Response('cached', { headers: { age, ratelimit: '"d";r=9;t=540', 'ratelimit-policy': '"d";q=10;w=600' } });
    const server = scripted(
      refused(429, { ratelimit: '"d";r=0;t=600', 'retry-after': '600' }),
      cachedOk('30'),
      cachedOk('30'),
      cachedOk('30'),
    );
    const f = withRetry(server.fetch, { pacing: true, retries: 0, maxDelayMs: 1_000, budget: false });
    await f(URL_);
    // The local refusal is older than maxDelayMs: one call goes alone, and a cache answers it.
    await vi.advanceTimersByTimeAsync(2_000);
    expect((await f(URL_)).status).toBe(200);
    // Before: its quota fields ignored, the 200 counted as the server taking a request, every call sent.
    const next = [];
    for (let i = 0; i < 3; i++) next.push((await f(URL_)).status);
    expect(next).toEqual([429, 429, 429]);
    expect(server.calls).toHaveLength(2);
  });

  it('pacing: a probe that ends without a response (aborted) lets the next one probe alone, not every waiter go at once', async () => {
    const origin = Date.now();
    const server = windowServer(10, 3_000, origin, 200);
    const f = withRetry(server.fetch, { pacing: true, retries: 0 });
    const controller = new AbortController();
    const first = f(URL_, { signal: controller.signal }).then(
      () => 'answered',
      () => 'aborted',
    );
    const rest = Promise.all(Array.from({ length: 29 }, () => f(URL_).then((r) => r.status)));
    await vi.advanceTimersByTimeAsync(50);
    controller.abort();
    expect(await first).toBe('aborted');
    await vi.advanceTimersByTimeAsync(20_000);
    await rest;
    // Before: the 29 went at once when the probe was aborted, 19 of them refused by the server.
    expect(server.sent.filter((s) => s.status !== 200)).toEqual([]);
    expect(server.sent[1]?.at).toBe(50);
    expect(server.sent[2]?.at).toBeGreaterThanOrEqual(250);
  });

  it('pacing a first burst to an origin that sends no numbers: only the first burst waits for one answer', async () => {
    const t0 = Date.now();
    const sent: number[] = [];
    const fetch: FetchLike = async () => {
      sent.push(Date.now() - t0);
      await new Promise((r) => setTimeout(r, 50));
      return new Response('ok');
    };
    const f = withRetry(fetch, { pacing: true });
    const first = Promise.all(Array.from({ length: 5 }, () => f(URL_)));
    await vi.advanceTimersByTimeAsync(200);
    await first;
    expect(sent).toEqual([0, 50, 50, 50, 50]);
    // Heard from: the next burst goes at once.
    const second = Promise.all(Array.from({ length: 5 }, () => f(URL_)));
    await vi.advanceTimersByTimeAsync(100);
    await second;
    expect(sent.slice(5)).toEqual([200, 200, 200, 200, 200]);
  });

  it('pacing after a probe whose response brings no numbers: nothing is known, the others go', async () => {
    let bare = false;
    const sent: number[] = [];
    const t0 = Date.now();
    const fetch: FetchLike = async () => {
      sent.push(Date.now() - t0);
      return new Response('ok', { headers: bare ? {} : { ratelimit: '"d";r=0;t=1' } });
    };
    const f = withRetry(fetch, { pacing: true, random: () => 0 });
    await f(URL_);
    bare = true;
    const calls = Promise.all([f(URL_), f(URL_), f(URL_)]);
    await vi.advanceTimersByTimeAsync(1_000);
    await calls;
    expect(sent).toEqual([0, 1_000, 1_000, 1_000]);
  });

  it('pacing answers at once, unsent, a call whose reset is past maxDelayMs or the deadline; a retry waits what its refusal asked', async () => {
    // An hour to the reset with nothing left: the next call is answered at once with a local 429, not
    // held maxDelayMs and then sent (with every other call held with it).
    const quiet = scripted(new Response('ok', { headers: { ratelimit: '"d";r=0;t=3600' } }));
    const f = withRetry(quiet.fetch, { pacing: true, maxDelayMs: 2_000 });
    await f(URL_);
    const second = await f(URL_);
    expect([second.status, second.headers.get('retry-after'), await second.text()]).toEqual([429, '3600', '']);
    expect(quiet.calls).toHaveLength(1);
    expect(f.stats()).toMatchObject({ requests: 2, pacedMs: 0, pacedRefused: 1 });

    // A reset past the deadline is not waited for either: answered at once.
    const tight = scripted(new Response('ok', { headers: { ratelimit: '"d";r=0;t=10' } }));
    const g = withRetry(tight.fetch, { pacing: true, timeoutMs: 1_000 });
    await g(URL_);
    const late = await g(URL_);
    expect([late.status, late.headers.get('retry-after')]).toEqual([429, '10']);
    expect(tight.calls).toHaveLength(1);
    expect(g.stats()).toMatchObject({ pacedMs: 0, pacedRefused: 1 });

    // Retry-After 1 beside r=0;t=10: the retry comes after 1 s (draft-11: Retry-After takes precedence).
    const told = scripted(refused(429, { 'retry-after': '1', ratelimit: '"d";r=0;t=10' }));
    const h = withRetry(told.fetch, { pacing: true, timeoutMs: 5_000, random: () => 0 });
    const call = h(URL_);
    await vi.advanceTimersByTimeAsync(1_000);
    expect((await call).status).toBe(200);
    expect(told.calls.map((c) => c.at - (told.calls[0]?.at ?? 0))).toEqual([0, 1_000]);
    expect(h.stats()).toMatchObject({ retries: 1, pacedMs: 0 });
  });

  it('a signal aborted before the call: it rejects with the reason, and the attempt it started is never an unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      // A fetch that rejects on an aborted signal a tick later, as undici does.
      const later: FetchLike = (_input, init) => new Promise((_resolve, reject) => setTimeout(() => reject(init?.signal?.reason), 0));
      for (const options of [{}, { timeoutMs: 1_000 }, { pacing: true }]) {
        const controller = new AbortController();
        controller.abort();
        const call = withRetry(later, options)(URL_, { signal: controller.signal });
        await expect(call).rejects.toMatchObject({ name: 'AbortError' });
        const request = withRetry(later, options)(new Request(URL_, { signal: controller.signal }));
        await expect(request).rejects.toMatchObject({ name: 'AbortError' });
      }
      await vi.advanceTimersByTimeAsync(10);
      vi.useRealTimers();
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('a long-lived caller signal with timeoutMs: one listener on it, and the links to finished calls are freed (no Node 20 AbortSignal.any leak)', async () => {
    vi.useRealTimers();
    const { setFlagsFromString } = await import('node:v8');
    const { runInNewContext } = await import('node:vm');
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const app = new AbortController();
    const { EventEmitter } = await import('node:events');
    const f = withRetry(async () => new Response('ok'), { timeoutMs: 5_000 });
    for (let i = 0; i < 2_000; i++) await f(URL_, { signal: app.signal });
    expect(EventEmitter.getEventListeners(app.signal, 'abort')).toHaveLength(1);
    for (let i = 0; i < 5 && followerCount(app.signal) > 0; i++) {
      gc();
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(followerCount(app.signal)).toBeLessThan(50);
    // The link still works for a call in flight.
    const hang: FetchLike = (_input, init) =>
      new Promise((_resolve, reject) => init?.signal?.addEventListener('abort', () => reject(init.signal?.reason)));
    const call = withRetry(hang, { timeoutMs: 5_000 })(URL_, { signal: app.signal });
    app.abort(new Error('shutting down'));
    await expect(call).rejects.toThrow('shutting down');
  });

  it('never retries a scheme or port fetch refuses (ftp:, port 1, blob:), nor an abort a custom fetch rejects with', async () => {
    for (const url of ['ftp://127.0.0.1/x', 'http://127.0.0.1:1/', 'blob:nope']) {
      let calls = 0;
      const counted: FetchLike = (input, init) => {
        calls++;
        return fetch(input, init);
      };
      const f = withRetry(counted);
      await expect(f(url)).rejects.toBeInstanceOf(TypeError);
      expect(calls, url).toBe(1);
      expect(f.stats(), url).toMatchObject({ retries: 0 });
    }
    for (const name of ['AbortError', 'TimeoutError']) {
      const own = scripted(new DOMException('gave up', name));
      const f = withRetry(own.fetch);
      await expect(f(URL_)).rejects.toMatchObject({ name });
      expect(own.calls, name).toHaveLength(1);
    }
  });

  it('never retries a failure that repeats whatever the network does: a redirect loop, a redirect with redirect: error, about:', async () => {
    vi.useRealTimers();
    let hits = 0;
    const server = createServer((req, res) => {
      hits++;
      res.writeHead(302, { location: req.url === '/loop' ? '/loop' : '/elsewhere' }).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      for (const [url, init, sent] of [
        [`${base}/loop`, {}, 21],
        [`${base}/moved`, { redirect: 'error' }, 1],
        ['about:blank', {}, 0],
      ] as const) {
        hits = 0;
        const f = withRetry(fetch, { retries: 3, baseDelayMs: 1 });
        await expect(f(url, init), url).rejects.toBeInstanceOf(TypeError);
        // Before: each was retried three times (84 requests for the redirect loop).
        expect([hits, f.stats().retries], url).toEqual([sent, 0]);
      }
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('a retry the server lets fit before the deadline is made: jitter past the deadline, or leaving the attempt less than half the room, is drawn again within the room left', async () => {
    // Retry-After 1 s, 1.6 s to the deadline, jitter up to 2 s above the floor: every draw past 1.6 s is redrawn.
    const draws = [0.99, 0.3];
    const once = scripted(refused(429, { 'retry-after': '1' }));
    const f = withRetry(once.fetch, { timeoutMs: 1_600, random: () => draws.shift() ?? 0 });
    const call = f(URL_);
    await vi.advanceTimersByTimeAsync(1_600);
    expect((await call).status).toBe(200);
    const at = once.calls.map((c) => c.at - (once.calls[0]?.at ?? 0));
    // The floor plus 0.3 of the first half of the 600 ms of room above it (the other half is the attempt's).
    expect(at).toEqual([0, 1_000 + Math.ceil(0.3 * 300)]);
    expect(f.stats()).toMatchObject({ retries: 1, tooLongRefused: 0 });
    // A draw that ends before the deadline but leaves the attempt less than that half is drawn again too:
    // before, one ending 50 ms before the deadline was kept, and the attempt could only time out.
    const near = [0.55, 0.3];
    const again = scripted(refused(429, { 'retry-after': '1' }));
    const h = withRetry(again.fetch, { timeoutMs: 1_600, random: () => near.shift() ?? 0 });
    const nearCall = h(URL_);
    await vi.advanceTimersByTimeAsync(1_600);
    expect((await nearCall).status).toBe(200);
    expect(again.calls.map((c) => c.at - (again.calls[0]?.at ?? 0))).toEqual([0, 1_000 + Math.ceil(0.3 * 300)]);
    // A floor that itself ends past the deadline is still refused.
    const long = scripted(refused(429, { 'retry-after': '2' }));
    const g = withRetry(long.fetch, { timeoutMs: 1_600 });
    expect((await g(URL_)).status).toBe(429);
    expect(g.stats()).toMatchObject({ retries: 0, tooLongRefused: 1 });
  });

  it('never replays a streamed body (ReadableStream, Node Readable, async iterable); strings and bytes are replayed', async () => {
    const { Readable } = await import('node:stream');
    async function* chunks() {
      yield new TextEncoder().encode('hello');
    }
    const bodies: [string, () => RequestInit['body'], number][] = [
      ['ReadableStream', () => new Blob(['hello']).stream(), 1],
      ['Node Readable', () => Readable.from(['hello']) as unknown as RequestInit['body'], 1],
      ['async iterable', () => chunks() as unknown as RequestInit['body'], 1],
      ['string', () => 'hello', 2],
      ['bytes', () => new TextEncoder().encode('hello'), 2],
      ['URLSearchParams', () => new URLSearchParams({ a: '1' }), 2],
    ];
    for (const [name, body, sends] of bodies) {
      const { fetch, calls } = scripted(refused(503, { 'retry-after': '0' }));
      const call = withRetry(fetch, { random: () => 0 })(URL_, { method: 'PUT', body: body(), duplex: 'half' } as RequestInit);
      await vi.advanceTimersByTimeAsync(1_000);
      expect((await call).status, name).toBe(sends === 1 ? 503 : 200);
      expect(calls, name).toHaveLength(sends);
    }
  });

  it("with timeoutMs, the caller's abort still ends the response's body after the call returned", async () => {
    let seen: AbortSignal | undefined;
    const fetch: FetchLike = async (_input, init) => {
      seen = init?.signal ?? undefined;
      return new Response('ok');
    };
    const controller = new AbortController();
    const res = await withRetry(fetch, { timeoutMs: 5_000 })(URL_, { signal: controller.signal });
    expect(res.status).toBe(200);
    expect(seen?.aborted).toBe(false);
    controller.abort();
    expect(seen?.aborted).toBe(true);
    expect(seen?.reason).toMatchObject({ name: 'AbortError' });
    // The deadline is over with the call: it aborts nothing later.
    const quiet = new AbortController();
    await withRetry(fetch, { timeoutMs: 1_000 })(URL_, { signal: quiet.signal });
    await vi.advanceTimersByTimeAsync(2_000);
    expect(seen?.aborted).toBe(false);
  });

  it('times the deadline, the budget and pacing on a monotonic clock: a system clock step moves none of them', async () => {
    // Pacing: 2 s to the reset with nothing left; the system clock steps back 10 s during the wait. On
    // the wall clock the wait grew by the step (12 s).
    const quiet = scripted(new Response('ok', { headers: { ratelimit: '"d";r=0;t=2' } }));
    const f = withRetry(quiet.fetch, { pacing: true, maxDelayMs: 5_000, random: () => 0 });
    await f(URL_);
    const second = f(URL_);
    await vi.advanceTimersByTimeAsync(500);
    vi.setSystemTime(Date.now() - 10_000);
    await vi.advanceTimersByTimeAsync(1_500);
    expect(quiet.calls).toHaveLength(2);
    expect((await second).status).toBe(200);
    expect(f.stats().pacedMs).toBe(2_000);

    // The budget's window: spent, then the clock steps back an hour; a window later it is whole again.
    const always = scripted(...Array.from({ length: 100 }, () => refused(503)));
    const g = withRetry(always.fetch, { retries: 1, random: () => 0, budget: { ratio: 0, minRetriesPerSecond: 5, windowMs: 1_000 } });
    const spend = Promise.all(Array.from({ length: 10 }, () => g(URL_)));
    await vi.advanceTimersByTimeAsync(1_000);
    await spend;
    expect(g.stats()).toMatchObject({ retries: 5, budgetRefused: 5 });
    vi.setSystemTime(Date.now() - 3_600_000);
    await vi.advanceTimersByTimeAsync(1_500);
    const again = Promise.all(Array.from({ length: 5 }, () => g(URL_)));
    await vi.advanceTimersByTimeAsync(1_000);
    await again;
    expect(g.stats()).toMatchObject({ retries: 10, budgetRefused: 5 });

    // The deadline: the clock jumps an hour ahead during a 1 s Retry-After; the retry still fits the 10 s.
    const once = scripted(refused(429, { 'retry-after': '1' }));
    const h = withRetry(once.fetch, { timeoutMs: 10_000, random: () => 0 });
    const call = h(URL_);
    await vi.advanceTimersByTimeAsync(0);
    vi.setSystemTime(Date.now() + 3_600_000);
    await vi.advanceTimersByTimeAsync(1_000);
    expect((await call).status).toBe(200);
    expect(h.stats()).toMatchObject({ retries: 1, tooLongRefused: 0 });
  });

  it('refuses a signal that is not an AbortSignal as fetch does (a TypeError), leaving no timer behind', async () => {
    const { fetch, calls } = scripted();
    const f = withRetry(fetch, { timeoutMs: 3_000 });
    const timers = vi.getTimerCount();
    for (const signal of [{}, { aborted: false }, 'stop']) {
      await expect(f(URL_, { signal: signal as never })).rejects.toThrow(TypeError);
    }
    expect(vi.getTimerCount()).toBe(timers);
    expect(calls).toHaveLength(0);
    // A null signal is no signal, as in fetch.
    expect((await f(URL_, { signal: null })).status).toBe(200);
  });

  it('rejects bad options at construction with coded errors', () => {
    const { fetch } = scripted();
    expect(() => withRetry(fetch, { retries: -1 })).toThrow(/ERR_RL_INVALID_OPTION: 'retries'/);
    expect(() => withRetry(fetch, { jiter: 'full' } as never)).toThrow(/ERR_RL_UNKNOWN_OPTION: 'jiter'/);
    expect(() => withRetry(fetch, { jitter: 'equal' as never })).toThrow(/ERR_RL_INVALID_OPTION: 'jitter'/);
    expect(() => withRetry('fetch' as never)).toThrow(/ERR_RL_INVALID_OPTION: 'fetch'/);
    // A backoff unit above the longest wait would make the backoff meaningless.
    expect(() => withRetry(fetch, { baseDelayMs: 5_000, maxDelayMs: 100 })).toThrow(/ERR_RL_INVALID_OPTION: 'baseDelayMs'/);
    expect(withRetry(fetch, { maxDelayMs: 50 })).toBeTypeOf('function'); // the default unit follows a smaller cap
  });
});
