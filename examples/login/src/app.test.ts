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
    expect(await accountLeft(limiter, 'alice')).toBe(4);
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
    await vi.waitFor(async () => expect(await accountLeft(limiter, 'alice')).toBe(4));
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
