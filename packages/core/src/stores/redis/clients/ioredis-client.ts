/**
 * @module An ioredis (5, 6) or iovalkey `Redis` or `Cluster` as a StoreClient. Commands go through the
 * client's own methods; on a Cluster, SCRIPT LOAD goes to the master that the client's slot map names
 * for the key, and CONFIG GET to every master.
 */
import { keySlot } from '../cluster-slot.js';
import type { ClusterNodeLike, RedisClientLike } from '../redis-client.js';
import { configValue, type ScriptHost, type StoreClient } from './store-client.js';

function address(node: ClusterNodeLike): string {
  return `${node.options.host}:${node.options.port}`;
}

export function ioredisClient(c: RedisClientLike): StoreClient {
  const isCluster = c.isCluster === true;
  const nodeOptions = isCluster ? c.options?.redisOptions : c.options;
  const self: ScriptHost = { id: 'redis', load: (lua) => c.script('LOAD', lua) };
  const masters = (): readonly ClusterNodeLike[] => c.nodes?.('master') ?? [];
  const nodeAddress = (key: string): string | undefined => (isCluster ? c.slots?.[keySlot(key)]?.[0] : undefined);
  const client: StoreClient = {
    library: 'ioredis',
    isCluster,
    get status() {
      return c.status;
    },
    settings: {
      stringNumbers: nodeOptions?.stringNumbers,
      // ioredis resends unless told not to: an absent option (or a Cluster without redisOptions) means its default, true.
      resendsAfterReconnect: c.options === undefined ? undefined : nodeOptions?.autoResendUnfulfilledCommands !== false,
    },
    evalsha: (sha, numKeys, args) => c.evalsha(sha, numKeys, ...args),
    evalScript: (lua, numKeys, args) => c.eval(lua, numKeys, ...args),
    scriptHost(key) {
      if (!isCluster) return self;
      const at = nodeAddress(key);
      const node = at === undefined ? undefined : masters().find((n) => address(n) === at);
      return node === undefined ? undefined : { id: at as string, load: (lua) => node.script('LOAD', lua) };
    },
    del: (keys) => c.del(...keys),
    async configGet(parameter) {
      const nodes: readonly { config?(s: 'GET', p: string): Promise<unknown> }[] = isCluster ? masters() : [c];
      return Promise.all(
        nodes.map(async (n) => (n.config === undefined ? undefined : configValue(await n.config('GET', parameter), parameter))),
      );
    },
    nodeAddress,
  };
  if (c.connect !== undefined) {
    const connect = c.connect.bind(c);
    client.connect = () => connect();
  }
  return client;
}
