/**
 * @module A process of the Redis leases suite: contends for leases of one key (acquire, hold a few
 * ms, release) and reports how many it got and the most holders it saw at once; with HOG set, takes
 * every slot with a HOG ms lease, reports, and waits to be killed.
 */
import { RedisLeases } from '@tollgate/core';
import { Redis } from 'ioredis';

const client = new Redis({ host: '127.0.0.1', port: Number(process.env.REDIS_PORT) });
const leases = new RedisLeases(client, process.env.PREFIX);
const limit = Number(process.env.LIMIT);
const counter = `${process.env.PREFIX}:holders`;

if (process.env.HOG !== undefined) {
  for (let i = 0; i < limit; i++) await leases.acquire('shared', 'exports', limit, Number(process.env.HOG), `hog-${i}`);
  process.send?.({ ready: true });
  setInterval(() => {}, 1000);
} else {
  let granted = 0;
  let maxSeen = 0;
  for (let i = 0; i < 40; i++) {
    const id = `${process.env.WORKER}-${i}`;
    const g = await leases.acquire('shared', 'exports', limit, 5_000, id);
    if (g.granted) {
      granted += 1;
      const holders = await client.incr(counter);
      maxSeen = Math.max(maxSeen, holders);
      await new Promise((r) => setTimeout(r, 2 + (i % 5)));
      await client.decr(counter);
      await leases.release('shared', 'exports', id);
    } else {
      await new Promise((r) => setTimeout(r, 1));
    }
  }
  process.send?.({ granted, maxSeen });
  client.disconnect();
  process.exitCode = 0;
}
