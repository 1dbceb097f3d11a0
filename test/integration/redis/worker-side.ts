/**
 * @module Test support, the worker's side of worker-pool.ts: one ioredis client on the suite's
 * redis-server (`REDIS_PORT`), `{ ready: true }` once it is connected, then each message but `'exit'`
 * handed to the worker's job handler; `'exit'` disconnects and ends the process.
 */
import { Redis } from 'ioredis';

/** Sends `message` to the suite. */
export const send = (message: unknown): void => {
  process.send?.(message);
};

/**
 * Connects the worker's client and runs `handle` for every job the suite sends. The documented setting:
 * commands on their way at a reconnect are not sent twice (`autoResendUnfulfilledCommands: false`).
 */
export function serveJobs<Job>(handle: (job: Job, client: Redis) => Promise<void> | void): Redis {
  const client = new Redis({ host: '127.0.0.1', port: Number(process.env.REDIS_PORT), autoResendUnfulfilledCommands: false });
  client.on('error', () => undefined);
  client.once('ready', () => send({ ready: true }));
  process.on('message', async (job: Job | 'exit') => {
    if (job === 'exit') {
      client.disconnect();
      process.exit(0);
    }
    await handle(job, client);
  });
  return client;
}
