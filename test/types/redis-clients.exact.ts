/**
 * @module Type test, compiled by test/package/client-types.test.ts with `exactOptionalPropertyTypes` against
 * the built declarations (as a user's project sees them): every client RedisStore takes is accepted as it
 * is, with no cast, and something else is refused.
 */
import { RedisStore } from '@tollgate/core';
import { Cluster, Redis } from 'ioredis';
import { Redis as Valkey, Cluster as ValkeyCluster } from 'iovalkey';
import { createClient, createCluster } from 'redis';
import { createClient as createClient4, createCluster as createCluster4 } from 'redis4';

export const stores = [
  new RedisStore({ client: new Redis({ lazyConnect: true }) }),
  new RedisStore({ client: new Cluster([{ host: '127.0.0.1', port: 7000 }], { lazyConnect: true }) }),
  new RedisStore({ client: new Valkey({ lazyConnect: true }) }),
  new RedisStore({ client: new ValkeyCluster([{ host: '127.0.0.1', port: 7000 }], { lazyConnect: true }) }),
  new RedisStore({ client: createClient() }),
  new RedisStore({ client: createCluster({ rootNodes: [{ url: 'redis://127.0.0.1:7000' }] }) }),
  new RedisStore({ client: createClient4() }),
  new RedisStore({ client: createCluster4({ rootNodes: [{ url: 'redis://127.0.0.1:7000' }] }) }),
  new RedisStore({ client: { sendCommand: async (args: string[]) => args.length } }),
];

// @ts-expect-error a URL is not a client
export const refused = new RedisStore({ client: 'redis://localhost:6379' });
