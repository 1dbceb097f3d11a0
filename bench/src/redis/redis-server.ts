/**
 * @module The benchmark's own redis-server: started on a free loopback port with persistence off,
 * stopped by its pid when the section ends. Never touches a server the machine already runs.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createConnection } from 'node:net';
import { freePort } from '../free-port.js';

export interface RedisServer {
  readonly port: number;
  readonly version: string;
  stop(): Promise<void>;
}

/** `redis-server --version`'s version, or undefined when redis-server is not on PATH. */
export function redisServerVersion(): string | undefined {
  const r = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  if (r.error !== undefined || r.status !== 0) return undefined;
  return /v=(\S+)/.exec(r.stdout)?.[1] ?? r.stdout.trim();
}

function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    socket.setTimeout(500);
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (data) => {
      socket.destroy();
      resolve(data.toString().startsWith('+PONG'));
    });
    socket.on('error', () => resolve(false));
    socket.on('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

export async function startRedisServer(): Promise<RedisServer> {
  const version = redisServerVersion();
  if (version === undefined) throw new Error('redis-server is not installed (Debian: apt-get install redis-server)');
  const port = await freePort();
  const child: ChildProcess = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'yes', '--loglevel', 'warning'],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  let exited = false;
  child.on('exit', () => {
    exited = true;
  });
  const deadline = Date.now() + 10_000;
  while (!(await ping(port))) {
    if (exited) throw new Error(`redis-server exited before accepting connections on port ${port}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`redis-server did not answer PING on port ${port} within 10 s`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    port,
    version,
    stop: () =>
      new Promise<void>((resolve) => {
        if (exited) {
          resolve();
          return;
        }
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
