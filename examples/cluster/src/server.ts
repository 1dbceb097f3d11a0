/**
 * @module Starts the example against the cluster nodes in REDIS_CLUSTER (default the three nodes that
 * start-cluster.sh starts: 127.0.0.1:7000-7002) on PORT (default 3001).
 */
import { Cluster } from 'ioredis';
import { createApp } from './app.js';

const nodes = (process.env.REDIS_CLUSTER ?? '127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002').split(',').map((hostPort) => {
  const [host, port] = hostPort.split(':');
  return { host: host ?? '127.0.0.1', port: Number(port) };
});
const port = Number(process.env.PORT ?? 3001);
// No resending after a reconnect: Redis may already have run those calls (WRN_RL_CLIENT_RESENDS).
const redis = new Cluster(nodes, { enableOfflineQueue: false, redisOptions: { autoResendUnfulfilledCommands: false } });
redis.on('error', (error: Error) => console.error(`redis cluster: ${error.message}`));

const app = await createApp({ redis });
await app.listen({ port, host: '127.0.0.1' });
console.log(`listening on http://127.0.0.1:${port} (Redis Cluster at ${nodes.map((n) => `${n.host}:${n.port}`).join(', ')})`);
