/**
 * @module The older header formats, byte-compatible with what express-rate-limit 8 sends, for clients
 * written against them. They carry one policy: the binding one (on a 429, the one with the longest
 * wait; otherwise the one with the least left). "Reset" uses the same seconds as draft-11's `t`.
 * - `'draft-6'`: `RateLimit-Policy: 100;w=60`, `RateLimit-Limit`, `RateLimit-Remaining`, and
 *   `RateLimit-Reset` (seconds).
 * - `'draft-7'`: `RateLimit-Policy: 100;w=60` and `RateLimit: limit=100, remaining=99, reset=60`.
 * - `'legacy'`: `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `Date` (the clock's time, so a client can
 *   correct for skew), `X-RateLimit-Reset` (Unix epoch seconds of the reset, rounded up, also on a 429
 *   whose wait is under a second), in express-rate-limit's order.
 * These are fixed formats of plain integers; draft-11 is the one that goes through a serializer.
 */
import type { Decision, PolicyResult } from '../../types.js';
import type { HeaderMode } from './header-mode.js';
import { type HeaderPair, type HeaderWriter, remainingUnits, resetSeconds, windowSeconds } from './header-values.js';

function bindingResult(decision: Decision): PolicyResult | undefined {
  const results = decision.policies;
  for (const r of results) if (r.name === decision.policy) return r;
  return results[0];
}

export function createCompatWriter(mode: Exclude<HeaderMode, 'draft-11' | false>): HeaderWriter {
  return {
    write(decision, exhausted, clock, into: HeaderPair[]) {
      const b = bindingResult(decision);
      if (b === undefined) return;
      const limit = String(b.limit);
      const remaining = String(remainingUnits(b));
      const waiting = exhausted && !b.allowed;
      if (mode === 'legacy') {
        const now = clock();
        const resetAt = now + (waiting ? b.retryAfterMs : b.resetMs);
        into.push(['X-RateLimit-Limit', limit], ['X-RateLimit-Remaining', remaining]);
        into.push(['Date', new Date(now).toUTCString()], ['X-RateLimit-Reset', String(Math.ceil(resetAt / 1000))]);
        return;
      }
      const reset = resetSeconds(b, waiting);
      const policy = `${limit};w=${windowSeconds(b.windowMs)}`;
      if (mode === 'draft-7') {
        into.push(['RateLimit-Policy', policy], ['RateLimit', `limit=${limit}, remaining=${remaining}, reset=${reset}`]);
        return;
      }
      into.push(
        ['RateLimit-Policy', policy],
        ['RateLimit-Limit', limit],
        ['RateLimit-Remaining', remaining],
        ['RateLimit-Reset', String(reset)],
      );
    },
  };
}
