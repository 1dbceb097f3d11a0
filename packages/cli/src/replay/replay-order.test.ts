/**
 * @module Replay on logs as servers write them, checked against an independent implementation: a
 * generated log written at request end (each line's time is when its request arrived; lines land when
 * requests end, some minutes later) and one shuffled within the hour are replayed, and the figures must
 * equal what this file computes on its own: the lines parsed with a regular expression, sorted by time
 * with Array.prototype.sort, and decided by reference limiters written here in a few lines each (an
 * exact sliding log and GCRA), sharing no code with the CLI or the core. No public log is on this
 * machine: the generated one has the shape that matters (lines out of order by request duration, or
 * by up to an hour).
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type AccessLogOrder, generateAccessLog } from '../synthetic/access-log.js';
import { parseCandidates } from './candidates.js';
import type { ReplayReport } from './replay-report.js';
import { runReplay } from './run-replay.js';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-replay-order-'));

function write(order: AccessLogOrder): string {
  const path = join(dir, `${order}.log`);
  const lines: string[] = [];
  for (const batch of generateAccessLog({ seed: 11, durationS: 1200, visitors: 500, order })) lines.push(...batch);
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

const POLICIES = [
  '{"algorithm":"gcra","limit":10,"windowMs":1000}',
  '{"algorithm":"sliding-log","limit":100,"windowMs":60000}',
  '{"algorithm":"gcra","limit":60,"windowMs":60000,"burst":20}',
];
const candidates = parseCandidates(POLICIES);

// --- The independent reference -------------------------------------------------------------------

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const LINE = /^(\S+) \S+ \S+ \[(\d\d)\/(\w{3})\/(\d{4}):(\d\d):(\d\d):(\d\d) \+0000\]/;

/** Client and time (ms) of every line, in the order of the file; IPv6 clients by their /64 (first four groups). */
function parse(path: string): { client: string; at: number }[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => {
      const m = LINE.exec(l);
      if (m === null) throw new Error(`unparsed line ${l}`);
      const [, addr, d, mon, y, h, mi, s] = m as unknown as string[];
      const at = Date.UTC(Number(y), MONTHS.indexOf(mon as string), Number(d), Number(h), Number(mi), Number(s));
      const client = (addr as string).includes(':') ? (addr as string).split(':').slice(0, 4).join(':') : (addr as string);
      return { client, at };
    });
}

type Limiter = (client: string, at: number) => boolean;

/** Exact sliding log: admitted if fewer than `limit` admitted requests in (at - windowMs, at]. */
function slidingLog(limit: number, windowMs: number): Limiter {
  const logs = new Map<string, number[]>();
  return (client, at) => {
    const log = (logs.get(client) ?? []).filter((t) => t > at - windowMs);
    const ok = log.length < limit;
    if (ok) log.push(at);
    logs.set(client, log);
    return ok;
  };
}

/** GCRA: one request every windowMs / limit ms, `burst` at once; TAT = theoretical arrival time. */
function gcra(limit: number, windowMs: number, burst = limit): Limiter {
  const T = windowMs / limit;
  const tat = new Map<string, number>();
  return (client, at) => {
    const next = Math.max(tat.get(client) ?? at, at) + T;
    const ok = next - at <= burst * T;
    if (ok) tat.set(client, next);
    return ok;
  };
}

interface Figures {
  admitted: number;
  rejected: number;
  clientsRejected: number;
  topRejected: number[];
}

/** The figures of the lines sorted by time (stable), through fresh reference limiters. */
function reference(path: string): Figures[] {
  const sorted = parse(path).sort((a, b) => a.at - b.at);
  return [gcra(10, 1000), slidingLog(100, 60_000), gcra(60, 60_000, 20)].map((decide) => {
    const rejectedBy = new Map<string, number>();
    let admitted = 0;
    for (const r of sorted) {
      if (decide(r.client, r.at)) admitted++;
      else rejectedBy.set(r.client, (rejectedBy.get(r.client) ?? 0) + 1);
    }
    const top = [...rejectedBy.values()].sort((a, b) => b - a).slice(0, 10);
    return { admitted, rejected: sorted.length - admitted, clientsRejected: rejectedBy.size, topRejected: top };
  });
}

function figures(report: ReplayReport): Figures[] {
  return report.candidates.map((c) => ({
    admitted: c.admitted,
    rejected: c.rejected,
    clientsRejected: c.clientsRejected,
    topRejected: c.topRejected.map((r) => r.rejected),
  }));
}

// --- The checks ----------------------------------------------------------------------------------

describe('replay of a log written at request end', () => {
  const path = write('written-at-end');
  const expected = reference(path);

  it('the log is out of order and the reference rejects something in every candidate (else the check proves nothing)', () => {
    const lines = parse(path);
    let earlier = 0;
    for (let i = 1; i < lines.length; i++) if ((lines[i] as { at: number }).at < (lines[i - 1] as { at: number }).at) earlier++;
    expect(earlier).toBeGreaterThan(lines.length / 20);
    for (const f of expected) expect(f.rejected).toBeGreaterThan(0);
  });

  it('sorted whole (small input, the default), it equals the reference on the sorted lines', async () => {
    const report = await runReplay({ files: [path], candidates });
    expect(report.input.order).toMatchObject({ mode: 'sort', reason: 'auto', late: 0 });
    expect(report.input.outOfOrder).toBe(0);
    expect(figures(report)).toEqual(expected);
  });

  it('through a reorder window longer than the longest request (15 min), it equals the reference too', async () => {
    const report = await runReplay({ files: [path], candidates, sort: false, reorderWindowMs: 15 * 60_000 });
    expect(report.input.order).toMatchObject({ mode: 'window', windowMs: 900_000, late: 0, worstLateMs: 0 });
    expect(report.input.order?.maxHeld).toBeLessThan(report.input.requests);
    expect(figures(report)).toEqual(expected);
  });

  it('through the default 5 min window, the minutes-long requests are late: counted, with their lateness', async () => {
    const report = await runReplay({ files: [path], candidates, sort: false });
    const order = report.input.order;
    expect(order?.windowMs).toBe(300_000);
    expect(order?.late).toBeGreaterThan(0);
    expect(order?.late).toBeLessThan(report.input.requests / 100);
    // Requests take at most 10 min in the generator: a late one is more than the window, less than 10 min behind.
    expect(order?.worstLateMs).toBeGreaterThan(300_000);
    expect(order?.worstLateMs).toBeLessThanOrEqual(600_000);
    expect(report.input.outOfOrder).toBe(order?.late);
  });

  it('in file order (a window of 0, what replay did before), the figures are wrong: this check can fail', async () => {
    const report = await runReplay({ files: [path], candidates, sort: false, reorderWindowMs: 0 });
    expect(report.input.order?.late).toBeGreaterThan(1000);
    expect(figures(report)).not.toEqual(expected);
    expect(report.candidates[0]?.rejected).toBeGreaterThan((expected[0]?.rejected ?? 0) + 100);
  });
});

describe('replay of a log shuffled within each hour', () => {
  const path = write('shuffled-within-hour');
  const expected = reference(path);

  it('--sort (and the automatic sort of a small input) equals the reference', async () => {
    expect(figures(await runReplay({ files: [path], candidates, sort: true }))).toEqual(expected);
    const auto = await runReplay({ files: [path], candidates });
    expect(auto.input.order).toMatchObject({ mode: 'sort', reason: 'auto' });
    expect(auto.input.order?.disordered).toBeGreaterThan(auto.input.requests / 3);
    expect(figures(auto)).toEqual(expected);
  });

  it('a window too short for it says so: most requests late, the worst by most of the 20 minutes', async () => {
    const report = await runReplay({ files: [path], candidates, sort: false });
    expect(report.input.order?.late).toBeGreaterThan(report.input.requests / 4);
    expect(report.input.order?.worstLateMs).toBeGreaterThan(15 * 60_000);
  });
});
