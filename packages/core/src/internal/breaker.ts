/**
 * @module A circuit breaker for the store. Closed: calls go through. After `failureThreshold`
 * consecutive failures it opens: calls are refused (answered by the failure mode) for `cooldownMs`.
 * Then it lets exactly one probe through (half-open); the probe's success closes it, its failure
 * opens it again. Time comes from the limiter's clock, so tests drive it in virtual time.
 */

export type BreakerState = 'closed' | 'open' | 'half-open';

export class Breaker {
  private failures = 0;
  private openUntil = 0;
  private probing = false;
  state: BreakerState = 'closed';

  constructor(
    private readonly failureThreshold: number,
    private readonly cooldownMs: number,
    private readonly onChange: (state: BreakerState) => void,
  ) {}

  /** True when a call may go to the store now; in half-open state only one probe at a time. */
  allow(now: number): boolean {
    if (this.state === 'closed') return true;
    if (this.state === 'open') {
      if (now < this.openUntil) return false;
      this.transition('half-open');
    }
    if (this.probing) return false;
    this.probing = true;
    return true;
  }

  /** Milliseconds until the next probe may go out (0 when closed). */
  waitMs(now: number): number {
    return this.state === 'open' ? Math.max(0, this.openUntil - now) : 0;
  }

  success(): void {
    this.failures = 0;
    this.probing = false;
    if (this.state !== 'closed') this.transition('closed');
  }

  failure(now: number): void {
    this.failures += 1;
    const wasProbe = this.probing;
    this.probing = false;
    if (wasProbe || (this.state === 'closed' && this.failures >= this.failureThreshold)) {
      this.openUntil = now + this.cooldownMs;
      this.transition('open');
    }
  }

  private transition(state: BreakerState): void {
    this.state = state;
    this.onChange(state);
  }
}
