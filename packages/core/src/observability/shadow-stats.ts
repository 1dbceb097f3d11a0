/**
 * @module What a shadow rollout needs to decide, per shadow policy: how often it agrees with the
 * enforced verdict, its would-block rate now and over a ring of recent intervals, how many distinct
 * clients it would block and which ones most. Fed by the decision observer; read by `limiter.stats()`.
 */
import { DistinctCount } from './distinct-count.js';
import { SpaceSaving } from './space-saving.js';

/** The would-block rate of one interval. */
export interface ShadowInterval {
  /** When the interval began (the limiter's clock, ms). */
  readonly startMs: number;
  readonly checks: number;
  readonly wouldBlock: number;
}

/** A key the shadow policy would block often. */
export interface AffectedKey {
  readonly key: string;
  /** Would-be rejections, an upper bound at most `error` above the truth (Space-Saving). */
  readonly count: number;
  readonly error: number;
}

/** One shadow policy's record since the limiter started (or `resetStats()`). */
export interface ShadowPolicyStats {
  readonly name: string;
  /** Decisions it judged. */
  readonly checks: number;
  /** Decisions it would have rejected. */
  readonly wouldBlock: number;
  /** wouldBlock / checks (0 when nothing was checked). */
  readonly wouldBlockRate: number;
  /** Share of decisions where its verdict equals the enforced one (1 when nothing was checked). */
  readonly agreement: number;
  /** It would block what the enforced policies let through. */
  readonly shadowOnly: number;
  /** The enforced policies block what it would let through. */
  readonly enforcedOnly: number;
  /** Distinct keys it would have blocked at least once (HyperLogLog estimate, about 3 % error). */
  readonly affectedKeys: number;
  /** Keys it would block most, most first. */
  readonly topKeys: readonly AffectedKey[];
  /** The recent intervals, oldest first, the current (partial) one last. */
  readonly intervals: readonly ShadowInterval[];
  readonly intervalMs: number;
}

const TOP_KEYS_SIZE = 64;
const TOP_KEYS_SHOWN = 5;

export class ShadowPolicyTracker {
  checks = 0;
  wouldBlock = 0;
  agree = 0;
  shadowOnly = 0;
  enforcedOnly = 0;
  private readonly keys = new SpaceSaving(TOP_KEYS_SIZE);
  private readonly distinct = new DistinctCount();
  /** Ring of intervals: starts, checks, would-block counts; `head` is the current one. */
  private readonly starts: Float64Array;
  private readonly ringChecks: Float64Array;
  private readonly ringBlocks: Float64Array;
  private head = 0;
  private filled = 1;

  constructor(
    readonly name: string,
    readonly intervalMs: number,
    readonly ringSize: number,
  ) {
    this.starts = new Float64Array(ringSize);
    this.ringChecks = new Float64Array(ringSize);
    this.ringBlocks = new Float64Array(ringSize);
    this.starts[0] = Number.NaN;
  }

  record(key: string, shadowBlocks: boolean, enforcedBlocks: boolean, now: number): void {
    this.advance(now);
    this.checks += 1;
    this.ringChecks[this.head] = (this.ringChecks[this.head] as number) + 1;
    if (shadowBlocks) {
      this.wouldBlock += 1;
      this.ringBlocks[this.head] = (this.ringBlocks[this.head] as number) + 1;
      this.keys.offer(key, '', 0);
      this.distinct.add(key);
      if (enforcedBlocks) this.agree += 1;
      else this.shadowOnly += 1;
    } else if (enforcedBlocks) {
      this.enforcedOnly += 1;
    } else {
      this.agree += 1;
    }
  }

  snapshot(now: number): ShadowPolicyStats {
    this.advance(now);
    const intervals: ShadowInterval[] = [];
    for (let i = this.filled - 1; i >= 0; i--) {
      const at = (this.head - i + this.ringSize) % this.ringSize;
      intervals.push({
        startMs: this.starts[at] as number,
        checks: this.ringChecks[at] as number,
        wouldBlock: this.ringBlocks[at] as number,
      });
    }
    return {
      name: this.name,
      checks: this.checks,
      wouldBlock: this.wouldBlock,
      wouldBlockRate: this.checks === 0 ? 0 : this.wouldBlock / this.checks,
      agreement: this.checks === 0 ? 1 : this.agree / this.checks,
      shadowOnly: this.shadowOnly,
      enforcedOnly: this.enforcedOnly,
      affectedKeys: this.wouldBlock === 0 ? 0 : Math.max(1, this.distinct.estimate()),
      topKeys: this.keys
        .entries()
        .slice(0, TOP_KEYS_SHOWN)
        .map((e) => ({ key: e.key, count: e.count, error: e.error })),
      intervals,
      intervalMs: this.intervalMs,
    };
  }

  reset(now: number): void {
    this.checks = 0;
    this.wouldBlock = 0;
    this.agree = 0;
    this.shadowOnly = 0;
    this.enforcedOnly = 0;
    this.keys.clear();
    this.distinct.clear();
    this.ringChecks.fill(0);
    this.ringBlocks.fill(0);
    this.head = 0;
    this.filled = 1;
    this.starts[0] = now;
  }

  /** Moves to the interval holding `now`, clearing the ones skipped (at most the whole ring). */
  private advance(now: number): void {
    if (Number.isNaN(this.starts[this.head])) this.starts[this.head] = now;
    const start = this.starts[this.head] as number;
    if (now < start + this.intervalMs) return;
    const steps = Math.floor((now - start) / this.intervalMs);
    for (let s = 1; s <= Math.min(steps, this.ringSize); s++) {
      this.head = (this.head + 1) % this.ringSize;
      this.ringChecks[this.head] = 0;
      this.ringBlocks[this.head] = 0;
      this.starts[this.head] = start + (steps - Math.min(steps, this.ringSize) + s) * this.intervalMs;
      if (this.filled < this.ringSize) this.filled += 1;
    }
  }
}
