/**
 * @module `skipSuccessfulRequests` / `skipFailedRequests`: a request is charged at admission and its
 * charge given back when the response settles, by the rule in request-plans.ts (a client gone before
 * the end counts as failed).
 */
import type { Diagnostics } from '../../diagnostics.js';
import type { Limiter } from '../../limiter/limiter.js';
import type { Decision } from '../../types.js';
import { type FinishingResponse, onceSettled, type PlanHttpConfig } from './request-plans.js';
import type { UserHooks } from './user-hooks.js';

export class SettledRefunds<Req> {
  constructor(
    private readonly plans: PlanHttpConfig<Req>,
    private readonly limiter: Limiter,
    private readonly hooks: UserHooks,
  ) {}

  /** Gives `decision`'s charge back once `response` settles, if the request should not count. */
  whenSettled(request: Req, response: FinishingResponse, decision: Decision, diagnostics: Diagnostics): void {
    onceSettled(response, (finished) => {
      void this.settle(request, response, decision, diagnostics, finished);
    });
  }

  private async settle(
    request: Req,
    response: FinishingResponse,
    decision: Decision,
    diagnostics: Diagnostics,
    finished: boolean,
  ): Promise<void> {
    const { plans, hooks } = this;
    let success = false;
    if (finished) {
      const r = await hooks.call(() => plans.requestWasSuccessful(request, response));
      hooks.failed(diagnostics, 'requestWasSuccessful', r, 'the request counted as failed.');
      success = r.ok && r.value === true;
    }
    if (success ? !plans.skipSuccessfulRequests : !plans.skipFailedRequests) return;
    try {
      await this.limiter.refund(decision);
    } catch (error) {
      diagnostics.warn('WRN_RL_REFUND_FAILED', 'giving back the charge of a request that should not count failed; it stays counted.', {
        err: error,
      });
    }
  }
}
