import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { createApp } from './app.js';

const NOW = 1_800_000_000_000;

describe('plans example', () => {
  it('limits each API key by its plan, and the headers describe the plan that applied', async () => {
    const { app } = createApp({ clock: () => NOW });
    const free = await request(app).get('/api/widgets').set('x-api-key', 'free-key-1').expect(200);
    expect(free.body).toMatchObject({ plan: 'free', tenant: 'hobbyist' });
    expect(free.headers['ratelimit-policy']).toBe('"per-key";q=5;w=60, "tenant-day";q=200;w=86400');
    for (let i = 0; i < 4; i++) await request(app).get('/api/widgets').set('x-api-key', 'free-key-1').expect(200);
    const limited = await request(app).get('/api/widgets').set('x-api-key', 'free-key-1').expect(429);
    expect(limited.body['violated-policies']).toEqual(['per-key']);
    const pro = await request(app).get('/api/widgets').set('x-api-key', 'pro-key-1').expect(200);
    expect(pro.body.plan).toBe('pro');
    expect(pro.headers['ratelimit-policy']).toBe('"per-key";q=60;w=60, "tenant-day";q=5000;w=86400');
    const acme = await request(app).get('/api/widgets').set('x-api-key', 'acme-key-1').expect(200);
    expect(acme.body.plan).toBe('acme-contract');
  });

  it('counts every key of a tenant against its daily quota, in the same decision', async () => {
    const { app, limiter } = createApp({ clock: () => NOW });
    await request(app).get('/api/widgets').set('x-api-key', 'pro-key-1').expect(200);
    await request(app).get('/api/widgets').set('x-api-key', 'pro-key-2').expect(200);
    const quota = await request(app).get('/quota').set('x-api-key', 'pro-key-1').expect(200);
    expect(quota.body).toEqual({ plan: 'pro', left: { 'per-key': 19, 'tenant-day': 4998 } });
    // The quota endpoint peeks: it charges nothing.
    const again = await request(app).get('/quota').set('x-api-key', 'pro-key-1').expect(200);
    expect(again.body).toEqual(quota.body);
    expect(limiter.stats().requests).toBe(2);
  });

  it('gives an unknown API key the strict plan (never a bypass) and caches the customer lookup', async () => {
    const { app, directory } = createApp({ clock: () => NOW });
    for (let i = 0; i < 5; i++) await request(app).get('/api/widgets').set('x-api-key', 'made-up').expect(401);
    await request(app).get('/api/widgets').set('x-api-key', 'made-up').expect(429);
    for (let i = 0; i < 5; i++) await request(app).get('/api/widgets').set('x-api-key', 'acme-key-1').expect(200);
    expect(directory.lookups).toBe(2);
  });
});
