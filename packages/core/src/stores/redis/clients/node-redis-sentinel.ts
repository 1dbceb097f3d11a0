/**
 * @module A node-redis (v5, v6) Sentinel client (`createSentinel()`) as a StoreClient. It sends every
 * command to the current master through `sendCommand(isReadonly, args)` (never to a replica: every
 * command the store sends writes or must see the master's latest state) and follows a failover by
 * itself: on the sentinels' `+switch-master` it moves its connections to the new master. SCRIPT LOAD,
 * CONFIG GET and INFO go to the master too.
 */
import type { NodeRedisSentinelLike } from '../redis-client.js';
import { configValue, infoText, type StoreClient } from './store-client.js';

const SETTINGS = Object.freeze({ stringNumbers: false, resendsAfterReconnect: false });

export function nodeRedisSentinel(c: NodeRedisSentinelLike): StoreClient {
  const send = (args: string[]): Promise<unknown> => c.sendCommand(false, args);
  const host = { id: 'redis', load: (lua: string) => send(['SCRIPT', 'LOAD', lua]) };
  return {
    library: 'node-redis',
    isCluster: false,
    get status() {
      if (c.isReady) return 'ready';
      return c.isOpen ? 'reconnecting' : 'wait';
    },
    settings: SETTINGS,
    evalsha: (sha, numKeys, args) => send(['EVALSHA', sha, String(numKeys), ...args]),
    evalScript: (lua, numKeys, args) => send(['EVAL', lua, String(numKeys), ...args]),
    scriptHost: () => host,
    del: (keys) => send(['DEL', ...keys]),
    configGet: async (parameter) => [configValue(await send(['CONFIG', 'GET', parameter]), parameter)],
    info: async (section) => [{ node: 'redis', text: infoText(await send(['INFO', section])) }],
    nodeAddress: () => undefined,
  };
}
