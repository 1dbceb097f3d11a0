/**
 * @module A one-line progress bar on a terminal's stderr, redrawn at most ten times a second; nothing at
 * all when stderr is not a terminal (a pipe or a file gets no escape codes).
 */

export interface ProgressTarget {
  readonly isTTY?: boolean;
  write(text: string): unknown;
}

export interface ProgressBar {
  update(done: number, total: number, detail: string): void;
  finish(): void;
}

const WIDTH = 30;

export function createProgressBar(target: ProgressTarget, now: () => number = () => performance.now()): ProgressBar {
  if (target.isTTY !== true) return { update() {}, finish() {} };
  let last = Number.NEGATIVE_INFINITY;
  let drawn = false;
  return {
    update(done, total, detail) {
      const t = now();
      if (t - last < 100) return;
      last = t;
      const share = total > 0 ? Math.min(1, done / total) : 0;
      const full = Math.round(share * WIDTH);
      target.write(`\r[${'#'.repeat(full)}${'.'.repeat(WIDTH - full)}] ${(share * 100).toFixed(0).padStart(3)}% ${detail}\x1b[K`);
      drawn = true;
    },
    finish() {
      if (drawn) target.write('\r\x1b[K');
    },
  };
}
