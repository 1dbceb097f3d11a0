/**
 * @module An open-loop load generator: sends `rps` requests per second for `durationMs` whatever the
 * answers (so a slow server sees its queue grow, as with real users), then waits for the stragglers,
 * and reports latency percentiles by status.
 */
import { Agent, request } from 'node:http';

export interface LoadOptions {
  readonly port: number;
  readonly path: string;
  readonly rps: number;
  readonly durationMs: number;
  readonly headers?: Record<string, string>;
  /** Requests unanswered this long after the run count as timeouts. Defaults to 10 s. */
  readonly drainMs?: number;
}

export interface LoadReport {
  readonly sent: number;
  /** Count by status ('timeout' and 'error' too). */
  readonly byStatus: Record<string, number>;
  /** Latency (ms) percentiles of the 200s. */
  readonly ok: { readonly p50: number; readonly p99: number; readonly max: number };
  /** p99 of the refusals (503), ms: how fast the server says no. */
  readonly refusedP99: number;
  /** 200s per second, from the first request sent to the last answer. */
  readonly goodput: number;
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}

export async function runLoad(o: LoadOptions): Promise<LoadReport> {
  const agent = new Agent({ keepAlive: true, maxSockets: 2048 });
  const ok: number[] = [];
  const refused: number[] = [];
  const byStatus: Record<string, number> = {};
  const count = (k: string): void => {
    byStatus[k] = (byStatus[k] ?? 0) + 1;
  };
  const inflight = new Set<Promise<void>>();
  let sent = 0;
  const start = performance.now();
  const fire = (): void => {
    sent += 1;
    const t0 = performance.now();
    const p = new Promise<void>((resolve) => {
      const req = request({ host: '127.0.0.1', port: o.port, path: o.path, headers: o.headers, agent }, (res) => {
        res.resume();
        res.on('end', () => {
          const ms = performance.now() - t0;
          const s = res.statusCode ?? 0;
          count(String(s));
          if (s === 200) ok.push(ms);
          else if (s === 503) refused.push(ms);
          resolve();
        });
      });
      req.on('error', () => {
        count('error');
        resolve();
      });
      req.end();
    });
    inflight.add(p);
    void p.then(() => inflight.delete(p));
  };
  await new Promise<void>((resolve) => {
    const tick = setInterval(() => {
      const due = Math.floor(((performance.now() - start) / 1000) * o.rps);
      while (sent < due) fire();
      if (performance.now() - start >= o.durationMs) {
        clearInterval(tick);
        resolve();
      }
    }, 5);
  });
  const drained = await Promise.race([
    Promise.all(inflight).then(() => true),
    new Promise<boolean>((r) => setTimeout(() => r(false), o.drainMs ?? 10_000)),
  ]);
  if (!drained) byStatus.timeout = inflight.size;
  agent.destroy();
  ok.sort((a, b) => a - b);
  refused.sort((a, b) => a - b);
  return {
    sent,
    byStatus,
    ok: { p50: Math.round(percentile(ok, 50)), p99: Math.round(percentile(ok, 99)), max: Math.round(ok.at(-1) ?? 0) },
    refusedP99: Math.round(percentile(refused, 99)),
    goodput: Math.round(ok.length / ((performance.now() - start) / 1000)),
  };
}
