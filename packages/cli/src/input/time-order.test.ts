/**
 * @module Putting requests back in time order: the reorder window on random disorder (a permutation out,
 * sorted and stable when the window covers the worst lateness, late requests counted when it does not),
 * the whole sort, the size rule (gzip counted by the text it inflates to), and durations.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { constants, gunzipSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { parseCandidates } from '../replay/candidates.js';
import { runReplay } from '../replay/run-replay.js';
import { createRandom } from '../synthetic/seeded-random.js';
import type { LogRequest } from './request-parser.js';
import {
  AUTO_SORT_BYTES,
  createOrderStats,
  filesToSortWhole,
  formatDuration,
  inTimeOrder,
  type OrderStats,
  parseDuration,
  textBytes,
} from './time-order.js';

async function reorder(requests: LogRequest[], stats: OrderStats, batch = 7, autoSortCap?: number): Promise<LogRequest[]> {
  async function* source(): AsyncGenerator<LogRequest[]> {
    for (let i = 0; i < requests.length; i += batch) yield requests.slice(i, i + batch);
  }
  const out: LogRequest[] = [];
  for await (const b of inTimeOrder(source(), stats, autoSortCap)) out.push(...b);
  return out;
}

/** Requests at 0..n s, each delayed in the file by up to `maxDelay` ms (as written at request end); key = read order. */
function disordered(seed: number, n: number, maxDelay: number): LogRequest[] {
  const r = createRandom(seed);
  return Array.from({ length: n }, (_, i) => ({ at: Math.floor(i * 37 + r.next() * 50), end: 0, i }))
    .map((x) => ({ ...x, end: x.at + (r.next() < 0.1 ? r.next() * maxDelay : r.next() * 20) }))
    .sort((a, b) => a.end - b.end)
    .map((x, order) => ({ at: x.at, key: `k${order}`, cost: 1 }));
}

/** The most any request is behind the newest read before it. */
function worstLateness(requests: readonly LogRequest[]): number {
  let newest = Number.NEGATIVE_INFINITY;
  let worst = 0;
  for (const r of requests) {
    worst = Math.max(worst, newest - r.at);
    newest = Math.max(newest, r.at);
  }
  return worst;
}

const byTimeThenReadOrder = (a: LogRequest, b: LogRequest) => a.at - b.at || Number(a.key.slice(1)) - Number(b.key.slice(1));

describe('the reorder window', () => {
  it.each([1, 2, 3, 4, 5])('on random disorder (seed %i): sorted and stable when it covers the worst lateness', async (seed) => {
    const input = disordered(seed, 2000, 5000);
    const worst = worstLateness(input);
    expect(worst).toBeGreaterThan(1000);
    const stats = createOrderStats('window', 'flag', worst);
    const out = await reorder(input, stats);
    expect(out).toEqual([...input].sort(byTimeThenReadOrder));
    expect(stats).toMatchObject({ late: 0, worstLateMs: 0 });
    expect(stats.disordered).toBe(input.filter((r, i) => i > 0 && r.at < (input[i - 1] as LogRequest).at).length);
    expect(stats.maxHeld).toBeLessThan(input.length);
  });

  it.each([1, 2, 3])('too short (seed %i): every request comes out once, late ones counted, the rest in order', async (seed) => {
    const input = disordered(seed, 2000, 5000);
    const stats = createOrderStats('window', 'flag', 500);
    const out = await reorder(input, stats);
    expect([...out].sort(byTimeThenReadOrder)).toEqual([...input].sort(byTimeThenReadOrder));
    // A request is out of order in the output exactly when it was late.
    let backwards = 0;
    for (let i = 1; i < out.length; i++) if ((out[i] as LogRequest).at < (out[i - 1] as LogRequest).at) backwards++;
    expect(stats.late).toBeGreaterThan(0);
    expect(backwards).toBeLessThanOrEqual(stats.late);
    expect(stats.worstLateMs).toBeGreaterThan(500);
    expect(stats.worstLateMs).toBeLessThanOrEqual(worstLateness(input));
    // And the worst lateness is a window that holds them all.
    const again = createOrderStats('window', 'flag', stats.worstLateMs);
    await reorder(input, again);
    expect(again.late).toBe(0);
  });

  it('passes a sorted input straight through with a window of 0, holding nothing', async () => {
    const input = Array.from({ length: 50 }, (_, i) => ({ at: Math.floor(i / 3) * 10, key: `k${i}`, cost: 1 }));
    const stats = createOrderStats('window', 'flag', 0);
    expect(await reorder(input, stats)).toEqual(input);
    expect(stats).toMatchObject({ late: 0, maxHeld: 0, disordered: 0 });
  });

  it('a line from a host with a wrong clock, far ahead, does not move the window: nothing after it is late', async () => {
    // One request a second, some written 30 s late; line 11 stamped a year ahead.
    const input = Array.from({ length: 600 }, (_, i) => ({ at: i * 1000 - (i % 50 === 7 ? 30_000 : 0), key: `k${i}`, cost: 1 }));
    input.splice(10, 0, { at: 365 * 86_400_000, key: 'k-future', cost: 1 });
    const stats = createOrderStats('window', 'flag', 300_000);
    const out = await reorder(input, stats);
    expect(stats).toMatchObject({ late: 0, worstLateMs: 0 });
    expect(out.map((r) => r.at)).toEqual(input.map((r) => r.at).sort((a, b) => a - b));
    // The window still bounds what is held: one window of traffic, the far line, and the lines a jump waits for.
    expect(stats.maxHeld).toBeLessThan(330);
  });

  it('the wrong clock on the first line does not place the window: nothing after it is late', async () => {
    const input = [3_600_000, 1000, 0, 3000, 2000].map((at, i) => ({ at, key: `k${i}`, cost: 1 }));
    const stats = createOrderStats('window', 'flag', 300_000);
    const out = await reorder(input, stats, 1);
    expect(stats).toMatchObject({ late: 0, worstLateMs: 0 });
    expect(out.map((r) => r.at)).toEqual([0, 1000, 2000, 3000, 3_600_000]);
    // The same with the far line first of a longer log, disordered within the window.
    const long = [{ at: 365 * 86_400_000, key: 'k-future', cost: 1 }, ...disordered(7, 600, 20_000)];
    const longStats = createOrderStats('window', 'flag', 60_000);
    const longOut = await reorder(long, longStats);
    expect(longStats).toMatchObject({ late: 0 });
    expect(longOut.map((r) => r.at)).toEqual(long.map((r) => r.at).sort((a, b) => a - b));
  });

  it('a real jump (a pause in traffic, then more lines) moves the window once three lines agree', async () => {
    const before = Array.from({ length: 100 }, (_, i) => ({ at: i * 1000, key: `a${i}`, cost: 1 }));
    const after = Array.from({ length: 100 }, (_, i) => ({ at: 7_200_000 + i * 1000, key: `b${i}`, cost: 1 }));
    const stats = createOrderStats('window', 'flag', 60_000);
    const out = await reorder([...before, ...after], stats, 1);
    expect(out).toEqual([...before, ...after]);
    expect(stats).toMatchObject({ late: 0 });
    // After the pause the first segment left as the third line agreed: never both segments held.
    expect(stats.maxHeld).toBeLessThanOrEqual(64);
    // And a line from before the pause that comes after it is late, measured from the traffic, not a lone line.
    const lateStats = createOrderStats('window', 'flag', 60_000);
    await reorder([...before, ...after.slice(0, 10), { at: 50_000, key: 'x', cost: 1 }], lateStats, 1);
    expect(lateStats).toMatchObject({ late: 1, worstLateMs: 7_209_000 - 50_000 });
  });

  it('past 1,024 sparse lines (each more than a window after the last), busy traffic still moves the window', async () => {
    // A quiet start, a request every 2 minutes (90 s window: no three agree), then 100 requests a second.
    // Before: the far-ahead list was full, each new line dropped before the check: nothing ever left
    // until the end, and every one of the 21,100 lines was held.
    const sparse = Array.from({ length: 1100 }, (_, i) => ({ at: i * 120_000, key: `s${i}`, cost: 1 }));
    const start = 1100 * 120_000;
    const dense = Array.from({ length: 20_000 }, (_, i) => ({ at: start + i * 10, key: `d${i}`, cost: 1 }));
    const stats = createOrderStats('window', 'flag', 90_000);
    const out = await reorder([...sparse, ...dense], stats, 100);
    expect(out).toEqual([...sparse, ...dense]);
    expect(stats).toMatchObject({ late: 0 });
    // The sparse lines (held until traffic agrees) and one 90 s window of the busy traffic (9,000 lines), no more.
    expect(stats.maxHeld).toBeLessThanOrEqual(1100 + 9000 + 100);
  });

  it('sorted whole by size, a file that holds more than the cap goes on through the default window', async () => {
    const input = disordered(4, 3000, 5000);
    const stats = createOrderStats('sort', 'auto', null);
    const out = await reorder(input, stats, 7, 1000);
    expect(stats).toMatchObject({ mode: 'window', reason: 'auto', windowMs: 300_000, late: 0 });
    expect(out).toEqual([...input].sort(byTimeThenReadOrder));
    // --sort (a flag) has no cap.
    const flagged = createOrderStats('sort', 'flag', null);
    await reorder(input, flagged, 7, 1000);
    expect(flagged).toMatchObject({ mode: 'sort', maxHeld: 3000 });
  });

  it('a file over the cap goes into the window in time order: what it held, shuffled over an hour, is not late', async () => {
    // Two hosts' hours joined: the first 1,000 requests (the cap) over an hour newest first, then 500 after them.
    const held = Array.from({ length: 1000 }, (_, i) => ({ at: (999 - i) * 3600, key: `k${i}`, cost: 1 }));
    const after = Array.from({ length: 500 }, (_, i) => ({ at: 3_600_000 + i * 10, key: `k${1000 + i}`, cost: 1 }));
    const input = [...held, ...after];
    const stats = createOrderStats('sort', 'auto', null);
    const out = await reorder(input, stats, 7, 1000);
    // Before: the held requests went into the window in file order, and 916 of them were late.
    expect(stats).toMatchObject({ mode: 'window', late: 0 });
    expect(stats.maxHeld).toBeGreaterThanOrEqual(1000);
    expect(out).toEqual([...input].sort(byTimeThenReadOrder));
  });

  it.each(['big', 'small'])(
    'a small file opened beside one over the cap is still sorted whole, whichever is read first (%s first)',
    async (read) => {
      // The second file is newest first over 20 minutes: a 5-minute window makes most of it late.
      const big = disordered(5, 3000, 5000);
      const small = Array.from({ length: 600 }, (_, i) => ({ at: (599 - i) * 2000, key: 'z', cost: 1 }));
      const stats = createOrderStats('sort', 'auto', null);
      const source = (requests: LogRequest[]) =>
        (async function* () {
          for (let i = 0; i < requests.length; i += 7) yield requests.slice(i, i + 7);
        })();
      // Both opened first (runReplay maps the files), then one read whole before the other, as mergeByTime does.
      const ofBig = inTimeOrder(source(big), stats, 1000);
      const ofSmall = inTimeOrder(source(small), stats, 1000);
      const out: LogRequest[] = [];
      const readSmall = async () => {
        for await (const b of ofSmall) out.push(...b);
      };
      if (read === 'small') await readSmall();
      for await (const _ of ofBig);
      expect(stats.mode).toBe('window');
      if (read === 'big') await readSmall();
      // Before: read after the big one, the small file went through the window it turned on (449 late in a probe).
      expect(stats.late).toBe(0);
      expect(out).toEqual([...small].sort(byTimeThenReadOrder));
    },
  );

  it('sorts whole, stable, holding everything', async () => {
    const input = disordered(9, 500, 60_000);
    const stats = createOrderStats('sort', 'flag', null);
    expect(await reorder(input, stats)).toEqual([...input].sort(byTimeThenReadOrder));
    expect(stats).toMatchObject({ mode: 'sort', windowMs: null, late: 0, maxHeld: 500 });
  });
});

describe('what is small enough to sort whole', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-order-'));
  it('counts a gzip file by the text it inflates to', async () => {
    const text = 'x'.repeat(100_000);
    const plain = join(dir, 'a.log');
    const gz = join(dir, 'a.log.gz');
    writeFileSync(plain, text);
    writeFileSync(gz, gzipSync(text));
    expect(await textBytes(plain)).toBe(100_000);
    expect(await textBytes(gz)).toBe(100_000);
    expect((await filesToSortWhole([plain, gz], 200_000)).every(Boolean)).toBe(true);
    expect((await filesToSortWhole([plain, gz], 199_999)).every(Boolean)).toBe(false);
    // Counted only up to what is asked: past it, within one chunk.
    const counted = await textBytes(gz, 1_000);
    expect(counted).toBeGreaterThan(1_000);
    expect(counted).toBeLessThanOrEqual(100_000);
  });

  it('a gzip file of several members counts them all, not its trailer (the last member only)', async () => {
    const multi = join(dir, 'multi.log.gz');
    writeFileSync(multi, Buffer.concat([gzipSync('a'.repeat(150_000)), gzipSync('b'.repeat(1_000))]));
    // Before: 1,000 bytes (the trailer), and sorted whole under a limit of 100,000.
    expect(await textBytes(multi)).toBe(151_000);
    expect(await filesToSortWhole([multi], 100_000)).toEqual([false]);
    expect(await filesToSortWhole([multi], 151_000)).toEqual([true]);
  });

  it('a gzip file cut short, whose last bytes are data and not a trailer, counts the text before the cut', async () => {
    const random = createRandom(7);
    const lines = Array.from({ length: 20_000 }, (_, i) => `${1_700_000_000_000 + i},client-${random.int(0, 4_999)}`);
    const whole = gzipSync(lines.join('\n'));
    const cut = join(dir, 'cut.csv.gz');
    const bytes = whole.subarray(0, whole.length - 100);
    writeFileSync(cut, bytes);
    const before = gunzipSync(bytes, { finishFlush: constants.Z_SYNC_FLUSH }).length;
    expect(await textBytes(cut)).toBe(before);
    expect(await filesToSortWhole([cut])).toEqual([true]);
  });

  it('a gzip file cut short whose last 4 bytes read as more than the limit is sorted whole when its text is small: 0 late', async () => {
    // 150,000 requests, 1% of them stamped 8 minutes before they were written (more than the 5 min window).
    const random = createRandom(11);
    const t0 = 1_700_000_000_000;
    const lines = Array.from({ length: 150_000 }, (_, i) => {
      const at = t0 + i * 10 - (random.next() < 0.01 ? 480_000 : 0);
      return `${at},client-${random.int(0, 49)}`;
    });
    const whole = gzipSync(lines.join('\n'));
    // The first cut, from 5,000 bytes short, whose last 4 bytes the old reading took for a size over the
    // limit but within what deflate can inflate to (1,032 to 1), so it was not seen as cut short.
    let end = whole.length - 5_000;
    const isize = (n: number) => whole.readUInt32LE(n - 4);
    while (isize(end) <= AUTO_SORT_BYTES || isize(end) > end * 1032) end -= 1;
    const cut = join(dir, 'slowcut.csv.gz');
    writeFileSync(cut, whole.subarray(0, end));
    const text = gunzipSync(whole.subarray(0, end), { finishFlush: constants.Z_SYNC_FLUSH }).toString();
    const plain = join(dir, 'slowcut.csv');
    writeFileSync(plain, text.slice(0, text.lastIndexOf('\n')));
    const candidates = parseCandidates(['{"algorithm":"sliding-log","limit":100,"windowMs":60000}']);
    const ofCut = await runReplay({ files: [cut], candidates });
    const ofPlain = await runReplay({ files: [plain], candidates });
    // Before: sized by those 4 bytes, through the reorder window, with requests late and fewer admitted.
    expect(ofCut.input.order).toMatchObject({ mode: 'sort', reason: 'auto', late: 0 });
    expect(ofCut.input.requests).toBe(ofPlain.input.requests);
    expect(ofCut.input.requests).toBeGreaterThan(100_000);
    expect(ofCut.candidates[0]?.admitted).toBe(ofPlain.candidates[0]?.admitted);
  });

  it('over the limit together, the smaller files are still sorted whole, smallest first, as the README says', async () => {
    const sized = (name: string, n: number) => {
      const path = join(dir, name);
      writeFileSync(path, 'x'.repeat(n));
      return path;
    };
    const [big, small, mid] = [sized('big.log', 150_000), sized('small.log', 1_000), sized('mid.log', 60_000)];
    // Before: all or none (every file through the window once the total passed the limit).
    expect(await filesToSortWhole([big, small, mid], 100_000)).toEqual([false, true, true]);
    expect(await filesToSortWhole([big, small, mid], 50_000)).toEqual([false, true, false]);
    expect(await filesToSortWhole([big, small, mid], 211_000)).toEqual([true, true, true]);
  });

  it('a file sorted whole beside others in the window: its own lines in time order, whatever the window', async () => {
    const stats = createOrderStats('window', 'auto', 1_000);
    // Written backwards, a minute apart: through a 1 s window all but the first would be late.
    const backwards = Array.from({ length: 20 }, (_, i) => ({ at: (20 - i) * 60_000, key: 'k', cost: 1 }));
    async function* source(): AsyncGenerator<LogRequest[]> {
      yield backwards;
    }
    const out: number[] = [];
    for await (const b of inTimeOrder(source(), stats, 1_000_000, true)) out.push(...b.map((r) => r.at));
    expect(out).toEqual(backwards.map((r) => r.at).reverse());
    expect(stats.late).toBe(0);
  });
});

describe('durations', () => {
  it.each([
    ['500ms', 500],
    ['90s', 90_000],
    ['1.5s', 1500],
    ['5m', 300_000],
    ['1h', 3_600_000],
    ['7d', 604_800_000],
    ['0', 0],
  ])('%s is %i ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['5', '', 'm', '-1s', '1w', '5 m x'])('%j is not a duration', (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });

  it.each([
    [250, '250ms'],
    [1400, '1.4s'],
    [300_000, '5m'],
    [599_000, '9m 59s'],
    [3_599_999, '1h'],
    [5_430_000, '1h 30m 30s'],
    [604_800_000, '7d'],
    [90_000_000, '1d 1h'],
  ])('%i ms reads %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});
