import { Cluster, Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import type { NodeRedisClientLike, RedisClientLike } from '../redis-client.js';
import { ioredisKeyspace, nodeRedisKeyspace } from './keyspace.js';

/** Clients that never connect (`lazyConnect`), closed after the suite. */
const made: (Redis | Cluster)[] = [];
function ioredis(...args: unknown[]): RedisClientLike {
  const c = new (Redis as unknown as new (...a: unknown[]) => Redis)(...args, { lazyConnect: true });
  made.push(c);
  return c as unknown as RedisClientLike;
}
function cluster(nodes: unknown[], options: object = {}): RedisClientLike {
  const c = new Cluster(nodes as never, { lazyConnect: true, ...options });
  made.push(c);
  return c as unknown as RedisClientLike;
}
/** A node-redis client as v4 to v6 keep their options (the parsed URL in `socket` and `database`). */
function nodeRedis(options: object | undefined): NodeRedisClientLike {
  return { isOpen: false, isReady: false, sendCommand: async () => undefined, options } as NodeRedisClientLike;
}

afterAll(() => {
  for (const c of made) c.disconnect();
});

describe('keyspace', () => {
  it('names one server, database and key prefix the same way in every spelling and library', () => {
    const same = [
      ioredisKeyspace(ioredis()),
      ioredisKeyspace(ioredis(6379)),
      ioredisKeyspace(ioredis('redis://127.0.0.1:6379/0')),
      ioredisKeyspace(ioredis({ host: '::1' })),
      nodeRedisKeyspace(nodeRedis({})),
      nodeRedisKeyspace(nodeRedis({ socket: { host: 'LOCALHOST', port: 6379 }, database: 0 })),
    ];
    expect(new Set(same)).toEqual(new Set(['localhost:6379/0']));
    expect(ioredisKeyspace(ioredis({ host: 'redis.internal', port: 6380, db: 2 }))).toBe('redis.internal:6380/2');
    expect(nodeRedisKeyspace(nodeRedis({ socket: { host: 'redis.internal', port: 6380 }, database: 2 }))).toBe('redis.internal:6380/2');
    expect(ioredisKeyspace(ioredis({ path: '/run/redis.sock' }))).toBe('unix:/run/redis.sock/0');
    expect(ioredisKeyspace(ioredis({ keyPrefix: 'app:' }))).toBe('localhost:6379/0 keyPrefix="app:"');
  });

  it('tells another database, port, host or key prefix apart', () => {
    const all = [
      ioredisKeyspace(ioredis()),
      ioredisKeyspace(ioredis({ db: 1 })),
      ioredisKeyspace(ioredis({ port: 6380 })),
      ioredisKeyspace(ioredis({ host: '10.0.0.5' })),
      ioredisKeyspace(ioredis({ keyPrefix: 'a:' })),
    ];
    expect(new Set(all).size).toBe(all.length);
  });

  it('names a Cluster by its seed nodes in any order and spelling, and a Sentinel group by its name and sentinels', () => {
    const a = ioredisKeyspace(cluster([{ host: '127.0.0.1', port: 7000 }, 7001, '127.0.0.1:7002']));
    const b = ioredisKeyspace(cluster(['redis://localhost:7002', { port: 7000 }, 7001]));
    expect(a).toBe('cluster:localhost:7000,localhost:7001,localhost:7002');
    expect(b).toBe(a);
    expect(ioredisKeyspace(cluster([7000], { keyPrefix: 'x:' }))).toBe('cluster:localhost:7000 keyPrefix="x:"');
    const sentinel = ioredis({
      sentinels: [
        { host: 'sentinel-b', port: 26379 },
        { host: 'sentinel-a', port: 26379 },
      ],
      name: 'mymaster',
    });
    expect(ioredisKeyspace(sentinel)).toBe('sentinel:mymaster@sentinel-a:26379,sentinel-b:26379/0');
  });

  it('says nothing where the options do not say', () => {
    expect(nodeRedisKeyspace(nodeRedis(undefined))).toBeUndefined();
    expect(ioredisKeyspace({ status: 'ready' } as unknown as RedisClientLike)).toBeUndefined();
    expect(ioredisKeyspace(cluster([]))).toBeUndefined();
  });
});
