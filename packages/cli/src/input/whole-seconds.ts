/**
 * @module Logs whose times are whole seconds (nginx `$time_local`, Apache `%t`, many CSV exports). Replayed
 * as they are, the requests of one second arrive together at its start, so a policy of a few seconds (10
 * per second, say) rejects far more than it did: a generated log of 50 clients at 6 requests/s had 2,330
 * rejected by `gcra 10/1s` with whole-second times and 4 with the same requests' millisecond times. Replay
 * says so (`WholeSeconds.seen`, the report's `input.times`), and `--spread-seconds` spreads each second's
 * requests evenly over it instead, in the order they came (`spreadWholeSeconds`): an assumption too, the
 * other guess. Neither bounds the truth: a client's last request of one second and first of the next are
 * 1 s apart bunched and closer spread.
 */
import type { PolicyOptions } from '@tollgate/core';
import type { LogRequest } from './request-parser.js';

/** A policy whose time span (`timeSpanMs`) is at or under this decides differently when a second's requests come at once. */
export const COARSE_WINDOW_MS = 10_000;

/**
 * The time over which `p` remembers: a window algorithm's `windowMs`; a bucket's time to refill its
 * `burst` (`burst * windowMs / limit`: gcra 60 per minute with a burst of 1 forgets in 1 s, as 1 per
 * second does); a leaky bucket's interval between requests (`windowMs / limit`), which its delays are
 * counted in, however large its burst.
 */
export function timeSpanMs(p: PolicyOptions): number {
  const algorithm = p.algorithm ?? 'gcra';
  if (algorithm === 'leaky-bucket') return p.windowMs / p.limit;
  const bucket = algorithm === 'gcra' || algorithm === 'token-bucket';
  return bucket ? ((p.burst ?? p.limit) * p.windowMs) / p.limit : p.windowMs;
}

/**
 * Requests enough to call a log's times whole seconds: a log with millisecond times has 5 all on a whole
 * second once in 10^15; a hand-made log of a line or two with round numbers is not taken for one.
 */
const ENOUGH = 5;

/** The most requests of one second held to be spread together. */
const MAX_GROUP = 100_000;

/** Tells whether a log's times are whole seconds: every request's, and enough of them to tell. */
export class WholeSeconds {
  private all = true;
  private count = 0;

  /** True when every request seen had a time of whole seconds, and there were enough to tell. */
  get seen(): boolean {
    return this.all && this.count >= ENOUGH;
  }

  /** `source` as it is, each request's time seen on the way (before any spreading). */
  async *watch(source: AsyncIterable<LogRequest[]>): AsyncGenerator<LogRequest[]> {
    for await (const batch of source) {
      if (this.all) for (const r of batch) if (r.at % 1000 !== 0) this.all = false;
      this.count += batch.length;
      yield batch;
    }
  }
}

/**
 * One file's requests (in time order) with the requests of each whole second spread evenly over it, in
 * the order they came: over the second, or up to the next request's time when that comes sooner (ties in a
 * log with milliseconds stay before what follows them), never before a time already given in the newest
 * second (a newest second split by a late request goes on where it was). A late request (one the reorder
 * window let through after later seconds) keeps its own second, spread over it, as the README says late
 * requests are replayed: at once, at their own time; a late second split again by another late one is
 * spread again from its start (late requests are replayed out of order anyway). Requests of a time with milliseconds pass as they are. Per file,
 * before the files are merged, so the merge sees each file in order.
 */
export async function* spreadWholeSeconds(source: AsyncIterable<LogRequest[]>): AsyncGenerator<LogRequest[]> {
  const group: LogRequest[] = [];
  let out: LogRequest[] = [];
  /** The last time given to a request of the newest second spread so far. */
  let last = Number.NEGATIVE_INFINITY;
  let newestSecond = Number.NEGATIVE_INFINITY;
  const flush = (next: number) => {
    const n = group.length;
    const second = (group[0] as LogRequest).at;
    const span = next > second ? Math.min(1000, next - second) : 1000;
    // Before: every time was at least the last one given, so a late request moved to the newest time.
    const late = second < newestSecond;
    if (!late) newestSecond = second;
    for (let i = 0; i < n; i++) {
      const r = group[i] as LogRequest;
      const at = second + Math.floor((i * span) / n);
      if (late) out.push({ at, key: r.key, cost: r.cost });
      else {
        last = Math.max(last, at);
        out.push({ at: last, key: r.key, cost: r.cost });
      }
    }
    group.length = 0;
  };
  for await (const batch of source) {
    for (const r of batch) {
      const first = group[0];
      // A group is one second's requests, at most MAX_GROUP: a log whose times are all one (a date-only
      // export) is spread that many at a time, each batch over the second, never back in time.
      if (first !== undefined && (first.at !== r.at || group.length >= MAX_GROUP)) flush(r.at);
      if (r.at % 1000 === 0) group.push(r);
      else out.push(r);
    }
    if (out.length > 0) {
      yield out;
      out = [];
    }
  }
  if (group.length > 0) flush(Number.POSITIVE_INFINITY);
  if (out.length > 0) yield out;
}
