/**
 * @module The health of one store node (a connection, or one Redis Cluster master): the circuit
 * breaker, moved here from a single store-wide breaker so that one shard's failover trips only its own.
 *
 * - **Events, not calls.** A node-scoped failure opens an *outage event*; failures of calls that were
 *   already sent when the event began belong to it and count nothing more, so 32 calls in flight when a
 *   connection drops are one event, not 32 failures. `failureThreshold` counts such events in a row.
 * - **Open:** calls for this node skip the store and get the failure mode's answer, except one probe at a
 *   time: the first after 10 ms (or `cooldownMs` if shorter), the next ones 10 ms later again when the
 *   probe failed fast (the store refused at once, e.g. not connected: probing costs nothing), or after a
 *   doubled wait, up to `cooldownMs`, when the probe hung until the watchdog gave up on it.
 * - **Closed again on the first reply in time,** from a probe or any other call: a node that answers is
 *   up. A reply that comes after the watchdog answered its call (late) lets the next call probe at once,
 *   but closes nothing: a node that answers every call late stays open. So a 100 ms blip degrades about
 *   100 ms (plus the reconnect and one round trip), not a whole cool-down.
 * - **Half-open once the wait is over,** with or without a call to take the probe (a timer, unref'd, as
 *   resilience4j's automatic transition): the state, and its gauge, say the next call probes. A limiter
 *   with no traffic (a login route at night beside a busy API on the same Redis) stayed `open` after a
 *   1.5 s stall until its next request, and its alert paged for an hour while Redis answered.
 * - **But not while the store's connection is down** (`connection`: the client said it closed, and not
 *   yet that it is ready): a probe would be refused at once, so the breaker stays open until the client
 *   is ready again, then turns half-open. Before, a Redis that refused connections left the gauge
 *   half-open 10 ms after each refused probe, 78 to 98 % of the time, and the breaker alert, which waits
 *   for `open`, missed the most common outage.
 * Time is the limiter's clock, so tests drive it in virtual time.
 */

export type BreakerState = 'closed' | 'open' | 'half-open';

/** The first wait before probing an open node, ms. */
export const FIRST_PROBE_MS = 10;

export interface BreakerConfig {
  readonly failureThreshold: number;
  readonly cooldownMs: number;
}

export class NodeHealth {
  state: BreakerState = 'closed';
  /** Outage events in a row (reset by any reply): 1 when an outage begins. */
  eventsInRow = 0;
  /** Calls numbered up to this one were in flight when the last event began. */
  private eventSeq = -1;
  private probeAt = 0;
  private backoffMs: number;
  private probing = false;
  /** Makes an open breaker half-open once its wait is over (`ready`). */
  private readyTimer: ReturnType<typeof setTimeout> | undefined;
  /** The store's connection is down (`connection`): the wait's end leaves an open breaker open. */
  private offline = false;

  constructor(
    readonly node: string,
    private readonly config: BreakerConfig | false,
    private readonly onChange: (health: NodeHealth) => void,
    /** The limiter's clock. */
    private readonly now: () => number = Date.now,
  ) {
    this.backoffMs = config === false ? FIRST_PROBE_MS : Math.min(FIRST_PROBE_MS, config.cooldownMs);
  }

  /** True when a call may go to the node now; while open, one probe at a time once its wait is over. */
  allow(now: number): boolean {
    if (this.state === 'closed') return true;
    if (this.probing || now < this.probeAt) return false;
    this.probing = true;
    this.transition('half-open');
    return true;
  }

  /** True when `allow(now)` would refuse, without taking the probe it would grant. */
  refuses(now: number): boolean {
    return this.state !== 'closed' && (this.probing || now < this.probeAt);
  }

  /** Milliseconds until the next probe may go out (0 when closed). */
  waitMs(now: number): number {
    return this.state === 'closed' ? 0 : Math.max(0, this.probeAt - now);
  }

  /** The node answered (a result, or an error that belongs to one key). */
  success(): void {
    this.eventsInRow = 0;
    this.offline = false;
    if (this.state === 'closed') return;
    this.close();
    this.probing = false;
    if (this.config !== false) this.backoffMs = Math.min(FIRST_PROBE_MS, this.config.cooldownMs);
    this.transition('closed');
  }

  /**
   * A reply came after its call was answered by the failure mode: the node is alive, so an open breaker
   * lets the next call probe at once (its timely reply closes the breaker; a late one does not).
   */
  lateReply(now: number): void {
    if (this.state === 'open' && !this.probing && this.probeAt > now) this.probeAt = now;
  }

  /**
   * A node-scoped failure of the call numbered `seq`; `lastSeq` is the number of the last call sent;
   * `slow`: the watchdog gave up on it. Returns true when it starts a new outage event.
   */
  failure(seq: number, lastSeq: number, now: number, slow: boolean): boolean {
    if (seq <= this.eventSeq) return false;
    this.eventSeq = lastSeq;
    this.eventsInRow += 1;
    const config = this.config;
    if (config === false) return true;
    if (this.state === 'closed') {
      if (this.eventsInRow < config.failureThreshold) return true;
    } else if (slow) {
      this.backoffMs = Math.min(this.backoffMs * 2, config.cooldownMs);
    }
    this.probing = false;
    this.probeAt = now + this.backoffMs;
    this.transition('open');
    this.armReady();
    return true;
  }

  /** Stops the timer (the limiter closed). */
  close(): void {
    clearTimeout(this.readyTimer);
    this.readyTimer = undefined;
  }

  private armReady(): void {
    clearTimeout(this.readyTimer);
    const armedAt = this.now();
    const timer = setTimeout(() => this.ready(armedAt), Math.max(0, this.probeAt - armedAt));
    timer.unref?.();
    this.readyTimer = timer;
  }

  /**
   * The store's connection closed (`offline`), or is ready again: then an open breaker whose wait is over
   * turns half-open (`ready`), as its timer would have.
   */
  connection(offline: boolean): void {
    this.offline = offline;
    if (!offline && this.state === 'open' && !this.probing) this.armReady();
    // Half-open already (a timeout opened it, its wait ended, and the socket's close came later, as on a
    // network partition): open again, since a probe would be refused at once.
    else if (offline && this.state === 'half-open' && !this.probing) this.transition('open');
  }

  /**
   * The wait is over, no call has taken the probe: half-open (the next call probes). A clock that stood still
   * since `armedAt` (virtual time) waits for that call; a connection that is down, for the client to be ready again.
   */
  private ready(armedAt: number): void {
    this.readyTimer = undefined;
    if (this.state !== 'open' || this.probing || this.offline) return;
    const now = this.now();
    if (now >= this.probeAt) this.transition('half-open');
    // A timer may fire before the clock reads its end (libuv times it from the loop's cached time): armed
    // again for the rest while the clock moves; a clock that did not move (virtual time) waits for a call.
    else if (now > armedAt) this.armReady();
  }

  private transition(state: BreakerState): void {
    if (this.state === state) return;
    this.state = state;
    this.onChange(this);
  }
}
