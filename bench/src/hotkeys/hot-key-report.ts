/**
 * @module Section H in RESULTS.md and its Targets rows (issue 27): one hot key through `localBatch` at
 * least 10x the round trip in the same run, the admitted total never above the allowance, the
 * under-admission within the documented bound, and cold keys no slower with `localBatch` than without (within the run's noise: at least 0.9x),
 * read as the median over rounds of each round's ratio from the cold pair (both subjects in the same processes, taking turns).
 */
import { median } from '../stats.js';
import { type HotKeyResult, type HotKeyRow, SLICE_MS } from './hot-key-section.js';

export interface HotKeyTarget {
  readonly target: string;
  readonly figure: string;
  readonly met: boolean | undefined;
}

const row = (r: HotKeyResult, cell: string): HotKeyRow | undefined => r.rows.find((x) => x.cell === cell);

export function hotKeyTargets(r: HotKeyResult): HotKeyTarget[] {
  const out: HotKeyTarget[] = [];
  const rt = row(r, 'hot-roundtrip');
  const b = row(r, 'hot-batched');
  out.push(
    rt === undefined || b === undefined
      ? { target: 'one hot key: localBatch >= 10x the round trip (decisions/s)', figure: 'not measured: cell missing', met: undefined }
      : {
          target: 'one hot key: localBatch >= 10x the round trip (decisions/s)',
          figure: `${(b.decisionsPerSec / rt.decisionsPerSec).toFixed(1)}x (${Math.round(b.decisionsPerSec)} against ${Math.round(rt.decisionsPerSec)})`,
          met: b.decisionsPerSec >= 10 * rt.decisionsPerSec,
        },
  );
  const hot = r.rows.filter((x) => !Number.isNaN(x.allowance));
  out.push(
    hot.length === 0
      ? { target: 'admitted never above the allowance', figure: 'not measured: cell missing', met: undefined }
      : {
          target: 'admitted never above the allowance',
          figure: hot.map((x) => `${x.cell}: ${x.admitted} of ${x.allowance}`).join('; '),
          met: hot.every((x) => x.admitted <= x.allowance),
        },
  );
  const lim = row(r, 'hot-batched-limited');
  // The documented bound: with P processes at most P x maxShare (0.1 by default) of a limit is held outside Redis.
  out.push(
    lim === undefined || lim.decisions <= lim.allowance
      ? {
          target: 'under-admission within processes x maxShare of the limit',
          figure: lim === undefined ? 'not measured: cell missing' : 'not measured: the run did not reach its limit',
          met: undefined,
        }
      : {
          target: 'under-admission within processes x maxShare of the limit',
          figure: `${lim.allowance - lim.admitted} units (${((100 * (lim.allowance - lim.admitted)) / lim.allowance).toFixed(2)} % of ${lim.allowance}; bound ${Math.round(r.processes * 0.1 * lim.allowance)})`,
          met: lim.allowance - lim.admitted <= r.processes * 0.1 * lim.allowance,
        },
  );
  const cold = 'cold keys: localBatch no slower than without (>= 0.9x)';
  const rounds = r.coldRounds;
  if (rounds.length === 0) {
    out.push({ target: cold, figure: 'not measured: cell missing', met: undefined });
  } else {
    const ratio = median(rounds.map((x) => x.throughput));
    const list = (f: (x: (typeof rounds)[number]) => number): string => rounds.map((x) => f(x).toFixed(2)).join(' / ');
    out.push({
      target: cold,
      figure:
        `${ratio.toFixed(2)}x decisions/s (median of rounds ${list((x) => x.throughput)}, both subjects in the same processes taking turns); ` +
        `CPU per decision ${median(rounds.map((x) => x.cpu)).toFixed(2)}x (rounds ${list((x) => x.cpu)})`,
      met: ratio >= 0.9,
    });
  }
  return out;
}

export function renderHotKeySection(
  r: HotKeyResult,
  table: (h: readonly string[], rows: readonly (readonly string[])[]) => string,
): string {
  const n = (v: number): string => Math.round(v).toLocaleString('en-US');
  const lines = [
    '## H. Hot keys on one Redis (issue 27)',
    '',
    `${r.processes} processes at once, each one connection and ${r.inFlight} checks in flight for ${r.runMs} ms, on one redis-server; ` +
      'fixed-window, one window longer than the run. Decisions/s over all processes; p50 and p99 per decision in process (medians over processes and rounds); ' +
      'calls: commands sent to Redis per decision; held at end: units charged in Redis that the processes still held when the run stopped ' +
      '(given back on close). The limited cell sets the limit to about half of what the batched processes decide in a run. ' +
      'The two cold-key rows come from one cell: each process holds both subjects (own connection, own key names) and they take turns in ' +
      `${SLICE_MS} ms slices (A B B A, the first alternating per round) after untimed ones that warm both up, each running ${r.runMs} ms in all; ` +
      "CPU: the processes' CPU time in a subject's slices per decision.",
    '',
    table(
      ['cell', 'keys', 'decisions/s', 'p50', 'p99', 'CPU', 'calls/decision', 'admitted', 'allowance', 'held at end'],
      r.rows.map((x) => [
        x.label,
        n(x.keys),
        n(x.decisionsPerSec),
        `${x.p50Us.toFixed(1)} µs`,
        `${x.p99Us.toFixed(1)} µs`,
        Number.isNaN(x.cpuUsPerDecision) ? '—' : `${x.cpuUsPerDecision.toFixed(1)} µs`,
        x.callsPerDecision.toFixed(4),
        n(x.admitted),
        Number.isNaN(x.allowance) || x.limit >= 1e9 ? 'not reached' : n(x.allowance),
        n(x.heldAtEnd),
      ]),
    ),
  ];
  if (r.error !== undefined) lines.push('', `Error: ${r.error}`);
  return lines.join('\n');
}
