import { request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Limiter } from '@tollgate/core';
import request from 'supertest';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createApp } from './app.js';

afterEach(() => {
  vi.useRealTimers();
});

async function timersArmed(n: number): Promise<void> {
  while (vi.getTimerCount() < n) await new Promise((r) => setImmediate(r));
}

const NOW = 1_800_000_000_000;

/** What the account has left (its policy's remaining, as a peek sees it). */
async function accountLeft(limiter: Limiter, account: string): Promise<number | undefined> {
  const d = await limiter.peek({ 'login-ip': 'ip:peek', 'login-account': `account:${account}` }, { cost: 0.001 });
  const r = d.policies.find((p) => p.name === 'login-account');
  return r?.remaining;
}

describe('login example', () => {
  it('answers wrong password and unknown account alike; counts failures only: a successful login is given back', async () => {
    const app = createApp({ clock: () => NOW });
    const limiter = app.locals.limiter as Limiter;
    const wrong = await request(app).post('/login').send({ username: 'alice', password: 'nope' });
    const unknown = await request(app).post('/login').send({ username: 'mallory', password: 'nope' });
    expect([wrong.status, unknown.status, wrong.body, unknown.body]).toEqual([401, 401, wrong.body, wrong.body]);
    for (let i = 0; i < 3; i++) expect((await request(app).post('/login').send({ username: 'alice', password: 'x' })).status).toBe(401);
    // 3 more can be taken (held 6, 12 and 18 s); the one after would be held 24 s, past maxDelayMs (before:
    // 4, the bucket's room, though a 4th more is refused).
    expect(await accountLeft(limiter, 'alice')).toBe(3);
    // The 5th attempt is held 6 s (progressive delay, no lockout); it succeeds, and does not count.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    let status = 0;
    const held = request(app)
      .post('/login')
      .send({ username: 'alice', password: 'correct horse battery staple' })
      .then((res) => {
        status = res.status;
      });
    await timersArmed(1);
    await vi.advanceTimersByTimeAsync(5_999);
    expect(status).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    await held;
    expect(status).toBe(200);
    vi.useRealTimers();
    await vi.waitFor(async () => expect(await accountLeft(limiter, 'alice')).toBe(3));
  });

  it('rejects at once, with the exact Retry-After, an attempt that would be held longer than maxDelayMs', async () => {
    const app = createApp({ clock: () => NOW });
    for (let i = 0; i < 4; i++) await request(app).post('/login').send({ username: 'bob', password: 'x' }).expect(401);
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    // Held 6, 12 and 18 s.
    const heldOnes = [0, 1, 2].map(() =>
      request(app)
        .post('/login')
        .send({ username: 'bob', password: 'x' })
        .then((r) => r.status),
    );
    await timersArmed(3);
    await vi.advanceTimersByTimeAsync(18_000);
    expect(await Promise.all(heldOnes)).toEqual([401, 401, 401]);
    vi.useRealTimers();
    // The next would wait 24 s, above maxDelayMs (20 s): 429 now; after 4 s it would wait 20 s.
    const rejected = await request(app).post('/login').send({ username: 'bob', password: 'x' });
    expect(rejected.status).toBe(429);
    expect(rejected.headers['retry-after']).toBe('4');
  });

  it('rejects a request without credentials before counting it', async () => {
    await request(createApp()).post('/login').send({ username: 'alice' }).expect(400);
  });
});

/** One login attempt over HTTP from the loopback address `from` (each is a client IP of its own). */
function attempt(url: string, from: string, username: string): Promise<{ status: number; retryAfter?: string }> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ username, password: 'guess' });
    const req = httpRequest(
      `${url}/login`,
      { method: 'POST', localAddress: from, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('login example: per IP, an exact rolling window (sliding-log)', () => {
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise((resolve) => server?.close(resolve));
    server = undefined;
  });

  it('an address spraying accounts gets its 31st failure in any 15 minutes refused, to the millisecond; another address does not', async () => {
    let now = NOW;
    const app = createApp({ clock: () => now });
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server?.once('listening', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // 30 failures from 127.0.0.2, 10 s apart, 3 per account: no account policy is ever near its delay.
    for (let i = 0; i < 30; i++) {
      now = NOW + i * 10_000;
      expect((await attempt(url, '127.0.0.2', `user-${i % 10}`)).status, `attempt ${i + 1}`).toBe(401);
    }
    now = NOW + 300_000;
    // The 31st, on an account never tried: the per-IP policy refuses it, until the first failure is 15 minutes old.
    expect(await attempt(url, '127.0.0.2', 'carol')).toEqual({ status: 429, retryAfter: '600' });
    // Another address is not affected, nor is an account by another address's failures.
    expect((await attempt(url, '127.0.0.3', 'carol')).status).toBe(401);
    now = NOW + 15 * 60_000 - 1;
    expect(await attempt(url, '127.0.0.2', 'carol')).toEqual({ status: 429, retryAfter: '1' });
    // Exactly 15 minutes after the first failure it leaves the window: one more attempt, then the second one's turn (10 s later).
    now = NOW + 15 * 60_000;
    expect((await attempt(url, '127.0.0.2', 'carol')).status).toBe(401);
    expect(await attempt(url, '127.0.0.2', 'dave')).toEqual({ status: 429, retryAfter: '10' });
    now = NOW + 15 * 60_000 + 10_000;
    expect((await attempt(url, '127.0.0.2', 'dave')).status).toBe(401);
    // 36 scrypt checks: slow on a busy machine.
  }, 60_000);
});
