/**
 * @module The wait before background work that failed is tried again: 200 ms after the first failure in a
 * row, doubling with each after it, up to 10 s. For work whose failure would otherwise leave something off
 * for good (a store's mark, the first reading of which servers answer), asked again at a later call or
 * on its timer (`retry`, one at a time, unref'd: it never keeps the process alive), never at every call.
 */

/** The shortest wait, after a first failure (ms). */
const FIRST_WAIT_MS = 200;
/** The longest wait (ms). */
const MAX_WAIT_MS = 10_000;

export class DoublingWait {
  /** Tries in a row that failed. */
  private failures = 0;
  /** When the next try may go (`now()`, ms); 0 while nothing waits. */
  private at = 0;
  /** The timer `retry` set, until it runs or `stop`. */
  private timer: ReturnType<typeof setTimeout> | undefined = undefined;

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** True while nothing waits, or once the wait is over. */
  get over(): boolean {
    return this.at === 0 || this.now() >= this.at;
  }

  /**
   * A try failed: waits twice as long as after the last failure in a row (the first: 200 ms). Failures of
   * the parts of one try (since `started`) count once. Returns the wait from now (ms).
   */
  failed(): number {
    if (this.at === 0) {
      this.failures++;
      this.at = this.now() + Math.min(FIRST_WAIT_MS * 2 ** (this.failures - 1), MAX_WAIT_MS);
    }
    return Math.max(0, this.at - this.now());
  }

  /** A try goes now: its failures start a new wait. */
  started(): void {
    this.at = 0;
  }

  /** A try succeeded whole: the next failure waits the shortest again. */
  succeeded(): void {
    this.failures = 0;
  }

  /** True while a `retry` waits to run. */
  get pending(): boolean {
    return this.timer !== undefined;
  }

  /** A try failed (`failed`): runs `run` once its wait is over, unless a retry already waits. */
  retry(run: () => void): void {
    if (this.timer !== undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      run();
    }, this.failed());
    this.timer.unref?.();
  }

  /** Clears a waiting `retry`. */
  stop(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
