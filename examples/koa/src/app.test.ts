import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
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

  it('refuses a chunked upload (no Content-Length) with 411 and charges nothing (before: charged 1 byte, whatever its size)', async () => {
    const now = 1_800_000_000_000;
    const app = createApp({ clock: () => now });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const chunked = await new Promise<number>((resolve, reject) => {
        const req = httpRequest({
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/api/upload',
          headers: { 'transfer-encoding': 'chunked' },
        });
        req.on('response', (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        for (let i = 0; i < 9; i++) req.write('x'.repeat(100_000));
        req.end();
      });
      expect(chunked).toBe(411);
      const after = await request(server).post('/api/upload').send('x'.repeat(1000)).expect(200);
      expect(after.headers.ratelimit).toMatch(/^"upload-bytes";r=999000;t=\d+$/);
    } finally {
      server.close();
    }
  });
});
