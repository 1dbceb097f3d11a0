/**
 * @module Requests put back in time order before they are replayed. Servers write a line when the
 * request ends but log when it arrived (Apache `%t`, most app loggers), so a real log is out of order by
 * up to the longest request; logs merged or shuffled by hand are worse. A limiter fed out of order
 * decides wrongly (it never moves its clock back: an early request after a late one is decided as if it
 * came late), so a replay must sort. Two ways, per file:
 * - a full sort, when asked (`--sort`) or when the input is small enough to hold (`shouldSortWhole`);
 * - a bounded reorder window (default 5 minutes): requests wait in a min-heap until a request
 *   `windowMs` later has been read, then leave in time order. Memory holds one window of traffic.
 *   A request that arrives after later ones have already left (it is more than the window behind the
 *   newest request read) is *late*: it is replayed at once, at its own time, and counted with its
 *   lateness, so the report can say how many and how far (the window that would have held them all).
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { fileSize, isGzip } from './line-reader.js';
import { ownString } from './own-string.js';
import type { LogRequest } from './request-parser.js';

/** The default reorder window: longer than common server timeouts (60 s), so lines written at request end fit. */
export const DEFAULT_REORDER_WINDOW_MS = 5 * 60_000;
/** Inputs of at most this many bytes of log text (gzip: uncompressed) are sorted whole unless told otherwise. */
export const AUTO_SORT_BYTES = 128 * 1024 * 1024;

export type OrderMode = 'sort' | 'window';

/** How the replay ordered its input, and what it could not put in order. */
export interface OrderStats {
  /** `sort`: every file sorted whole; `window`: a bounded reorder window of `windowMs`. */
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

/** The log text's size: the file's, or for gzip the uncompressed size its trailer records (ISIZE, mod 2^32). */
export function textBytes(path: string): number {
  const size = fileSize(path);
  if (size < 18 || !isGzip(path)) return size;
  const fd = openSync(path, 'r');
  try {
    const tail = Buffer.alloc(4);
    readSync(fd, tail, 0, 4, size - 4);
    // ISIZE wraps at 4 GiB: a compressed file never inflates to less than itself.
    return Math.max(tail.readUInt32LE(0), size);
  } finally {
    closeSync(fd);
  }
}

/** True when the files hold at most `limit` bytes of log text altogether: small enough to sort whole. */
export function shouldSortWhole(paths: readonly string[], limit = AUTO_SORT_BYTES): boolean {
  let total = 0;
  for (const p of paths) total += textBytes(p);
  return total <= limit;
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
 * The requests of `source` in time order, within `stats.windowMs` (or sorted whole when `stats.mode`
 * is `sort`); counts disorder and late requests into `stats`.
 */
export async function* inTimeOrder(source: AsyncIterable<LogRequest[]>, stats: OrderStats): AsyncGenerator<LogRequest[]> {
  let previous = Number.NEGATIVE_INFINITY;
  let order = 0;
  const intern = createInterner();
  if (stats.mode === 'sort') {
    const at: number[] = [];
    const key: string[] = [];
    const cost: number[] = [];
    for await (const batch of source) {
      for (const r of batch) {
        if (r.at < previous) stats.disordered += 1;
        previous = r.at;
        at.push(r.at);
        key.push(intern(r.key));
        cost.push(r.cost);
      }
    }
    stats.maxHeld = Math.max(stats.maxHeld, at.length);
    // Ties stay in the order they were read.
    const index = new Uint32Array(at.length);
    for (let i = 0; i < index.length; i++) index[i] = i;
    index.sort((a, b) => (at[a] as number) - (at[b] as number) || a - b);
    for (let i = 0; i < index.length; i += 8192) {
      const out: LogRequest[] = [];
      for (const j of index.subarray(i, i + 8192)) out.push({ at: at[j] as number, key: key[j] as string, cost: cost[j] as number });
      yield out;
    }
    return;
  }
  const windowMs = stats.windowMs ?? 0;
  const heap = new Held();
  let newest = Number.NEGATIVE_INFINITY;
  let released = Number.NEGATIVE_INFINITY;
  for await (const batch of source) {
    const out: LogRequest[] = [];
    for (const r of batch) {
      if (r.at < previous) stats.disordered += 1;
      previous = r.at;
      if (r.at < released) {
        // Later requests have been decided already: replay this one now, and say so.
        stats.late += 1;
        if (newest - r.at > stats.worstLateMs) stats.worstLateMs = newest - r.at;
        out.push(r);
        continue;
      }
      if (r.at > newest) newest = r.at;
      if (r.at <= newest - windowMs && heap.size === 0) {
        // Nothing waits and nothing can come before it: straight through (a window of 0, a sorted log).
        released = r.at;
        out.push(r);
        continue;
      }
      heap.push(r.at, intern(r.key), r.cost, order++);
      while (heap.size > 0 && heap.minAt <= newest - windowMs) {
        const next = heap.pop();
        released = next.at;
        out.push(next);
      }
      if (heap.size > stats.maxHeld) stats.maxHeld = heap.size;
    }
    if (out.length > 0) yield out;
  }
  const rest: LogRequest[] = [];
  while (heap.size > 0) rest.push(heap.pop());
  if (rest.length > 0) yield rest;
}

const UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** `500ms`, `90s`, `5m`, `1h`, `1.5m`, or `0` -> ms; undefined when it is not a duration. */
export function parseDuration(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (m === null) return undefined;
  const value = Number(m[1]) * (UNITS[m[2] ?? 's'] as number);
  if (m[2] === undefined && Number(m[1]) !== 0) return undefined;
  return Number.isFinite(value) ? Math.round(value) : undefined;
}

/** `300000` -> `5m`, `90000` -> `1m 30s`, `1500` -> `1.5s`, `250` -> `250ms`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  if (ms < 60_000) return `${+(ms / 1000).toFixed(1)}s`;
  const total = Math.round(ms / 1000);
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  return [h > 0 ? `${h}h` : '', m > 0 ? `${m}m` : '', s > 0 ? `${s}s` : ''].filter((x) => x !== '').join(' ') || '0s';
}
