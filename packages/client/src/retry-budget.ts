/**
 * @module A retry budget, after Finagle's `RetryBudget` and gRPC's retry throttling: over the last
 * `windowMs`, retries may be at most `ratio` of the requests plus `minRetriesPerSecond * windowMs / 1000`.
 * When a server fails every call, a client with a budget sends at most `1 + ratio` times its normal
 * load (plus the small floor) instead of `1 + retries` times: retries cannot turn an outage into a storm.
 *
 * Counts live in ten slots of `windowMs / 10`, so memory is constant and old activity ages out in steps.
 */

export interface RetryBudgetOptions {
  /** Retries allowed per request sent, over the window. Defaults to `0.1` (one retry per ten requests). */
  ratio?: number;
  /** Retries allowed per second regardless of traffic, so a client that sends little can still retry. Defaults to `1`. */
  minRetriesPerSecond?: number;
  /** The window over which requests and retries are counted, in ms. Defaults to `10_000`. */
  windowMs?: number;
}

const SLOTS = 10;

/** A retry taken from the budget: given back (`RetryBudget.giveBack`) when the retry is not sent after all. */
export interface RetryTicket {
  /** The slot it was counted in, numbered from the budget's start. */
  readonly step: number;
}

export class RetryBudget {
  private readonly slotMs: number;
  private readonly requests = new Array<number>(SLOTS).fill(0);
  private readonly retries = new Array<number>(SLOTS).fill(0);
  private slot = 0;
  /** Slots moved through since the start (a ticket's age is the difference of two steps). */
  private step = 0;
  private slotStart: number;

  constructor(
    private readonly ratio: number,
    private readonly floor: number,
    windowMs: number,
    private readonly clock: () => number,
  ) {
    this.slotMs = Math.max(1, Math.ceil(windowMs / SLOTS));
    this.slotStart = clock();
  }

  /** Moves the ring forward to now, clearing the slots that fell out of the window. */
  private advance(): void {
    const now = this.clock();
    const steps = Math.floor((now - this.slotStart) / this.slotMs);
    if (steps <= 0) return;
    for (let i = 0; i < Math.min(steps, SLOTS); i++) {
      this.slot = (this.slot + 1) % SLOTS;
      this.requests[this.slot] = 0;
      this.retries[this.slot] = 0;
    }
    this.slotStart += steps * this.slotMs;
    this.step += steps;
  }

  /** Counts a first attempt. */
  request(): void {
    this.advance();
    this.requests[this.slot] = (this.requests[this.slot] ?? 0) + 1;
  }

  /** Takes one retry from the budget; undefined (and nothing taken) when it is spent. */
  tryRetry(): RetryTicket | undefined {
    this.advance();
    const sum = (a: readonly number[]) => a.reduce((x, y) => x + y, 0);
    if (sum(this.retries) + 1 > this.floor + this.ratio * sum(this.requests)) return undefined;
    this.retries[this.slot] = (this.retries[this.slot] ?? 0) + 1;
    return { step: this.step };
  }

  /** Gives back a retry that was not sent (its call aborted, or its `onRetry` threw), if its slot is still in the window. */
  giveBack(ticket: RetryTicket): void {
    this.advance();
    const age = this.step - ticket.step;
    if (age >= SLOTS) return;
    const at = (this.slot - age + SLOTS) % SLOTS;
    this.retries[at] = Math.max(0, (this.retries[at] ?? 0) - 1);
  }
}
