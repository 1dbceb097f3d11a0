import request from 'supertest';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createApp } from './app.js';

afterEach(() => {
  vi.useRealTimers();
});

async function timerArmed(): Promise<void> {
  while (vi.getTimerCount() === 0) await new Promise((r) => setImmediate(r));
}

describe('login example', () => {
  it('answers wrong password and unknown account alike, and slows guessing progressively instead of locking out', async () => {
    const now = 1_800_000_000_000;
    const app = createApp({ clock: () => now });
    const wrong = await request(app).post('/login').send({ username: 'alice', password: 'nope' });
    const unknown = await request(app).post('/login').send({ username: 'mallory', password: 'nope' });
    expect([wrong.status, unknown.status, wrong.body, unknown.body]).toEqual([401, 401, wrong.body, wrong.body]);
    for (let i = 0; i < 3; i++) expect((await request(app).post('/login').send({ username: 'alice', password: 'x' })).status).toBe(401);
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    let status = 0;
    const held = request(app)
      .post('/login')
      .send({ username: 'alice', password: 'correct horse battery staple' })
      .then((res) => {
        status = res.status;
      });
    await timerArmed();
    await vi.advanceTimersByTimeAsync(5_999);
    expect(status).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    await held;
    expect(status).toBe(200);
    vi.useRealTimers();
    const after = await request(app).post('/login').send({ username: 'alice', password: 'x' });
    expect(after.status).toBe(401);
    expect(after.headers.ratelimit).toBe('"login-account";r=7;t=6');
  });

  it('rejects a request without credentials before counting it', async () => {
    await request(createApp()).post('/login').send({ username: 'alice' }).expect(400);
  });
});
