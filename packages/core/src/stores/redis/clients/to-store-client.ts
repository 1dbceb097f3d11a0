/**
 * @module Recognises the client the app passed to `new RedisStore({ client })` by its shape, never by
 * its class (so no Redis library is imported): ioredis and iovalkey have `status` and `evalsha`;
 * a node-redis cluster has `getSlotMaster`; a node-redis Sentinel client has `getMasterNode` and
 * `getSentinelNode`; a node-redis client has a boolean `isOpen` and
 * `sendCommand`; anything else with a `sendCommand` function is sent commands through it.
 */
import type {
  NodeRedisClientLike,
  NodeRedisClusterLike,
  NodeRedisSentinelLike,
  RedisClientLike,
  SendCommandClient,
} from '../redis-client.js';
import { connectionWatch } from './connection-events.js';
import { ioredisClient } from './ioredis-client.js';
import { nodeRedisClient, nodeRedisCluster } from './node-redis-client.js';
import { nodeRedisSentinel } from './node-redis-sentinel.js';
import { sendCommandClient } from './send-command-client.js';
import type { StoreClient } from './store-client.js';

type Shape = Record<string, unknown>;

function isIoredis(c: Shape): boolean {
  return (
    typeof c.status === 'string' &&
    typeof c.evalsha === 'function' &&
    typeof c.eval === 'function' &&
    typeof c.script === 'function' &&
    typeof c.del === 'function'
  );
}

/** The StoreClient for `value`, or undefined when it is no client RedisStore knows how to use. */
export function toStoreClient(value: unknown): StoreClient | undefined {
  const client = recognise(value);
  if (client !== undefined && client.watch === undefined) {
    const watch = connectionWatch(value, client);
    if (watch !== undefined) client.watch = watch;
  }
  return client;
}

function recognise(value: unknown): StoreClient | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  // Read members through the prototype chain: the clients keep their methods on their classes.
  const c = value as Shape;
  if (isIoredis(c)) return ioredisClient(value as RedisClientLike);
  if (typeof c.sendCommand !== 'function') return undefined;
  if (typeof c.getSlotMaster === 'function' && typeof c.nodeClient === 'function' && Array.isArray(c.masters)) {
    return nodeRedisCluster(value as NodeRedisClusterLike);
  }
  if (typeof c.getMasterNode === 'function' && typeof c.getSentinelNode === 'function') {
    return nodeRedisSentinel(value as NodeRedisSentinelLike);
  }
  if (typeof c.isOpen === 'boolean' && typeof c.isReady === 'boolean') return nodeRedisClient(value as NodeRedisClientLike);
  return sendCommandClient(value as SendCommandClient);
}
