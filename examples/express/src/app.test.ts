import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { createApp } from './app.js';

describe('express example', () => {
  it('reaches 429 after the burst, never limits /health, and charges reports by rows', async () => {
    const now = 1_800_000_000_000;
    const app = createApp({ clock: () => now });
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push((await request(app).get('/api/hello')).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    await request(app).get('/health').expect(200);
    const other = createApp({ clock: () => now });
    const report = await request(other).get('/api/report?rows=4').expect(200);
    expect(report.headers.ratelimit).toMatch(/^"burst";r=1;t=\d+, "hourly";r=96;t=\d+$/);
  });

  it('charges a report whole rows, 1 to 5, whatever ?rows says: ?rows=0.001 cannot make requests nearly free', async () => {
    const now = 1_800_000_000_000;
    const app = createApp({ clock: () => now });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      // The burst policy allows 5 units per 10 s: a fraction of a row is a row, so the sixth is refused.
      const statuses: number[] = [];
      for (let i = 0; i < 7; i++) statuses.push((await fetch(`${url}/api/report?rows=0.001`)).status);
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it.each([
    ['rows=0.001', 1],
    ['rows=2.5', 3],
    ['rows=0', 1],
    ['rows=-3', 1],
    ['rows=99', 5],
    ['rows=1e9', 1],
    ['rows=abc', 1],
    ['rows=2&rows=3', 1],
    ['', 1],
  ])('?%s is charged %d unit(s), and serves as many rows', async (query, rows) => {
    const now = 1_800_000_000_000;
    const app = createApp({ clock: () => now });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/api/report?${query}`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ rows });
      // Charged to both policies: the burst's 5 and the hourly 100.
      expect(res.headers.get('ratelimit')).toMatch(new RegExp(`^"burst";r=${5 - rows};t=\\d+, "hourly";r=${100 - rows};t=\\d+$`));
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
