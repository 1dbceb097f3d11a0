/**
 * @module Shadow mode's would-be rejections, counted and logged as one `WRN_RL_SHADOW_LIMITED` line per
 * interval: what a rollout needs (how many, by which policy), at a fixed log cost, and no request data.
 */
import type { Diagnostics } from '../../diagnostics.js';
import { type Logger, safeLog } from '../../logging.js';

export interface ShadowSummary {
  /** Counts one would-be rejection by `policy` (`candidate`: a shadow candidate policy, not shadow mode). */
  count(policy: string, candidate: boolean): void;
  close(): void;
}

export function createShadowSummary(logger: Logger, intervalMs: number, diagnostics: Diagnostics): ShadowSummary {
  const on = diagnostics.enabled('WRN_RL_SHADOW_LIMITED');
  let wouldReject = 0;
  let candidates = 0;
  const byPolicy: Record<string, number> = Object.create(null);
  let timer: ReturnType<typeof setTimeout> | undefined;

  function flush(): void {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    if (wouldReject + candidates === 0) return;
    safeLog(
      logger,
      'warn',
      { code: 'WRN_RL_SHADOW_LIMITED', wouldReject, candidateRejections: candidates, byPolicy: { ...byPolicy }, intervalMs },
      `WRN_RL_SHADOW_LIMITED: shadow policies would have rejected ${wouldReject + candidates} requests in the last interval; all were let through`,
    );
    wouldReject = 0;
    candidates = 0;
    for (const k of Object.keys(byPolicy)) delete byPolicy[k];
  }

  return {
    count(policy, candidate) {
      if (!on) return;
      if (candidate) candidates += 1;
      else wouldReject += 1;
      byPolicy[policy] = (byPolicy[policy] ?? 0) + 1;
      if (timer === undefined) {
        timer = setTimeout(flush, intervalMs);
        timer.unref?.();
      }
    },
    close: flush,
  };
}
