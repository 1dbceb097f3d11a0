/**
 * @module A node-redis (v4, v5, v6) client or cluster as a StoreClient, through `sendCommand`, which
 * every version has: `sendCommand(args)` on a client, `sendCommand(firstKey, isReadonly, args)` on a
 * cluster (routed by the first key). SCRIPT LOAD goes to the connection of the master that serves the
 * key (`nodeClient(getSlotMaster(slot))`), CONFIG GET to every master's. node-redis never sends a command twice after a reconnect: the commands on the wire fail.
 */
import { keySlot } from '../cluster-slot.js';
import type { NodeRedisClientLike, NodeRedisClusterLike } from '../redis-client.js';
import { nodeRedisKeyspace } from './keyspace.js';
import { configValue, infoText, type StoreClient } from './store-client.js';

const SETTINGS = Object.freeze({ stringNumbers: false, resendsAfterReconnect: false, sentinelWithoutFailoverDetector: false });

function status(isOpen: boolean, isReady: boolean | undefined): string {
  if (isReady ?? isOpen) return 'ready';
  return isOpen ? 'reconnecting' : 'wait';
}

export function nodeRedisClient(c: NodeRedisClientLike): StoreClient {
  const host = { id: 'redis', load: (lua: string) => c.sendCommand(['SCRIPT', 'LOAD', lua]) };
  return {
    library: 'node-redis',
    isCluster: false,
    keyspace: nodeRedisKeyspace(c),
    get status() {
      return status(c.isOpen, c.isReady);
    },
    settings: SETTINGS,
    evalsha: (sha, numKeys, args) => c.sendCommand(['EVALSHA', sha, String(numKeys), ...args]),
    evalScript: (lua, numKeys, args) => c.sendCommand(['EVAL', lua, String(numKeys), ...args]),
    scriptHost: () => host,
    del: (keys) => c.sendCommand(['DEL', ...keys]),
    configGet: async (parameter) => [configValue(await c.sendCommand(['CONFIG', 'GET', parameter]), parameter)],
    info: async (section) => [{ node: 'redis', text: infoText(await c.sendCommand(['INFO', section])) }],
    nodeAddress: () => undefined,
  };
}

/** `host:port` of a node-redis cluster master, else its position. */
function masterName(master: unknown, i: number): string {
  const m = master as { host?: unknown; port?: unknown } | null;
  return typeof m?.host === 'string' && typeof m.port === 'number' ? `${m.host}:${m.port}` : `master ${i}`;
}

/** Sends `args` on the connection of one node of a cluster (`nodeClient` gives it, or a promise of it on v5+). */
async function nodeSend(cluster: NodeRedisClusterLike, node: unknown, args: string[]): Promise<unknown> {
  const client = (await cluster.nodeClient(node)) as Partial<NodeRedisClientLike> | undefined;
  if (typeof client?.sendCommand !== 'function')
    throw new TypeError('node-redis nodeClient() gave no client to send SCRIPT LOAD or CONFIG GET to');
  return client.sendCommand(args);
}

export function nodeRedisCluster(c: NodeRedisClusterLike): StoreClient {
  const nodeAddress = (key: string): string | undefined => {
    const master = c.getSlotMaster(keySlot(key));
    return master === undefined ? undefined : `${master.host}:${master.port}`;
  };
  return {
    library: 'node-redis',
    isCluster: true,
    get status() {
      return status(c.isOpen, c.isReady);
    },
    settings: SETTINGS,
    evalsha: (sha, numKeys, args) => c.sendCommand(args[0], false, ['EVALSHA', sha, String(numKeys), ...args]),
    evalScript: (lua, numKeys, args) => c.sendCommand(args[0], false, ['EVAL', lua, String(numKeys), ...args]),
    scriptHost(key) {
      const master = c.getSlotMaster(keySlot(key));
      if (master === undefined) return undefined;
      // To that master's own connection: v5 and later broadcast a SCRIPT LOAD sent through the cluster.
      return { id: `${master.host}:${master.port}`, load: (lua) => nodeSend(c, master, ['SCRIPT', 'LOAD', lua]) };
    },
    del: (keys) => c.sendCommand(keys[0], false, ['DEL', ...keys]),
    configGet: (parameter) =>
      Promise.all(c.masters.map(async (m) => configValue(await nodeSend(c, m, ['CONFIG', 'GET', parameter]), parameter))),
    info: async (section, node) => {
      const named = c.masters.map((m, i) => [m, masterName(m, i)] as const).filter(([, name]) => node === undefined || name === node);
      return Promise.all(named.map(async ([m, name]) => ({ node: name, text: infoText(await nodeSend(c, m, ['INFO', section])) })));
    },
    nodeAddress,
    masterAddresses: () => c.masters.map(masterName),
  };
}
