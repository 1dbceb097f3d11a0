import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { createApp } from './app.js';

describe('koa example', () => {
  it('reaches 429 after the burst; uploads are charged in bytes', async () => {
    const now = 1_800_000_000_000;
    const server = createApp({ clock: () => now }).callback();
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push((await request(server).get('/api/hello')).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    const fresh = createApp({ clock: () => now }).callback();
    const upload = await request(fresh).post('/api/upload').send('x'.repeat(1000)).expect(200);
    expect(upload.headers['ratelimit-policy']).toBe('"upload-bytes";q=1000000;qu="content-bytes";w=60');
    expect(upload.headers.ratelimit).toMatch(/^"upload-bytes";r=999000;t=\d+$/);
  });
});
