/**
 * @module Requests put back in time order before they are replayed. Servers write a line when the
 * request ends but log when it arrived (Apache `%t`, most app loggers), so a real log is out of order by
 * up to the longest request; logs merged or shuffled by hand are worse. A limiter fed out of order
 * decides wrongly (it never moves its clock back: an early request after a late one is decided as if it
 * came late), so a replay must sort. Two ways, per file:
 * - a full sort, when asked (`--sort`) or when the input is small enough to hold (`filesToSortWhole`);
 * - a bounded reorder window (default 5 minutes): requests wait in a min-heap until a request
 *   `windowMs` later has been read, then leave in time order. Memory holds one window of traffic.
 *   A request that arrives after later ones have already left (it is more than the window behind the
 *   newest request read) is *late*: it is replayed at once, at its own time, and counted with its
 *   lateness, so the report can say how many and how far (the window that would have held them all).
 */
import { fileSize, inflatedBytes, isGzip } from './line-reader.js';
import { ownString } from './own-string.js';
import type { LogRequest } from './request-parser.js';

/** The default reorder window: longer than common server timeouts (60 s), so lines written at request end fit. */
export const DEFAULT_REORDER_WINDOW_MS = 5 * 60_000;
/** Inputs of at most this many bytes of log text (gzip: uncompressed) are sorted whole unless told otherwise. */
export const AUTO_SORT_BYTES = 128 * 1024 * 1024;

export type OrderMode = 'sort' | 'window';

/** How the replay ordered its input, and what it could not put in order. */
export interface OrderStats {
  /**
   * `sort`: every file sorted whole; `window`: a bounded reorder window of `windowMs`, for every file when
   * a flag chose it (`reason: 'flag'`), else (`auto`) for the files too large to sort whole, smaller ones
   * sorted whole.
   */
  mode: OrderMode;
  /** Why this mode: `--sort` or `--reorder-window` given (`flag`), or chosen by input size (`auto`). */
  reason: 'flag' | 'auto';
  /** The reorder window, ms (null when sorted whole). */
  windowMs: number | null;
  /** Lines earlier than the line before them in their file, as written (how disordered the input is). */
  disordered: number;
  /** Requests that fell outside the window: replayed after later requests had been decided. */
  late: number;
  /** The largest lateness: how far a late request was behind the newest one read before it, ms. */
  worstLateMs: number;
  /** The most requests held at once for reordering. */
  maxHeld: number;
}

export function createOrderStats(mode: OrderMode, reason: 'flag' | 'auto', windowMs: number | null): OrderStats {
  return { mode, reason, windowMs: mode === 'sort' ? null : windowMs, disordered: 0, late: 0, worstLateMs: 0, maxHeld: 0 };
}

/**
 * The bytes of log text in `path`: a plain file's size, or what a gzip file inflates to, counted by
 * inflating it (`inflatedBytes`), stopping once past `atMost`. A gzip trailer is not trusted: in a file
 * cut short its last 4 bytes are compressed data (a 729 KB copy of a 23 MB log read as 456 MiB, and went
 * through the reorder window, 2,667 requests late), and it records only the last member's size, mod 4 GiB.
 * Counting is cheap beside the replay: about 1.5 ms a MiB of text (0.2 s at the 128 MiB limit).
 */
export async function textBytes(path: string, atMost = Number.POSITIVE_INFINITY): Promise<number> {
  const size = fileSize(path);
  return isGzip(path) ? inflatedBytes(path, atMost) : size;
}

/**
 * Which of `paths` are sorted whole by size: the smallest first, as long as those taken hold at most
 * `limit` bytes of log text together; the others go through the reorder window. A gzip file is counted
 * only up to `limit`: past it, it is never sorted whole by size.
 */
export async function filesToSortWhole(paths: readonly string[], limit = AUTO_SORT_BYTES): Promise<boolean[]> {
  const sizes: number[] = [];
  // One at a time: each count reads at most `limit` bytes of text, and holds one chunk.
  for (const path of paths) sizes.push(await textBytes(path, limit));
  const whole = paths.map(() => false);
  let total = 0;
  for (const i of sizes.map((_, i) => i).sort((a, b) => (sizes[a] as number) - (sizes[b] as number))) {
    total += sizes[i] as number;
    if (total > limit) break;
    whole[i] = true;
  }
  return whole;
}

/**
 * Keys of held requests, each kept once: thousands of requests of one client share one string of its
 * own (see own-string.ts), never a view into a log chunk. Cleared when it grows past `MAX_INTERNED`
 * distinct keys (later copies are merely not shared), so it stays bounded on logs of millions of clients.
 */
const MAX_INTERNED = 200_000;

function createInterner(): (key: string) => string {
  let keys = new Map<string, string>();
  return (key) => {
    const known = keys.get(key);
    if (known !== undefined) return known;
    if (keys.size >= MAX_INTERNED) keys = new Map();
    const own = ownString(key);
    keys.set(own, own);
    return own;
  };
}

/**
 * A binary min-heap of requests by (time, read order): ties leave in the order they were read. Held as
 * parallel arrays (about 24 bytes a request), not one object each: a window holds minutes of traffic.
 */
class RequestHeap {
  private readonly at: number[] = [];
  private readonly seq: number[] = [];
  private readonly key: string[] = [];
  private readonly cost: number[] = [];

  get size(): number {
    return this.at.length;
  }

  get minAt(): number {
    return this.at[0] as number;
  }

  get minSeq(): number {
    return this.seq[0] as number;
  }

  private less(i: number, j: number): boolean {
    const a = this.at[i] as number;
    const b = this.at[j] as number;
    return a < b || (a === b && (this.seq[i] as number) < (this.seq[j] as number));
  }

  private swap(i: number, j: number): void {
    const { at, seq, key, cost } = this;
    [at[i], at[j]] = [at[j] as number, at[i] as number];
    [seq[i], seq[j]] = [seq[j] as number, seq[i] as number];
    [key[i], key[j]] = [key[j] as string, key[i] as string];
    [cost[i], cost[j]] = [cost[j] as number, cost[i] as number];
  }

  push(at: number, key: string, cost: number, order: number): void {
    let i = this.at.length;
    this.at.push(at);
    this.seq.push(order);
    this.key.push(key);
    this.cost.push(cost);
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(i, p)) break;
      this.swap(i, p);
      i = p;
    }
  }

  pop(): LogRequest {
    const top: LogRequest = { at: this.at[0] as number, key: this.key[0] as string, cost: this.cost[0] as number };
    const last = this.at.length - 1;
    this.swap(0, last);
    this.at.pop();
    this.seq.pop();
    this.key.pop();
    this.cost.pop();
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < last && this.less(l, m)) m = l;
      if (r < last && this.less(r, m)) m = r;
      if (m === i) return top;
      this.swap(i, m);
      i = m;
    }
  }
}

/**
 * Requests that arrive in order wait in a FIFO (constant time a request: a sorted log, most lines of a
 * log written at request end), the rest in the heap; they leave by (time, read order) from either.
 */
class Held {
  private readonly heap = new RequestHeap();
  private qAt: number[] = [];
  private qSeq: number[] = [];
  private qKey: string[] = [];
  private qCost: number[] = [];
  private head = 0;

  get size(): number {
    return this.heap.size + this.qAt.length - this.head;
  }

  push(at: number, key: string, cost: number, order: number): void {
    const n = this.qAt.length;
    if (n === this.head || at >= (this.qAt[n - 1] as number)) {
      this.qAt.push(at);
      this.qSeq.push(order);
      this.qKey.push(key);
      this.qCost.push(cost);
    } else this.heap.push(at, key, cost, order);
  }

  /** True when the queue's front leaves before the heap's top. */
  private queueFirst(): boolean {
    if (this.qAt.length === this.head) return false;
    if (this.heap.size === 0) return true;
    const a = this.qAt[this.head] as number;
    const b = this.heap.minAt;
    return a < b || (a === b && (this.qSeq[this.head] as number) < this.heap.minSeq);
  }

  /** The earliest held time (size > 0). */
  get minAt(): number {
    return this.queueFirst() ? (this.qAt[this.head] as number) : this.heap.minAt;
  }

  pop(): LogRequest {
    if (!this.queueFirst()) return this.heap.pop();
    const h = this.head;
    const r: LogRequest = { at: this.qAt[h] as number, key: this.qKey[h] as string, cost: this.qCost[h] as number };
    this.head = h + 1;
    if (this.head === this.qAt.length) {
      this.qAt = [];
      this.qSeq = [];
      this.qKey = [];
      this.qCost = [];
      this.head = 0;
    } else if (this.head >= 65_536 && this.head * 2 >= this.qAt.length) {
      this.qAt = this.qAt.slice(this.head);
      this.qSeq = this.qSeq.slice(this.head);
      this.qKey = this.qKey.slice(this.head);
      this.qCost = this.qCost.slice(this.head);
      this.head = 0;
    }
    return r;
  }
}

/**
 * Lines more than one window ahead of the newest request read that must agree (lie within one window of
 * each other) before the window moves to them: a jump in traffic is followed by more lines, a line from a
 * host whose clock is wrong is not, and must not make every later line late.
 */
export const JUMP_LINES = 3;

/** The most far-ahead line times the reorder window remembers while they wait to agree (`JUMP_LINES`). */
const MAX_AHEAD = 1024;

/** Counts lines earlier than the line before them, as written. */
class Disorder {
  private previous = Number.NEGATIVE_INFINITY;
  constructor(private readonly stats: OrderStats) {}
  see(at: number): void {
    if (at < this.previous) this.stats.disordered += 1;
    this.previous = at;
  }
}

/**
 * The requests of `source` in time order, within `stats.windowMs` (or sorted whole when `stats.mode`
 * is `sort`); counts disorder and late requests into `stats`. The mode is read when the file is opened,
 * not when it is first read: mergeByTime reads the first file whole before the next, and a first file
 * too large to sort whole turns the run's mode to `window` (the report's), which must not take a small
 * file opened beside it into the window too (the order of the files changed the figures).
 */
export function inTimeOrder(
  source: AsyncIterable<LogRequest[]>,
  stats: OrderStats,
  /**
   * The most requests a file sorted whole by size (`reason: 'auto'`) holds before it goes on through the
   * default reorder window; none by default: `filesToSortWhole` counts every file's text exactly (gzip by
   * inflating it), so the size bounds what a file holds (a cap of a million put half of two hosts' logs
   * joined by `cat`, 1.2 million short lines in 34 MB, late). For a caller that cannot size its input.
   */
  autoSortCap = Number.POSITIVE_INFINITY,
  /** This file sorted whole; by default as `stats.mode` says (a file small enough among large ones is, in `window` mode by size). */
  whole = stats.mode === 'sort',
): AsyncGenerator<LogRequest[]> {
  if (!whole) return windowed(source, new Reorder(stats), new Disorder(stats), createInterner());
  return sortedWhole(source, stats, autoSortCap);
}

/** `inTimeOrder` for a file sorted whole, or put into the reorder window once it holds more than `autoSortCap` requests. */
async function* sortedWhole(source: AsyncIterable<LogRequest[]>, stats: OrderStats, autoSortCap: number): AsyncGenerator<LogRequest[]> {
  const intern = createInterner();
  const disorder = new Disorder(stats);
  const iterator = source[Symbol.asyncIterator]();
  const cap = stats.reason === 'auto' ? autoSortCap : Number.POSITIVE_INFINITY;
  // Parallel arrays (about 24 bytes a request), not one object each.
  const at: number[] = [];
  const key: string[] = [];
  const cost: number[] = [];
  for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
    for (const r of next.value) {
      disorder.see(r.at);
      at.push(r.at);
      key.push(intern(r.key));
      cost.push(r.cost);
    }
    if (at.length > cap) {
      // Too many to hold: what is held goes into the reorder window in time order (before: in file order,
      // so a file shuffled within its first million lines left most of them late), the rest of the file after it.
      stats.mode = 'window';
      stats.windowMs = DEFAULT_REORDER_WINDOW_MS;
      stats.maxHeld = Math.max(stats.maxHeld, at.length);
      const reorder = new Reorder(stats);
      const out: LogRequest[] = [];
      for (const i of timeOrder(at)) reorder.push({ at: at[i] as number, key: key[i] as string, cost: cost[i] as number }, out);
      at.length = key.length = cost.length = 0;
      if (out.length > 0) yield out;
      yield* windowed({ [Symbol.asyncIterator]: () => iterator }, reorder, disorder, intern);
      return;
    }
  }
  stats.maxHeld = Math.max(stats.maxHeld, at.length);
  const index = timeOrder(at);
  for (let i = 0; i < index.length; i += 8192) {
    const out: LogRequest[] = [];
    for (const j of index.subarray(i, i + 8192)) out.push({ at: at[j] as number, key: key[j] as string, cost: cost[j] as number });
    yield out;
  }
}

/** The indexes of `at` by time; ties stay in the order they were read. */
function timeOrder(at: readonly number[]): Uint32Array {
  const index = new Uint32Array(at.length);
  for (let i = 0; i < index.length; i++) index[i] = i;
  return index.sort((a, b) => (at[a] as number) - (at[b] as number) || a - b);
}

async function* windowed(
  source: AsyncIterable<LogRequest[]>,
  reorder: Reorder,
  disorder: Disorder,
  intern: (key: string) => string,
): AsyncGenerator<LogRequest[]> {
  for await (const batch of source) {
    const out: LogRequest[] = [];
    for (const r of batch) {
      disorder.see(r.at);
      reorder.push({ at: r.at, key: intern(r.key), cost: r.cost }, out);
    }
    if (out.length > 0) yield out;
  }
  const rest = reorder.drain();
  if (rest.length > 0) yield rest;
}

/**
 * The reorder window: requests wait until one `windowMs` later has been read, then leave in time order. A
 * request behind what has already left is late (replayed at once, counted). A request more than a window
 * ahead of the newest is held without moving the window until `JUMP_LINES` such lines agree; so are the
 * first lines, which place the window.
 */
class Reorder {
  private newest = Number.NEGATIVE_INFINITY;
  private released = Number.NEGATIVE_INFINITY;
  private order = 0;
  /** Times of held requests more than a window ahead of `newest`, ascending (at most `MAX_AHEAD` kept). */
  private readonly ahead: number[] = [];
  /** The same times in the order they were read, the oldest first: which one to forget when `ahead` is full. */
  private aheadRead: number[] = [];
  private readonly held = new Held();
  private readonly windowMs: number;

  constructor(private readonly stats: OrderStats) {
    this.windowMs = stats.windowMs ?? 0;
  }

  push(r: LogRequest, out: LogRequest[]): void {
    const { stats, held, windowMs } = this;
    if (r.at < this.released) {
      // Later requests have been decided already: replay this one now, and say so.
      stats.late += 1;
      if (this.newest - r.at > stats.worstLateMs) stats.worstLateMs = this.newest - r.at;
      out.push(r);
      return;
    }
    // The first lines place the window as a jump does, once three agree: a first line from a host with
    // a wrong clock is then held like any other, instead of making every line after it late.
    if (windowMs > 0 && r.at > this.newest + windowMs) this.jump(r.at);
    else if (r.at > this.newest) this.advance(r.at);
    if (r.at <= this.newest - windowMs && held.size === 0) {
      // Nothing waits and nothing can come before it: straight through (a window of 0, a sorted log).
      this.released = r.at;
      out.push(r);
      return;
    }
    held.push(r.at, r.key, r.cost, this.order++);
    while (held.size > 0 && held.minAt <= this.newest - windowMs) {
      const next = held.pop();
      this.released = next.at;
      out.push(next);
    }
    if (held.size > stats.maxHeld) stats.maxHeld = held.size;
  }

  /** The window moves to `at`; lines it now covers are no longer ahead. */
  private advance(at: number): void {
    this.newest = at;
    const ahead = this.ahead;
    const covered = at + this.windowMs;
    let drop = 0;
    while (drop < ahead.length && (ahead[drop] as number) <= covered) drop++;
    if (drop > 0) {
      ahead.splice(0, drop);
      this.aheadRead = ahead.length === 0 ? [] : this.aheadRead.filter((t) => t > covered);
    }
  }

  /**
   * A line far ahead: the window moves to it only with `JUMP_LINES - 1` others within a window of it. When
   * `MAX_AHEAD` lines wait ahead, the one read longest ago is forgotten (it stays held, and leaves when the
   * window passes it): the check then always sees the newest lines, so a start of sparse traffic (lines
   * further apart than the window) followed by a busy log still moves the window. Before, the newest line
   * was the one dropped, before the check: the window never moved again and every later line was held.
   */
  private jump(at: number): void {
    const ahead = this.ahead;
    let i = ahead.length;
    while (i > 0 && (ahead[i - 1] as number) > at) i--;
    ahead.splice(i, 0, at);
    this.aheadRead.push(at);
    if (ahead.length > MAX_AHEAD) ahead.splice(ahead.indexOf(this.aheadRead.shift() as number), 1);
    for (let j = 0; j + JUMP_LINES - 1 < ahead.length; j++) {
      const last = ahead[j + JUMP_LINES - 1] as number;
      if (last - (ahead[j] as number) <= this.windowMs) {
        this.advance(last);
        return;
      }
    }
  }

  /** What is still held, in time order (the input ended). */
  drain(): LogRequest[] {
    const rest: LogRequest[] = [];
    while (this.held.size > 0) rest.push(this.held.pop());
    return rest;
  }
}

const UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `500ms`, `90s`, `5m`, `1h`, `7d`, `1.5m`, or `0` -> ms; undefined when it is not a duration. */
export function parseDuration(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(text.trim());
  if (m === null) return undefined;
  const value = Number(m[1]) * (UNITS[m[2] ?? 's'] as number);
  if (m[2] === undefined && Number(m[1]) !== 0) return undefined;
  // A window the limiter's ms cannot hold (0.4ms, 1.0005s) is refused, never rounded to another
  // (1.1s is 1100.0000000000002 in floating point: that one is 1100 ms).
  const ms = Math.round(value);
  return Number.isSafeInteger(ms) && Math.abs(value - ms) < 1e-6 && (ms > 0 || value === 0) ? ms : undefined;
}

/** `300000` -> `5m`, `90000` -> `1m 30s`, `1500` -> `1.5s`, `250` -> `250ms`, `604800000` -> `7d`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  if (ms < 60_000) return `${+(ms / 1000).toFixed(1)}s`;
  const total = Math.round(ms / 1000);
  const d = Math.floor(total / 86_400);
  const h = Math.floor((total % 86_400) / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  return [d > 0 ? `${d}d` : '', h > 0 ? `${h}h` : '', m > 0 ? `${m}m` : '', s > 0 ? `${s}s` : ''].filter((x) => x !== '').join(' ') || '0s';
}

/** The longest `--reorder-window` accepted: 7 days. */
export const MAX_REORDER_WINDOW_MS = 7 * 86_400_000;

/**
 * What to rerun with: `--sort`, and a window that would have held the late requests when one is
 * accepted (the stderr line, the table and the HTML report all say this); a wider window can let held
 * far-ahead lines move it and leave others late (the README says so), `--sort` is exact.
 */
export function rerunWith(lateMs: number): string {
  const window = windowToHold(lateMs);
  return (parseDuration(window) ?? Number.POSITIVE_INFINITY) > MAX_REORDER_WINDOW_MS ? '--sort' : `--sort, or --reorder-window ${window}`;
}

/**
 * A `--reorder-window` that holds a request `lateMs` late (a window of `lateMs` does), rounded up to whole
 * seconds or minutes: a value `--reorder-window` takes as it is.
 */
export function windowToHold(lateMs: number): string {
  return lateMs < 60_000 ? `${Math.max(1, Math.ceil(lateMs / 1000))}s` : `${Math.ceil(lateMs / 60_000)}m`;
}
