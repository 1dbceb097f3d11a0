/**
 * @module Synthetic load on loopback, bounded in rate, concurrency and time: a crowd of well-behaved
 * clients, one that hammers the items route, a searcher that sends deep (costly) searches, and a client
 * whose exports get shaped, each opening with a burst, so every panel of the dashboard has something to
 * show.
 */

export interface LoadOptions {
  /** Base URL of the app; must be a loopback address. */
  readonly url: string;
  /** How long to run. Defaults to 60 s; at most 10 minutes. */
  readonly durationMs?: number;
  /** Requests per second, all clients together. Defaults to 200; at most 1000. */
  readonly rate?: number;
  /** Stops early when aborted. */
  readonly signal?: AbortSignal;
}

export interface LoadSummary {
  readonly sent: number;
  readonly byStatus: Readonly<Record<string, number>>;
}

const MAX_DURATION_MS = 600_000;
const MAX_RATE = 1000;
const IN_FLIGHT = 8;
/**
 * What the load opens with, at once, whatever rate this machine then reaches (on a slow one the steady mix
 * may stay under every limit): the hammer asks for more items than its burst (20), the exporter for more
 * exports than the shaper's (5), the analyst for deep searches worth 20 (the shadow candidate holds 15),
 * so rejections, hot keys, shaping delays and shadow disagreement show from the first second.
 */
const OPENING_BURST: readonly { path: string; client: string; count: number }[] = [
  { path: '/api/items/1', client: 'hammer', count: 30 },
  { path: '/api/export', client: 'exporter', count: 8 },
  { path: '/api/search?deep=1', client: 'analyst', count: 4 },
];

/** The next request of the mix: path and client. */
function pick(i: number): { path: string; client: string } {
  const r = i % 20;
  if (r < 8) return { path: `/api/items/${i % 97}`, client: 'hammer' };
  if (r < 14) return { path: `/api/items/${i % 97}`, client: `user-${i % 50}` };
  if (r < 16) return { path: '/api/search', client: `user-${i % 50}` };
  if (r < 19) return { path: '/api/search?deep=1', client: 'analyst' };
  return { path: '/api/export', client: 'exporter' };
}

function isLoopback(url: string): boolean {
  const host = new URL(url).hostname;
  return host === '127.0.0.1' || host === 'localhost' || host === '[::1]';
}

/** The rate and duration a load runs at: the ones asked (or the defaults), within MAX_RATE and MAX_DURATION_MS; a RangeError for one that is not a positive number. */
export function boundedLoad(rate: number | undefined, durationMs: number | undefined): { rate: number; durationMs: number } {
  const positive = (v: number | undefined, name: string, otherwise: number) => {
    if (v === undefined) return otherwise;
    if (!Number.isFinite(v) || v <= 0) throw new RangeError(`${name} must be a positive number; received ${v}`);
    return v;
  };
  return {
    rate: Math.min(positive(rate, 'RATE', 200), MAX_RATE),
    durationMs: Math.min(positive(durationMs, 'DURATION', 60_000), MAX_DURATION_MS),
  };
}

export async function runLoad(options: LoadOptions): Promise<LoadSummary> {
  if (!isLoopback(options.url)) throw new RangeError(`synthetic load only targets loopback addresses; received ${options.url}`);
  const { rate, durationMs } = boundedLoad(options.rate, options.durationMs);
  const intervalMs = 1000 / rate;
  const byStatus: Record<string, number> = {};
  const end = Date.now() + durationMs;
  let next = 0;
  let sent = 0;
  const send = async (path: string, client: string): Promise<void> => {
    try {
      const res = await fetch(`${options.url}${path}`, { headers: { 'x-client': client } });
      await res.arrayBuffer();
      byStatus[res.status] = (byStatus[res.status] ?? 0) + 1;
    } catch {
      byStatus.error = (byStatus.error ?? 0) + 1;
    }
    sent += 1;
  };
  const burst = Promise.all(OPENING_BURST.flatMap(({ path, client, count }) => Array.from({ length: count }, () => send(path, client))));
  const worker = async (): Promise<void> => {
    while (Date.now() < end && options.signal?.aborted !== true) {
      const i = next++;
      const due = end - durationMs + i * intervalMs;
      const wait = due - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      if (Date.now() >= end) return;
      const { path, client } = pick(i);
      await send(path, client);
    }
  };
  await Promise.all([burst, ...Array.from({ length: IN_FLIGHT }, worker)]);
  return { sent, byStatus };
}
