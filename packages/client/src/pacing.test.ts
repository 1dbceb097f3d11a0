/**
 * Pacing by policy and partition, the herd past a reset, and a reset too far to wait for: scripted servers
 * on virtual time (fake timers drive every wait), and one real server on loopback. The older pacing rules
 * (spreading the last tenth, probes, attempts in flight) are in with-retry.test.ts.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type FetchLike, withRetry } from './index.js';
import { type Grant, Pacer, pacingScope, requestLine } from './pacer.js';

beforeEach(() => {
  vi.useFakeTimers({ now: Date.parse('2026-12-02T04:00:00Z') });
});
afterEach(() => {
  vi.useRealTimers();
});

const BASE = 'http://127.0.0.1:1';

/**
 * The tester's server (test/.probes/client/pacing-partition.mjs): `/search` is policy "search", 2 per
 * partition; every other path is policy "core", 1,000 per partition; the partition is the caller's key
 * (the `authorization` header, or `x-api-key`), named by `pk` unless `withPk` is false. Quotas never reset
 * in the test (t = 100 s).
 */
function partitionedServer(withPk = true) {
  const used = new Map<string, number>();
  const received: { at: number; path: string; key: string; status: number }[] = [];
  const t0 = Date.now();
  const fetch: FetchLike = async (input, init) => {
    const url = new URL(String(input));
    const headers = new Headers(init?.headers);
    const key = headers.get('authorization') ?? headers.get('x-api-key') ?? 'anon';
    const search = url.pathname === '/search';
    const name = search ? 'search' : 'core';
    const q = search ? 2 : 1000;
    const partition = `${name}:${key}`;
    const n = (used.get(partition) ?? 0) + 1;
    const pk = withPk ? `;pk=:${btoa(partition)}:` : '';
    const policy = { 'ratelimit-policy': `"${name}";q=${q};w=100${pk}` };
    const status = n > q ? 429 : 200;
    received.push({ at: Date.now() - t0, path: url.pathname, key, status });
    if (status === 429)
      return new Response('no', { status, headers: { ...policy, 'retry-after': '100', ratelimit: `"${name}";r=0;t=100${pk}` } });
    used.set(partition, n);
    return new Response('ok', { headers: { ...policy, ratelimit: `"${name}";r=${q - n};t=100${pk}` } });
  };
  return { fetch, received };
}

/**
 * Calls `f`; a call pacing holds is let run to its end in virtual time (the test then fails on `ms`), so
 * that the clock stands still for the calls that are not held. Returns the status and how long it took.
 */
async function timed(f: FetchLike, path: string, headers: Record<string, string>): Promise<{ status: number; ms: number }> {
  const start = Date.now();
  let ms = -1;
  const call = f(`${BASE}${path}`, { headers }).then((r) => {
    ms = Date.now() - start;
    return r.status;
  });
  await vi.advanceTimersByTimeAsync(0);
  if (ms < 0) await vi.advanceTimersByTimeAsync(30_000);
  return { status: await call, ms };
}

describe('pacing by policy and partition', () => {
  it("a spent policy holds only its own requests: not another route's policy, not another key's partition (pk)", async () => {
    const server = partitionedServer();
    const f = withRetry(server.fetch, { pacing: true, retries: 0, maxDelayMs: 5_000 });
    const a = { authorization: 'A' };
    expect(await timed(f, '/search', a)).toEqual({ status: 200, ms: 0 });
    expect(await timed(f, '/search', a)).toEqual({ status: 200, ms: 0 });
    // Search is spent for A (r=0, 100 s to the reset). /users answers to "core" (998 left): a new line,
    // not held by search (it goes as the probe of new lines; its answer names core, so /users/42 is not
    // held either). Before: held 5 s (maxDelayMs), as was everything below.
    expect(await timed(f, '/users', a)).toEqual({ status: 200, ms: 0 });
    expect(await timed(f, '/users/42', a)).toEqual({ status: 200, ms: 0 });
    // Key B's /search is another partition (its own pk): not held by A's.
    const b = { authorization: 'B' };
    expect(await timed(f, '/search', b)).toEqual({ status: 200, ms: 0 });
    expect(await timed(f, '/search', b)).toEqual({ status: 200, ms: 0 });
    expect(await timed(f, '/search', { authorization: 'C' })).toEqual({ status: 200, ms: 0 });
    // A's and B's search, spent until a reset past maxDelayMs: answered at once, unsent.
    expect(await timed(f, '/search', a)).toEqual({ status: 429, ms: 0 });
    expect(await timed(f, '/search', b)).toEqual({ status: 429, ms: 0 });
    // The server never saw a request it had to refuse.
    expect(server.received.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200, 200]);
    expect(f.stats()).toMatchObject({ requests: 9, pacedMs: 0, pacedRefused: 2 });
  });

  it('without pk, requests are partitioned by pacing.key (default: the Authorization header)', async () => {
    // Keys in Authorization, no pk: the default key tells A from B.
    const byAuth = partitionedServer(false);
    const f = withRetry(byAuth.fetch, { pacing: true, retries: 0, maxDelayMs: 5_000 });
    for (let i = 0; i < 2; i++) await timed(f, '/search', { authorization: 'A' });
    expect(await timed(f, '/search', { authorization: 'A' })).toEqual({ status: 429, ms: 0 });
    expect(await timed(f, '/search', { authorization: 'B' })).toEqual({ status: 200, ms: 0 });

    // Keys in X-Api-Key: without a pacing.key, all calls are one partition, and A's spent search holds B's.
    const byHeader = partitionedServer(false);
    const g = withRetry(byHeader.fetch, { pacing: true, retries: 0, maxDelayMs: 5_000 });
    for (let i = 0; i < 2; i++) await timed(g, '/search', { 'x-api-key': 'A' });
    expect(await timed(g, '/search', { 'x-api-key': 'B' })).toEqual({ status: 429, ms: 0 });
    // pacing.key names the partition: B is not held.
    const keyed = partitionedServer(false);
    const h = withRetry(keyed.fetch, { pacing: { key: (r) => r.headers.get('x-api-key') ?? undefined }, retries: 0, maxDelayMs: 5_000 });
    for (let i = 0; i < 2; i++) await timed(h, '/search', { 'x-api-key': 'A' });
    expect(await timed(h, '/search', { 'x-api-key': 'A' })).toEqual({ status: 429, ms: 0 });
    expect(await timed(h, '/search', { 'x-api-key': 'B' })).toEqual({ status: 200, ms: 0 });
    expect(keyed.received.map((r) => [r.key, r.status])).toEqual([
      ['A', 200],
      ['A', 200],
      ['B', 200],
    ]);
    expect(() => withRetry(byAuth.fetch, { pacing: { key: 'x-api-key' as never } })).toThrow(/ERR_RL_INVALID_OPTION: 'pacing.key'/);
  });

  it('a request is held by every quota its line answers to, and only by those (GitHub X-RateLimit-Resource too)', async () => {
    // /search answers to "burst" and "daily"; /items to "daily" only. Daily is spent: both are held.
    // Then a legacy server naming its resource: a spent "search" resource does not hold "core".
    const t0 = Date.now();
    const sent: string[] = [];
    const fetch: FetchLike = async (input) => {
      const path = new URL(String(input)).pathname;
      sent.push(`${path}@${Date.now() - t0}`);
      if (path.startsWith('/gh/')) {
        const resource = path === '/gh/search' ? 'search' : 'core';
        return new Response('ok', {
          headers: {
            'x-ratelimit-resource': resource,
            'x-ratelimit-remaining': resource === 'search' ? '0' : '4999',
            'x-ratelimit-reset': '2',
          },
        });
      }
      // The daily quota is spent until 2 s.
      const daily = `"daily";r=${Date.now() - t0 >= 2_000 ? 100 : 0};t=2`;
      const headers = { ratelimit: path === '/search' ? `"burst";r=5;t=1, ${daily}` : daily };
      return new Response('ok', { headers });
    };
    const f = withRetry(fetch, { pacing: true, retries: 0, random: () => 0 });
    await f(`${BASE}/search`);
    await f(`${BASE}/items`);
    const held = Promise.all([f(`${BASE}/search`), f(`${BASE}/items`)]);
    await vi.advanceTimersByTimeAsync(2_000);
    await held;
    expect(sent).toEqual(['/search@0', '/items@0', '/search@2000', '/items@2000']);
    sent.length = 0;
    await f(`${BASE}/gh/search`);
    await f(`${BASE}/gh/user`);
    const core = f(`${BASE}/gh/user`);
    const search = f(`${BASE}/gh/search`);
    await vi.advanceTimersByTimeAsync(0);
    await core;
    expect(sent).toEqual(['/gh/search@2000', '/gh/user@2000', '/gh/user@2000']);
    await vi.advanceTimersByTimeAsync(2_000);
    await search;
    expect(sent.at(-1)).toBe('/gh/search@4000');
  });

  it('never grants more than the last numbers left: units granted to paced slots not yet left are counted, the excess asks again', () => {
    let now = 0;
    const pacer = new Pacer({ paceBelow: 0.5, maxDelayMs: 30_000, clock: () => now, random: () => 0 });
    const scope = pacingScope('http://x', '', requestLine('GET', '/items'));
    const numbers = (r: number, status = 200) => {
      const item = { name: 'd', partition: undefined, remaining: r, resetMs: 2_000, limit: 20, windowMs: 2_000 };
      pacer.observe(
        scope,
        { retryAfterMs: undefined, remaining: r, resetMs: 2_000, limit: 20, dialect: 'draft-11', policies: [item] },
        status,
      );
    };
    const first = pacer.reserve(scope, 30_000);
    pacer.landed(pacer.sent(scope));
    numbers(10);
    if (first.kind === 'go' && first.ticket !== undefined) pacer.settled(first.ticket);
    const grants = () => Array.from({ length: 12 }, () => pacer.reserve(scope, 30_000)).flatMap((r) => (r.kind === 'go' ? [r] : []));
    const a = grants();
    expect(a).toHaveLength(10);
    // The first leaves and is answered: 9 left, the 9 still waiting for their slots already hold them.
    expect(pacer.redeem(a[0] as Grant)).toBe(true);
    now = 5;
    pacer.landed(pacer.sent(scope));
    numbers(9);
    // Before: nine more granted (19 against 10 left).
    expect(grants()).toHaveLength(0);
    // Another client spent the window: a 429 with nothing left while 9 are granted. None of them leaves.
    now = 10;
    numbers(0, 429);
    expect(a.slice(1).map((g) => pacer.redeem(g))).toEqual(Array(9).fill(false));
    expect(pacer.sizes().granted).toBe(0);
    // A granted request that will not leave gives its unit back.
    now = 2_100;
    numbers(5);
    const b = grants();
    expect(b).toHaveLength(5);
    pacer.forsake(b[0] as Grant);
    expect(grants()).toHaveLength(1);
  });

  it("a new line's grant forsaken after its line's answer named another quota gives its unit back once, not twice", () => {
    const pacer = new Pacer({ paceBelow: 0.1, maxDelayMs: 60_000, clock: () => 0, random: () => 0 });
    const numbers = (name: string, r: number) => {
      const item = { name, partition: undefined, remaining: r, resetMs: 10_000, limit: 100, windowMs: undefined };
      return { retryAfterMs: undefined, remaining: r, resetMs: 10_000, limit: 100, dialect: 'draft-11' as const, policies: [item] };
    };
    const answer = (scope: ReturnType<typeof pacingScope>, name: string, r: number) => {
      const g = pacer.reserve(scope, 60_000);
      if (g.kind !== 'go') throw new Error(`${scope.line}: ${g.kind}`);
      pacer.redeem(g);
      pacer.landed(pacer.sent(scope));
      pacer.observe(scope, numbers(name, r), 200);
      if (g.ticket !== undefined) pacer.settled(g.ticket);
    };
    const [x, y, l] = ['/x', '/y', '/l'].map((path) => pacingScope('http://x', '', requestLine('GET', path))) as [
      ReturnType<typeof pacingScope>,
      ReturnType<typeof pacingScope>,
      ReturnType<typeof pacingScope>,
    ];
    // Two first answers name quota A: a new line answers to A. 4 left.
    answer(x, 'A', 5);
    answer(y, 'A', 4);
    const first = pacer.reserve(l, 60_000);
    const second = pacer.reserve(l, 60_000);
    if (first.kind !== 'go' || second.kind !== 'go') throw new Error('not granted');
    // The first leaves; its answer names only B: its unit of A goes back. The second is aborted.
    pacer.redeem(first);
    pacer.landed(pacer.sent(l));
    pacer.observe(l, numbers('B', 50), 200);
    if (first.ticket !== undefined) pacer.settled(first.ticket);
    pacer.forsake(second);
    // A has its 4 again (before: 5, one more than the server said was left).
    let left = 0;
    for (let r = pacer.reserve(x, 60_000); r.kind === 'go'; r = pacer.reserve(x, 60_000)) {
      left += 1;
      pacer.redeem(r);
    }
    expect(left).toBe(4);
  });

  it('grants forsaken in the order they were granted (calls aborted together) give their pacing slots back too', () => {
    let now = 0;
    const pacer = new Pacer({ paceBelow: 1, maxDelayMs: 30_000, clock: () => now, random: () => 0 });
    const scope = pacingScope('http://x', '', requestLine('GET', '/items'));
    const item = { name: 'd', partition: undefined, remaining: 19, resetMs: 4_000, limit: 20, windowMs: 4_000 };
    const first = pacer.reserve(scope, 30_000);
    pacer.landed(pacer.sent(scope));
    pacer.observe(scope, { retryAfterMs: undefined, remaining: 19, resetMs: 4_000, limit: 20, dialect: 'draft-11', policies: [item] }, 200);
    if (first.kind === 'go' && first.ticket !== undefined) pacer.settled(first.ticket);
    const grants = Array.from({ length: 19 }, () => pacer.reserve(scope, 30_000)) as Grant[];
    expect(grants.every((g) => g.kind === 'go')).toBe(true);
    const interval = (grants[1] as Grant).waitMs;
    // Two leave at their slots; the other 17 are aborted together.
    now = interval;
    expect([pacer.redeem(grants[0] as Grant), pacer.redeem(grants[1] as Grant)]).toEqual([true, true]);
    for (const g of grants.slice(2)) pacer.forsake(g);
    // The next call waits about one interval (before: 3.3 s, the slot after the seventeen given back).
    const next = pacer.reserve(scope, 30_000);
    expect(next.kind).toBe('go');
    expect(next.kind === 'go' ? next.waitMs : -1).toBeLessThanOrEqual(interval + 1);
    expect(pacer.sizes().granted).toBe(1);
  });

  it('keeps memory bounded: lines, partitions, quotas and quotas per line', async () => {
    const pacer = new Pacer({ paceBelow: 0.1, maxDelayMs: 30_000, clock: () => Date.now(), random: () => 0, maxEntries: 50 });
    for (let i = 0; i < 500; i++) {
      const scope = pacingScope('http://a', String(i % 70), requestLine('GET', `/r${i}`));
      const policies = Array.from({ length: 20 }, (_, j) => ({
        name: `p${j}`,
        partition: String(i),
        remaining: 5,
        resetMs: 1_000,
        limit: 10,
        windowMs: 1_000,
      }));
      const r = pacer.reserve(scope, 1_000);
      if (r.kind === 'go') pacer.redeem(r);
      pacer.observe(scope, { retryAfterMs: undefined, remaining: 5, resetMs: 1_000, limit: 10, dialect: 'draft-11', policies }, 200);
    }
    expect(pacer.sizes()).toEqual({ lines: 50, partitions: 50, quotas: 50, flying: 0, granted: 0 });
    // Ids in paths are one line.
    expect(requestLine('GET', '/users/42/repos/6f1e2d3c-0a9b-4c8d-9e7f-123456789abc')).toBe('GET /users/:id/repos/:id');
    expect(requestLine('POST', '/files/0123456789abcdef0123')).toBe('POST /files/:id');
    expect(requestLine('GET', '/search')).toBe('GET /search');
  });
});

describe('pacing at zero: the herd past a reset', () => {
  /** A fixed window of 10 per 2 s from t0, shared by every client: draft-11 headers, 429 + Retry-After over it. */
  function fixedWindow(t0: number) {
    const arrivals: { at: number; status: number }[] = [];
    let window = 0;
    let used = 0;
    const fetch: FetchLike = async () => {
      const now = Date.now() - t0;
      const w = Math.floor(now / 2_000);
      if (w !== window) [window, used] = [w, 0];
      const status = used < 10 ? 200 : 429;
      if (status === 200) used++;
      arrivals.push({ at: now, status });
      const t = Math.ceil(((w + 1) * 2_000 - now) / 1000);
      const headers: Record<string, string> = { 'ratelimit-policy': '"w";q=10;w=2', ratelimit: `"w";r=${10 - used};t=${t}` };
      if (status === 429) headers['retry-after'] = String(t);
      return new Response(null, { status, headers });
    };
    return { fetch, arrivals };
  }

  /** A small seeded generator (mulberry32): each client its own, the run the same every time. */
  function seeded(seed: number): () => number {
    let a = seed >>> 0;
    return () => {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = Math.imul(a ^ (a >>> 15), 1 | a);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  it('fifty separate clients told the same reset come back spread over one pacing interval past it, not at one instant', async () => {
    const t0 = Date.now();
    const server = fixedWindow(t0);
    const clients = Array.from({ length: 50 }, (_, i) => withRetry(server.fetch, { pacing: true, retries: 0, random: seeded(i + 1) }));
    const first = await Promise.all(clients.map((c) => c(BASE)));
    expect(first.filter((r) => r.status === 200)).toHaveLength(10);
    const second = Promise.all(clients.map((c) => c(BASE)));
    await vi.advanceTimersByTimeAsync(5_000);
    await second;
    const afterReset = server.arrivals.filter((a) => a.at >= 2_000).map((a) => a.at);
    // The 40 refused and the one told r=0 wait for the reset; those told something was left went at once.
    expect(afterReset).toHaveLength(41);
    // Spread over [reset, reset + w/q) = [2,000, 2,200): before, all 41 came at 2,000 ms exactly.
    expect(Math.min(...afterReset)).toBeGreaterThanOrEqual(2_000);
    expect(Math.max(...afterReset)).toBeLessThan(2_200);
    let most = 0;
    for (const at of afterReset) most = Math.max(most, afterReset.filter((x) => x >= at && x < at + 10).length);
    expect(most).toBeLessThanOrEqual(8);
    // The quota admits its ten of them: the first ten to arrive.
    expect(server.arrivals.filter((a) => a.at >= 2_000 && a.status === 200)).toHaveLength(10);
  });
});

describe('pacing with a reset beyond maxDelayMs', () => {
  it('answers every call at once with the remembered refusal, unsent; after maxDelayMs one call goes alone, never a burst', async () => {
    const t0 = Date.now();
    const sent: number[] = [];
    const fetch: FetchLike = async () => {
      sent.push(Date.now() - t0);
      return new Response('maintenance', { status: 503, headers: { 'retry-after': '3600' } });
    };
    const f = withRetry(fetch, { pacing: true, maxDelayMs: 3_000 });
    expect((await f(BASE)).status).toBe(503);
    const calls = Promise.all(
      Array.from({ length: 20 }, () =>
        f(BASE).then((r) => ({ status: r.status, retryAfter: r.headers.get('retry-after'), at: Date.now() - t0 })),
      ),
    );
    await vi.advanceTimersByTimeAsync(5_000);
    // Before: each call was held 3 s, then all 20 were sent within a few ms.
    expect(new Set((await calls).map((r) => JSON.stringify(r)))).toEqual(
      new Set([JSON.stringify({ status: 503, retryAfter: '3600', at: 0 })]),
    );
    expect(sent).toEqual([0]);
    expect(f.stats()).toMatchObject({ requests: 21, pacedRefused: 20, pacedMs: 0, tooLongRefused: 1 });
    // 5 s later the refusal is older than maxDelayMs: of ten calls at once, one goes to the server.
    const again = await Promise.all(Array.from({ length: 10 }, () => f(BASE)));
    expect(again.map((r) => r.status)).toEqual(Array.from({ length: 10 }, () => 503));
    expect(sent).toEqual([0, 5_000]);
  });
});

describe('pacing against a real server on loopback', () => {
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise((resolve) => server?.close(resolve));
    server = undefined;
  });

  it('reads pk from real headers: a spent partition holds neither another route nor another key', async () => {
    vi.useRealTimers();
    const probe = partitionedServer();
    server = createServer((req, res) => {
      const init = { headers: { authorization: req.headers.authorization ?? '' } };
      void probe.fetch(`http://x${req.url}`, init).then(async (r) => {
        res.writeHead(r.status, Object.fromEntries(r.headers));
        res.end(await r.text());
      });
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const f = withRetry(fetch, { pacing: true, retries: 0, maxDelayMs: 5_000 });
    const call = async (path: string, key: string) => {
      const r = await f(`${base}${path}`, { headers: { authorization: key } });
      await r.arrayBuffer();
      return r.status;
    };
    const start = performance.now();
    const statuses = [];
    for (const [path, key] of [
      ['/search', 'A'],
      ['/search', 'A'],
      ['/search', 'A'],
      ['/users', 'A'],
      ['/search', 'B'],
      ['/search', 'B'],
      ['/search', 'B'],
      ['/search', 'C'],
    ] as const)
      statuses.push(await call(path, key));
    expect(statuses).toEqual([200, 200, 429, 200, 200, 200, 429, 200]);
    // Nothing waited (before: 5 s for each of four calls), and the server refused nothing.
    expect(performance.now() - start).toBeLessThan(4_000);
    expect(probe.received.every((r) => r.status === 200)).toBe(true);
  });

  it('a spent quota holds new lines (/users/<login>): one reaches the server, the others are answered at once', async () => {
    vi.useRealTimers();
    // The reviewer's probe (test/.probes/review/p5-pacing-new-lines.mts): "core", 10 per 60 s, for every path.
    let used = 0;
    const received: number[] = [];
    server = createServer((_req, res) => {
      const status = used >= 10 ? 429 : 200;
      if (status === 200) used++;
      received.push(status);
      res.setHeader('RateLimit-Policy', '"core";q=10;w=60');
      res.setHeader('RateLimit', `"core";r=${10 - used};t=60`);
      if (status === 429) res.setHeader('Retry-After', '60');
      res.statusCode = status;
      res.end();
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const f = withRetry(fetch, { pacing: true, retries: 0, maxDelayMs: 5_000 });
    for (let i = 0; i < 10; i++) await (await f(`${base}/users/alice`)).arrayBuffer();
    const names = Array.from({ length: 20 }, (_, i) => `/users/user-${String.fromCharCode(97 + i)}`);
    const statuses = await Promise.all(names.map(async (path) => (await f(base + path)).status));
    // Before: all twenty reached the server and were refused there.
    expect(statuses).toEqual(Array.from({ length: 20 }, () => 429));
    expect(received).toEqual([...Array.from({ length: 10 }, () => 200), 429]);
    expect(f.stats()).toMatchObject({ requests: 30, pacedRefused: 19 });
  });
});

describe('pacing new lines: paths that carry names (/users/<login>)', () => {
  /**
   * One quota, "core", `limit` per `windowMs` (a fixed window from t0), for every path but `/search*`
   * ("search", 2 per window); answers `latencyMs` after a request arrives, 429 with `Retry-After` over.
   */
  function namedPaths(t0: number, { limit = 10, windowMs = 3_000, latencyMs = 20 } = {}) {
    const arrivals: { at: number; path: string; status: number }[] = [];
    const used = new Map<string, number>();
    let window = 0;
    const fetch: FetchLike = async (input) => {
      const path = new URL(String(input)).pathname;
      const now = Date.now() - t0;
      const w = Math.floor(now / windowMs);
      if (w !== window) {
        window = w;
        used.clear();
      }
      const name = path.startsWith('/search') ? 'search' : 'core';
      const q = name === 'search' ? 2 : limit;
      const n = (used.get(name) ?? 0) + 1;
      const status = n > q ? 429 : 200;
      if (status === 200) used.set(name, n);
      arrivals.push({ at: now, path, status });
      const t = Math.ceil(((w + 1) * windowMs - now) / 1000);
      const headers: Record<string, string> = {
        'ratelimit-policy': `"${name}";q=${q};w=${windowMs / 1000}`,
        ratelimit: `"${name}";r=${q - Math.min(n, q)};t=${t}`,
      };
      if (status === 429) headers['retry-after'] = String(t);
      await new Promise((r) => setTimeout(r, latencyMs));
      return new Response(null, { status, headers });
    };
    return { fetch, arrivals };
  }

  /** Runs `call` to its end in virtual time. */
  async function run<T>(call: Promise<T>, ms = 1_000): Promise<T> {
    await vi.advanceTimersByTimeAsync(ms);
    return call;
  }

  /** Runs `call` to its end in virtual time, 100 ms at a time (at most a minute). */
  async function settle<T>(call: Promise<T>): Promise<T> {
    let done = false;
    call.then(
      () => (done = true),
      () => (done = true),
    );
    await vi.advanceTimersByTimeAsync(0);
    for (let i = 0; i < 600 && !done; i++) await vi.advanceTimersByTimeAsync(100);
    return call;
  }

  it('a spent quota holds new lines once one new line found it spent: one 429, not twenty; the rest wait for the reset', async () => {
    const t0 = Date.now();
    const server = namedPaths(t0);
    const f = withRetry(server.fetch, { pacing: true, retries: 0, maxDelayMs: 5_000, random: () => 0.5 });
    for (let i = 0; i < 10; i++) expect((await run(f(`${BASE}/users/alice`), 20)).status).toBe(200);
    const spentAt = Date.now() - t0;
    const calls = Promise.all(Array.from({ length: 20 }, (_, i) => f(`${BASE}/users/user-${String.fromCharCode(97 + i)}`)));
    const statuses = (await run(calls, 6_000)).map((r) => r.status);
    const later = server.arrivals.filter((a) => a.at >= spentAt);
    // Before: all twenty reached the server at once, and all twenty were refused there.
    expect(later.filter((a) => a.status === 429)).toHaveLength(1);
    expect(later[0]?.at).toBe(spentAt);
    // Nothing else left before the reset (3 s), and past it one probe went alone, the others after its answer.
    const afterReset = later.slice(1);
    expect(afterReset.every((a) => a.at >= 3_000)).toBe(true);
    expect((afterReset[1]?.at ?? 0) - (afterReset[0]?.at ?? 0)).toBeGreaterThanOrEqual(20);
    // The quota's ten went to ten of them; the other nine were answered at once, unsent (the next reset is past maxDelayMs).
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(afterReset).toHaveLength(10);
    expect(f.stats()).toMatchObject({ pacedRefused: 9 });
  });

  it('a partition with no spent quota costs new lines no wait: siblings on a new line and twenty new lines all leave at once', async () => {
    const t0 = Date.now();
    const server = namedPaths(t0, { limit: 1_000, windowMs: 60_000, latencyMs: 50 });
    const f = withRetry(server.fetch, { pacing: true, retries: 0 });
    // The partition's first contact: one answer's wait, once.
    await run(f(`${BASE}/users/alice`), 50);
    const siblings = Promise.all(Array.from({ length: 5 }, () => f(`${BASE}/users/bob`)));
    await run(siblings, 200);
    // Before: one left at 50 ms, its four siblings waited for its answer (100 ms).
    expect(server.arrivals.slice(1).map((a) => a.at)).toEqual([50, 50, 50, 50, 50]);
    const many = Promise.all(Array.from({ length: 20 }, (_, i) => f(`${BASE}/users/u${String.fromCharCode(97 + i)}`)));
    await run(many, 200);
    expect(new Set(server.arrivals.slice(6).map((a) => a.at))).toEqual(new Set([250]));
    expect(f.stats().pacedMs).toBe(0);
  });

  it('a spent quota new lines do not answer to holds them for one answer only (the earlier fix kept), then never', async () => {
    const t0 = Date.now();
    const server = namedPaths(t0, { limit: 1_000, windowMs: 60_000, latencyMs: 20 });
    const f = withRetry(server.fetch, { pacing: true, retries: 0, maxDelayMs: 5_000 });
    for (let i = 0; i < 2; i++) await run(f(`${BASE}/search`), 20);
    // "search" is spent for 60 s; twenty new /users lines: one goes, its answer names "core", the others follow.
    const first = Promise.all(Array.from({ length: 20 }, (_, i) => f(`${BASE}/users/a${i}`)));
    expect((await run(first, 100)).map((r) => r.status)).toEqual(Array.from({ length: 20 }, () => 200));
    expect(server.arrivals.slice(2).map((a) => a.at)).toEqual([40, ...Array.from({ length: 19 }, () => 60)]);
    const second = Promise.all(Array.from({ length: 20 }, (_, i) => f(`${BASE}/users/b${i}`)));
    expect((await run(second, 100)).map((r) => r.status)).toEqual(Array.from({ length: 20 }, () => 200));
    expect(new Set(server.arrivals.slice(22).map((a) => a.at))).toEqual(new Set([140]));
    expect(server.arrivals.filter((a) => a.status !== 200)).toEqual([]);
    // Search itself is still answered at once, unsent.
    expect((await run(f(`${BASE}/search`), 0)).status).toBe(429);
  });

  it('two new lines that answered to a quota spent since do not make it hold the next new lines (GitHub: /search/code, /search/issues)', async () => {
    const t0 = Date.now();
    const server = namedPaths(t0, { limit: 1_000, windowMs: 60_000, latencyMs: 20 });
    const f = withRetry(server.fetch, { pacing: true, retries: 0, maxDelayMs: 5_000 });
    await run(f(`${BASE}/search/code`), 20);
    await run(f(`${BASE}/search/issues`), 20);
    // Both first answers named "search", now spent for 60 s. New /users lines go (the first alone), none
    // answered locally on that evidence: it is older than the spending.
    const calls = Promise.all(Array.from({ length: 5 }, (_, i) => f(`${BASE}/users/u${i}`)));
    expect((await run(calls, 100)).map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(f.stats().pacedRefused).toBe(0);
    expect((await run(f(`${BASE}/search/code`), 0)).status).toBe(429);
    expect(server.arrivals.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200, 200]);
  });

  it("a new line's unit of a quota its answer does not name is given back: it never holds the lines that answer to that quota", async () => {
    const t0 = Date.now();
    let coreLeft = 3;
    const sent: string[] = [];
    const fetch: FetchLike = async (input) => {
      const path = new URL(String(input)).pathname;
      sent.push(`${path}@${Date.now() - t0}`);
      if (path.startsWith('/health')) return new Response('ok');
      coreLeft -= 1;
      return new Response('ok', { headers: { 'ratelimit-policy': '"core";q=10;w=60', ratelimit: `"core";r=${coreLeft};t=60` } });
    };
    const f = withRetry(fetch, { pacing: true, retries: 0, maxDelayMs: 10_000 });
    // Two first answers named "core": new lines answer to it. One unit is left.
    await settle(f(`${BASE}/users/alice`));
    await settle(f(`${BASE}/users/bob`));
    // A new line takes core's last unit (and its pacing slot), but its answer names nothing: both come back.
    await settle(f(`${BASE}/health/x`));
    expect((await settle(f(`${BASE}/users/alice`))).status).toBe(200);
    expect(sent).toEqual(['/users/alice@0', '/users/bob@0', '/health/x@0', '/users/alice@0']);
    // Now nothing is left: the next call on a line that answers to core is answered at once, unsent.
    expect((await settle(f(`${BASE}/users/alice`))).status).toBe(429);
    expect(sent).toHaveLength(4);
    expect(f.stats()).toMatchObject({ pacedMs: 0, pacedRefused: 1 });
  });
});
