/**
 * @module Ways to call a partner with a quota, each against a fresh partner:
 * - `burstWithRetry`: fire everything at once through `withRetry(fetch)`; refused requests come back
 *   after the partner's `Retry-After`, with jitter, and usually all succeed (a refusal past the retry
 *   budget is returned as the partner's 429);
 * - `burstThroughShaper`: queue everything in a shaper holding the partner's quota on our side, so no
 *   request is ever refused (and a task that cannot start within its deadline is dropped, not sent late);
 * - `pacedPerApiKey`: `withRetry` with `pacing` keyed by API key against a partner with a quota per key:
 *   one key's burst waits for its own quota, and never holds the other key's calls.
 */
import { createShaper, type RateLimitClientError, withRetry } from '@tollgate/client';
import { PARTNER_LIMIT, startPartner } from './partner.js';

export interface ScenarioResult {
  /** Status of each call, or the error code of a task the shaper dropped. */
  readonly outcomes: (number | string)[];
  /** What the partner received, and served. */
  readonly received: number;
  readonly served: number;
  readonly ms: number;
}

export async function burstWithRetry(calls: number): Promise<ScenarioResult & { retries: number; budgetRefused: number }> {
  const partner = await startPartner();
  const api = withRetry(fetch, { timeoutMs: 30_000 });
  const start = performance.now();
  try {
    const outcomes = await Promise.all(
      Array.from({ length: calls }, async () => {
        const res = await api(`${partner.url}/send`);
        await res.arrayBuffer();
        return res.status;
      }),
    );
    const { retries, budgetRefused } = api.stats();
    return { outcomes, ...partner.counts, ms: Math.round(performance.now() - start), retries, budgetRefused };
  } finally {
    await partner.close();
  }
}

export async function burstThroughShaper(calls: number, maxDelayMs: number): Promise<ScenarioResult> {
  const partner = await startPartner();
  // Our side of the partner's quota; a RedisStore here would share it between all our processes. The
  // burst is one below the partner's: requests leave at exactly the partner's rate, but network and
  // event-loop delays can bunch them on arrival, and one token of slack absorbs that.
  const shaper = createShaper({
    policies: { algorithm: 'gcra', limit: PARTNER_LIMIT, windowMs: 1_000, burst: PARTNER_LIMIT - 1 },
    maxDelayMs,
  });
  const start = performance.now();
  try {
    const outcomes = await Promise.all(
      Array.from({ length: calls }, (_, i) =>
        shaper
          .schedule(
            async () => {
              const res = await fetch(`${partner.url}/send`);
              await res.arrayBuffer();
              return res.status;
            },
            { priority: i === calls - 1 ? 1 : 0 },
          )
          .catch((e: RateLimitClientError) => e.code),
      ),
    );
    return { outcomes, ...partner.counts, ms: Math.round(performance.now() - start) };
  } finally {
    await shaper.close();
    await partner.close();
  }
}

export interface KeyResult {
  /** Status of each of the key's calls. */
  readonly outcomes: number[];
  /** When the key's last call was answered, ms from the key's first call. */
  readonly lastMs: number;
}

export interface PacedResult {
  readonly a: KeyResult;
  readonly b: KeyResult;
  /** Key A's calls still waiting for their quota when key B's last call was answered. */
  readonly aPendingWhenBDone: number;
  /** What the partner received, and served. */
  readonly received: number;
  readonly served: number;
  readonly pacedMs: number;
  readonly pacedRefused: number;
}

/**
 * Key A fires `aCalls` at once, more than its quota; `bDelayMs` later, with A's quota spent and A's calls
 * waiting for it, key B fires `bCalls`. One `withRetry` function carries both keys: pacing keeps a quota
 * per key (`pacing.key`), so B's calls go at once (after its own first answer) while A's wait.
 */
export async function pacedPerApiKey(aCalls: number, bCalls: number, bDelayMs = 100): Promise<PacedResult> {
  const partner = await startPartner({ perApiKey: true });
  const api = withRetry(fetch, { pacing: { key: (r) => r.headers.get('x-api-key') ?? undefined } });
  let aPending = aCalls;
  const call = async (apiKey: string): Promise<number> => {
    const res = await api(`${partner.url}/send`, { headers: { 'x-api-key': apiKey } });
    await res.arrayBuffer();
    return res.status;
  };
  const burst = async (apiKey: string, n: number, onEach: () => void = () => undefined): Promise<KeyResult> => {
    const start = performance.now();
    const outcomes = await Promise.all(
      Array.from({ length: n }, async () => {
        const status = await call(apiKey);
        onEach();
        return status;
      }),
    );
    return { outcomes, lastMs: Math.round(performance.now() - start) };
  };
  try {
    const a = burst('key-a', aCalls, () => aPending--);
    await new Promise((resolve) => setTimeout(resolve, bDelayMs));
    const b = await burst('key-b', bCalls);
    const aPendingWhenBDone = aPending;
    const aResult = await a;
    const { pacedMs, pacedRefused } = api.stats();
    return { a: aResult, b, aPendingWhenBDone, ...partner.counts, pacedMs: Math.round(pacedMs), pacedRefused };
  } finally {
    await partner.close();
  }
}
