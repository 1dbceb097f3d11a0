import { describe, expect, it } from 'vitest';
import { createApp } from './app.js';

describe('fastify example', () => {
  it('limits the API, limits search harder, and never limits /health', async () => {
    const now = 1_800_000_000_000;
    const app = await createApp({ clock: () => now });
    const hello = [];
    for (let i = 0; i < 6; i++) hello.push((await app.inject('/api/hello')).statusCode);
    expect(hello).toEqual([200, 200, 200, 200, 200, 429]);
    const search = [];
    for (let i = 0; i < 3; i++) search.push((await app.inject('/api/search')).statusCode);
    expect(search).toEqual([200, 200, 429]);
    for (let i = 0; i < 10; i++) expect((await app.inject('/health')).statusCode).toBe(200);
    await app.close();
  });
});
