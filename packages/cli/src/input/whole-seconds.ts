/**
 * @module Logs whose times are whole seconds (nginx `$time_local`, Apache `%t`, many CSV exports). Replayed
 * as they are, the requests of one second arrive together at its start, so a policy of a few seconds (10
 * per second, say) rejects far more than it did: a generated log of 50 clients at 6 requests/s had 2,330
 * rejected by `gcra 10/1s` with whole-second times and 4 with the same requests' millisecond times. Replay
 * says so (`WholeSeconds.seen`, the report's `input.times`), and `--spread-seconds` spreads each second's
 * requests evenly over it instead, in the order they came: an assumption too, the other bound.
 */
import type { LogRequest } from './request-parser.js';

/** A window at or under this is decided differently when a second's requests come at once. */
export const COARSE_WINDOW_MS = 10_000;

/**
 * Requests enough to call a log's times whole seconds: a log with millisecond times has 5 all on a whole
 * second once in 10^15; a hand-made log of a line or two with round numbers is not taken for one.
 */
const ENOUGH = 5;

export class WholeSeconds {
  private all = true;
  private count = 0;
  private readonly group: LogRequest[] = [];

  constructor(
    /** Where the requests go on, in order: spread over their second when `spread`, else as they came. */
    private readonly out: (r: LogRequest) => void,
    private readonly spread: boolean,
  ) {}

  /** True when every request had a time of whole seconds, and there were enough to tell. */
  get seen(): boolean {
    return this.all && this.count >= ENOUGH;
  }

  add(r: LogRequest): void {
    this.count += 1;
    if (r.at % 1000 !== 0) this.all = false;
    if (!this.spread) {
      this.out(r);
      return;
    }
    const first = this.group[0];
    if (first !== undefined && first.at !== r.at) this.flush();
    this.group.push(r);
  }

  /** Sends the second held (call once the input ends). Requests of a time with milliseconds are never moved. */
  flush(): void {
    const group = this.group;
    const n = group.length;
    for (let i = 0; i < n; i++) {
      const r = group[i] as LogRequest;
      this.out(r.at % 1000 === 0 ? { at: r.at + Math.floor((i * 1000) / n), key: r.key, cost: r.cost } : r);
    }
    group.length = 0;
  }
}
