/**
 * @module Shadow mode's would-be rejections, counted and logged as one `WRN_RL_SHADOW_LIMITED` line per
 * interval: what a rollout needs (how many, by which policy), at a fixed log cost, and no request data.
 */
import type { Diagnostics } from '../../diagnostics.js';
import { type Logger, safeLog } from '../../logging.js';

export interface ShadowSummary {
  /**
   * Counts one request that shadow mode (`modePolicy`, the policy whose would-be rejection it is) or a
   * shadow candidate (`candidatePolicy`) would have rejected; `rejected`: it was rejected anyway (by the
   * enforced policies beside a candidate, or the failure mode), so it was not let through.
   */
  count(modePolicy: string | undefined, candidatePolicy: string | undefined, rejected: boolean): void;
  close(): void;
}

export function createShadowSummary(logger: Logger, intervalMs: number, diagnostics: Diagnostics): ShadowSummary {
  const on = diagnostics.enabled('WRN_RL_SHADOW_LIMITED');
  let requests = 0;
  let rejected = 0;
  let wouldReject = 0;
  let candidates = 0;
  const byPolicy: Record<string, number> = Object.create(null);
  let timer: ReturnType<typeof setTimeout> | undefined;

  function flush(): void {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    if (requests === 0) return;
    const fate =
      rejected === 0
        ? 'all were let through'
        : rejected === requests
          ? `${requests === 1 ? 'it was' : 'all were'} rejected anyway`
          : `${requests - rejected} ${requests - rejected === 1 ? 'was' : 'were'} let through, the other ${rejected} ${rejected === 1 ? 'was' : 'were'} rejected anyway`;
    safeLog(
      logger,
      'warn',
      {
        code: 'WRN_RL_SHADOW_LIMITED',
        wouldReject,
        candidateRejections: candidates,
        byPolicy: { ...byPolicy },
        intervalMs,
        requests,
        enforcedRejected: rejected,
      },
      `WRN_RL_SHADOW_LIMITED: shadow policies would have rejected ${requests} ${requests === 1 ? 'request' : 'requests'} in the last interval; ${fate}`,
    );
    requests = 0;
    rejected = 0;
    wouldReject = 0;
    candidates = 0;
    for (const k of Object.keys(byPolicy)) delete byPolicy[k];
  }

  function add(policy: string): void {
    byPolicy[policy] = (byPolicy[policy] ?? 0) + 1;
  }

  return {
    count(modePolicy, candidatePolicy, enforcedRejected) {
      if (!on) return;
      requests += 1;
      if (enforcedRejected) rejected += 1;
      if (modePolicy !== undefined) {
        wouldReject += 1;
        add(modePolicy);
      }
      if (candidatePolicy !== undefined) {
        candidates += 1;
        // The same policy named by both verdicts (shadow mode over the candidate's own policy) counts once.
        if (candidatePolicy !== modePolicy) add(candidatePolicy);
      }
      if (timer === undefined) {
        timer = setTimeout(flush, intervalMs);
        timer.unref?.();
      }
    },
    close: flush,
  };
}
