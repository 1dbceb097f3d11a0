/**
 * @module Logs whose times are whole seconds (nginx `$time_local`, Apache `%t`, many CSV exports). Replayed
 * as they are, the requests of one second arrive together at its start, so a policy of a few seconds (10
 * per second, say) rejects far more than it did: a generated log of 50 clients at 6 requests/s had 2,330
 * rejected by `gcra 10/1s` with whole-second times and 4 with the same requests' millisecond times. Replay
 * says so (`judgeWholeSeconds`, the report's `input.times` and `input.files[].wholeSeconds`), and
 * `--spread-seconds` spreads each second's requests evenly over it instead, in the order they came
 * (`spreadWholeSeconds`): an assumption too, the other guess. Neither bounds the truth: a client's last
 * request of one second and first of the next are 1 s apart bunched and closer spread. Both are judged per
 * file: a file with millisecond times beside a whole-second one passes as it is.
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

/** Tells whether one file's times are whole seconds: every request's, and enough of them to tell. */
export class WholeSeconds {
  private whole = true;
  private count = 0;

  /** True while every request seen had a time of whole seconds (also before any). */
  get allWhole(): boolean {
    return this.whole;
  }

  /** The requests seen. */
  get requests(): number {
    return this.count;
  }

  /** True when every request seen had a time of whole seconds, and there were enough to tell. */
  get seen(): boolean {
    return this.whole && this.count >= ENOUGH;
  }

  /** `source` as it is, each request's time seen on the way (before any spreading). */
  async *watch(source: AsyncIterable<LogRequest[]>): AsyncGenerator<LogRequest[]> {
    for await (const batch of source) {
      if (this.whole) for (const r of batch) if (r.at % 1000 !== 0) this.whole = false;
      this.count += batch.length;
      yield batch;
    }
  }
}

/**
 * The files' times judged (one `WholeSeconds` per file): `wholeSeconds` when every time of every file is
 * a whole second, enough of them in all to tell; `files[i]` when file i's are, enough in it to tell (or
 * in all, when all are whole: a file of 3 beside one of 10 is whole as the run is).
 */
export function judgeWholeSeconds(files: readonly WholeSeconds[]): { wholeSeconds: boolean; files: boolean[] } {
  let requests = 0;
  for (const f of files) requests += f.requests;
  const wholeSeconds = files.every((f) => f.allWhole) && requests >= ENOUGH;
  return { wholeSeconds, files: files.map((f) => f.allWhole && f.requests > 0 && (wholeSeconds || f.seen)) };
}

/** What `spreadWholeSeconds` did to one file: `moved` once a request was given another time than its own. */
export interface Spreading {
  moved: boolean;
}

/**
 * One file's requests (in time order) with the requests of each whole second spread evenly over it, in
 * the order they came, never before a time already given in the newest second (a newest second split by a
 * late request goes on where it was). A late request (one the reorder window let through after later
 * seconds) keeps its own second, spread over it, as the README says late requests are replayed: at once,
 * at their own time; a late second split again by another late one is spread again from its start (late
 * requests are replayed out of order anyway). The file is whole-second while every time it has shown is:
 * from its first time with milliseconds on, nothing more is spread, neither its later times on a whole
 * second (a burst on `.000` of a millisecond log) nor the second held when that time came (before: every
 * request on a whole second was spread, whatever the file). Per file, before the files are merged, so the
 * merge sees each file in order; `spreading` is told whether a request was moved.
 */
export async function* spreadWholeSeconds(
  source: AsyncIterable<LogRequest[]>,
  spreading: Spreading = { moved: false },
): AsyncGenerator<LogRequest[]> {
  const group: LogRequest[] = [];
  let out: LogRequest[] = [];
  /** The last time given to a request of the newest second spread so far. */
  let last = Number.NEGATIVE_INFINITY;
  let newestSecond = Number.NEGATIVE_INFINITY;
  /** Set at the file's first time with milliseconds: everything passes as it is from there. */
  let milliseconds = false;
  const flush = () => {
    const n = group.length;
    const second = (group[0] as LogRequest).at;
    // Before: every time was at least the last one given, so a late request moved to the newest time.
    const late = second < newestSecond;
    if (!late) newestSecond = second;
    for (let i = 0; i < n; i++) {
      const r = group[i] as LogRequest;
      let at = second + Math.floor((i * 1000) / n);
      if (!late) {
        last = Math.max(last, at);
        at = last;
      }
      if (at !== r.at) spreading.moved = true;
      out.push({ at, key: r.key, cost: r.cost });
    }
    group.length = 0;
  };
  for await (const batch of source) {
    for (const r of batch) {
      if (!milliseconds && r.at % 1000 !== 0) {
        milliseconds = true;
        for (const held of group) out.push(held);
        group.length = 0;
      }
      if (milliseconds) {
        out.push(r);
        continue;
      }
      const first = group[0];
      // A group is one second's requests, at most MAX_GROUP: a log whose times are all one (a date-only
      // export) is spread that many at a time, each batch over the second, never back in time.
      if (first !== undefined && (first.at !== r.at || group.length >= MAX_GROUP)) flush();
      group.push(r);
    }
    if (out.length > 0) {
      yield out;
      out = [];
    }
  }
  if (group.length > 0) flush();
  if (out.length > 0) yield out;
}
