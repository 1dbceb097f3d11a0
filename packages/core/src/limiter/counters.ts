/**
 * @module The counters behind `limiter.stats()`: every check, the ones the enforced policies limited,
 * the shadow policies' disagreements, and the checks the failure mode answered. One object, written
 * where a decision is built (build-decision.ts), where the failure mode answers (Decider.skipped,
 * decide.ts) or accounted after a queue (leases/), read by `stats()`.
 */
import type { CompiledPlan } from '../plans/compiled-plan.js';
import type { Decision } from '../types.js';

export class Counters {
  /** Every check. */
  requests = 0;
  /** Checks the enforced policies rejected. */
  limited = 0;
  /** Checks the shadow policies would have rejected. */
  shadowLimited = 0;
  /** Shadow would block what the enforced policies let through. */
  shadowOnly = 0;
  /** The enforced policies rejected what shadow would have let through. */
  enforcedOnly = 0;
  /** Checks the failure mode answered. */
  storeErrors = 0;

  /** Counts a shadow verdict beside the enforced one (`limited`). */
  shadow(shadowAllowed: boolean, limited: boolean): void {
    if (!shadowAllowed) {
      this.shadowLimited += 1;
      if (!limited) this.shadowOnly += 1;
    } else if (limited) {
      this.enforcedOnly += 1;
    }
  }

  /** Counts a decision made without counting (a queued request's last attempt), policy by policy. */
  decision(d: Decision, cp: CompiledPlan): void {
    this.requests += 1;
    if (d.limited) this.limited += 1;
    d.policies.forEach((r, i) => {
      if (!r.allowed) cp.rejected[i] = (cp.rejected[i] as number) + 1;
    });
    const shadow = d.shadow;
    if (shadow === undefined) return;
    shadow.policies.forEach((r, i) => {
      if (!r.allowed) cp.rejected[cp.enforcedCount + i] = (cp.rejected[cp.enforcedCount + i] as number) + 1;
    });
    this.shadow(shadow.allowed, d.limited);
  }

  reset(): void {
    this.requests = 0;
    this.limited = 0;
    this.shadowLimited = 0;
    this.shadowOnly = 0;
    this.enforcedOnly = 0;
    this.storeErrors = 0;
  }
}
