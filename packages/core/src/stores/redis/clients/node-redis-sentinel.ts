/**
 * @module A node-redis (v5, v6) Sentinel client (`createSentinel()`) as a StoreClient. It sends every
 * command to the current master through `sendCommand(isReadonly, args)` (never to a replica: every
 * command the store sends writes or must see the master's latest state) and follows a failover by
 * itself: on the sentinels' `+switch-master` it moves its connections to the new master. SCRIPT LOAD,
 * CONFIG GET and INFO go to the master too.
 */
import type { NodeRedisSentinelLike } from '../redis-client.js';
import { commandsOver } from './send-command-client.js';
import type { StoreClient } from './store-client.js';

const SETTINGS = Object.freeze({ stringNumbers: false, resendsAfterReconnect: false, sentinelWithoutFailoverDetector: false });

export function nodeRedisSentinel(c: NodeRedisSentinelLike): StoreClient {
  return {
    library: 'node-redis',
    get status() {
      if (c.isReady) return 'ready';
      return c.isOpen ? 'reconnecting' : 'wait';
    },
    settings: SETTINGS,
    ...commandsOver((args) => c.sendCommand(false, args)),
  };
}
