/**
 * @module Test support: child processes that each run a limiter against one redis-server, for the suites
 * that race several processes on one key (atomicity, stress). A worker answers `{ ready: true }` once its
 * client is connected, then one message per job; `'exit'` ends it.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The next message of `worker`; rejects if it exits first. */
export function nextMessage<T>(worker: ChildProcess): Promise<T> {
  return new Promise((resolve, reject) => {
    worker.once('message', (m) => resolve(m as T));
    worker.once('exit', (code) => reject(new Error(`worker exited with ${code}`)));
  });
}

/** Forks `count` workers of `script` (a URL beside the suite) with `env`, and waits until each is ready. */
export async function startWorkers(script: URL, count: number, env: Readonly<Record<string, string>>): Promise<ChildProcess[]> {
  const path = fileURLToPath(script);
  const workers = Array.from({ length: count }, () =>
    fork(path, [], {
      execArgv: ['--import', 'tsx', '--conditions=@tollgate/source'],
      env: { ...process.env, ...env },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    }),
  );
  await Promise.all(workers.map((w) => nextMessage<{ ready: true }>(w)));
  return workers;
}

/** Asks every worker to exit. */
export function stopWorkers(workers: readonly ChildProcess[]): void {
  for (const w of workers) w.send('exit');
}
