/**
 * @module The two demonstrations, as functions the command and the test share:
 * - `compareShedding`: the same overload (open loop, twice the pool's capacity) against the protected
 *   app and its unprotected twin; the protected one keeps admitted latency low and says 503 fast.
 * - `burstExports`: one user starts six exports at once, another user one: the first user has at
 *   most two running (two more wait, two get 429), the second is not affected.
 */
import type { AddressInfo } from 'node:net';
import { type App, type AppOptions, createApp } from './app.js';
import { type LoadReport, runLoad } from './load.js';

export async function listen(app: App): Promise<number> {
  await new Promise<void>((resolve) => app.server.listen(0, '127.0.0.1', resolve));
  return (app.server.address() as AddressInfo).port;
}

export function close(app: App): Promise<void> {
  app.server.closeAllConnections();
  return new Promise((resolve) => app.server.close(() => resolve()));
}

export interface Comparison {
  readonly protectedRun: LoadReport;
  readonly unprotectedRun: LoadReport;
  /** The shedder's limit at the end of the protected run. */
  readonly finalLimit: number;
}

/** Pool of 4 x 20 ms = 200 requests/s of capacity; offered `rps` (default 400) for `durationMs`. */
export async function compareShedding(durationMs = 3_000, rps = 400, app: AppOptions = {}): Promise<Comparison> {
  const results: LoadReport[] = [];
  let finalLimit = 0;
  for (const shed of [true, false]) {
    const a = createApp({ ...app, shed });
    const port = await listen(a);
    results.push(await runLoad({ port, path: '/work', rps, durationMs }));
    finalLimit = shed ? (a.state()?.limit ?? 0) : finalLimit;
    await close(a);
  }
  return { protectedRun: results[0] as LoadReport, unprotectedRun: results[1] as LoadReport, finalLimit };
}

export interface ExportBurst {
  /** Statuses of alice's six exports, in order sent. */
  readonly alice: number[];
  readonly bob: number;
  /** Most exports of one user running at once. */
  readonly peak: number;
}

export async function burstExports(): Promise<ExportBurst> {
  const a = createApp({ exportMs: 300 });
  const port = await listen(a);
  const get = (user: string) =>
    fetch(`http://127.0.0.1:${port}/export`, { headers: { 'x-user': user } }).then(async (r) => {
      await r.arrayBuffer();
      return r.status;
    });
  const alice = await Promise.all([0, 1, 2, 3, 4, 5].map(() => get('alice')));
  const bob = await get('bob');
  const peak = a.exports.peak;
  await close(a);
  return { alice, bob, peak };
}
