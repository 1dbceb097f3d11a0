/**
 * @module Any other Redis client as a StoreClient, through the one function the app gives:
 * `sendCommand(args)`. The store cannot see such a client's connection state, so it counts it as ready
 * and lets the client's own errors answer; after NOSCRIPT it loads the script through the same function
 * (on a Cluster, a client that routes by the first key after the key count sends SCRIPT LOAD to any
 * node, so the store falls back to EVAL when EVALSHA meets NOSCRIPT again).
 */
import type { SendCommandClient } from '../redis-client.js';
import { configValue, infoText, type StoreClient } from './store-client.js';

/** What a StoreClient does on one node, every command through `send(args)` (a sendCommand client, a node-redis Sentinel client). */
export type SingleNodeCommands = Omit<StoreClient, 'library' | 'status' | 'settings'>;

/** The commands of a single-node StoreClient that sends each as `send(args)`. */
export function commandsOver(send: (args: string[]) => Promise<unknown>): SingleNodeCommands {
  const host = { id: 'redis', load: (lua: string) => send(['SCRIPT', 'LOAD', lua]) };
  return {
    isCluster: false,
    evalsha: (sha, numKeys, args) => send(['EVALSHA', sha, String(numKeys), ...args]),
    evalScript: (lua, numKeys, args) => send(['EVAL', lua, String(numKeys), ...args]),
    scriptHost: () => host,
    del: (keys) => send(['DEL', ...keys]),
    configGet: async (parameter) => [configValue(await send(['CONFIG', 'GET', parameter]), parameter)],
    info: async (section) => [{ node: 'redis', text: infoText(await send(['INFO', section])) }],
    nodeAddress: () => undefined,
  };
}

export function sendCommandClient(c: SendCommandClient): StoreClient {
  return {
    library: 'sendCommand',
    status: 'ready',
    settings: { stringNumbers: undefined, resendsAfterReconnect: undefined, sentinelWithoutFailoverDetector: undefined },
    ...commandsOver((args) => c.sendCommand(args)),
  };
}
