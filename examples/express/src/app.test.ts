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
});
