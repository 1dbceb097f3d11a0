/**
 * @module An ioredis (5, 6) or iovalkey `Redis` or `Cluster` as a StoreClient. Commands go through the
 * client's own methods; on a Cluster, SCRIPT LOAD goes to the master that the client's slot map names
 * for the key, and CONFIG GET to every master.
 *
 * One system call per tick, not per call: ioredis writes each command to its socket at once, one
 * `write` each, and under load that system call is most of what a check costs the process. So when an
 * EVALSHA leaves while others still wait for their replies (`busy`), the store corks the connection's
 * socket until the end of the tick (`process.nextTick`): the calls that the same burst of replies sets
 * off (the next request of every caller that was waiting) leave together in one `writev`. The call that
 * corks is written at once, and a lone call (nothing else pending) corks nothing, so no call waits for
 * another; order and replies are unchanged, and whatever else the app sends in that tick joins the
 * batch. node-redis batches its writes the same way by itself. Not on a Cluster, whose calls go out on
 * the socket of each node.
 */
import { keySlot } from '../cluster-slot.js';
import type { ClusterNodeLike, CorkableLike, RedisClientLike } from '../redis-client.js';
import { ioredisKeyspace } from './keyspace.js';
import { configValue, infoText, type ScriptHost, type StoreClient } from './store-client.js';

function address(node: ClusterNodeLike): string {
  return `${node.options.host}:${node.options.port}`;
}

export function ioredisClient(c: RedisClientLike): StoreClient {
  const isCluster = c.isCluster === true;
  const nodeOptions = isCluster ? c.options?.redisOptions : c.options;
  const self: ScriptHost = { id: 'redis', load: (lua) => c.script('LOAD', lua) };
  const masters = (): readonly ClusterNodeLike[] => c.nodes?.('master') ?? [];
  const nodeAddress = (key: string): string | undefined => (isCluster ? c.slots?.[keySlot(key)]?.[0] : undefined);
  /** The socket corked until the end of this tick, if any. */
  let corked: CorkableLike | undefined;
  const uncork = () => {
    const s = corked;
    corked = undefined;
    s?.uncork();
  };
  const cork = () => {
    const s = c.stream;
    if (s === undefined || typeof s.cork !== 'function' || typeof s.uncork !== 'function') return;
    s.cork();
    corked = s;
    process.nextTick(uncork);
  };
  const client: StoreClient = {
    library: 'ioredis',
    isCluster,
    keyspace: ioredisKeyspace(c),
    get status() {
      return c.status;
    },
    settings: {
      stringNumbers: nodeOptions?.stringNumbers,
      // ioredis resends unless told not to: an absent option (or a Cluster without redisOptions) means its default, true.
      resendsAfterReconnect: c.options === undefined ? undefined : nodeOptions?.autoResendUnfulfilledCommands !== false,
      sentinelWithoutFailoverDetector:
        c.options === undefined ? undefined : !isCluster && (c.options.sentinels?.length ?? 0) > 0 && c.options.failoverDetector !== true,
    },
    evalsha: (sha, numKeys, args, busy) => {
      const reply = c.evalsha(sha, numKeys, ...args);
      if (busy === true && corked === undefined && !isCluster) cork();
      return reply;
    },
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
    info(section, node) {
      const all = (): readonly ClusterNodeLike[] => masters().filter((n) => node === undefined || address(n) === node);
      const nodes: readonly (ClusterNodeLike | RedisClientLike)[] = isCluster ? all() : [c];
      return Promise.all(
        nodes.map(async (n) => ({
          node: isCluster ? address(n as ClusterNodeLike) : 'redis',
          text: n.info === undefined ? undefined : infoText(await n.info(section)),
        })),
      );
    },
    nodeAddress,
    masterAddresses: () => masters().map(address),
  };
  if (c.connect !== undefined) {
    const connect = c.connect.bind(c);
    client.connect = () => connect();
  }
  if (isCluster) {
    client.nodesConnecting = () => {
      let connecting = false;
      for (const node of masters()) {
        if (node.status === 'wait') node.connect?.().catch(() => undefined);
        if (node.status !== undefined && node.status !== 'ready') connecting = true;
      }
      return connecting;
    };
  }
  return client;
}
