/**
 * @module Section H in RESULTS.md and its Targets rows (issue 27): one hot key through `localBatch` at
 * least 10x the round trip in the same run, the admitted total never above the allowance, the
 * under-admission within the documented bound, and cold keys no slower with `localBatch` than without (within the run's noise: at least 0.9x).
 */
import type { HotKeyResult, HotKeyRow } from './hot-key-section.js';

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
  const cr = row(r, 'cold-roundtrip');
  const cb = row(r, 'cold-batched');
  out.push(
    cr === undefined || cb === undefined
      ? { target: 'cold keys: localBatch no slower than without (>= 0.9x)', figure: 'not measured: cell missing', met: undefined }
      : {
          target: 'cold keys: localBatch no slower than without (>= 0.9x)',
          figure: `${(cb.decisionsPerSec / cr.decisionsPerSec).toFixed(2)}x`,
          met: cb.decisionsPerSec >= 0.9 * cr.decisionsPerSec,
        },
  );
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
      '(given back on close). The limited cell sets the limit to about half of what the batched processes decide in a run.',
    '',
    table(
      ['cell', 'keys', 'decisions/s', 'p50', 'p99', 'calls/decision', 'admitted', 'allowance', 'held at end'],
      r.rows.map((x) => [
        x.label,
        n(x.keys),
        n(x.decisionsPerSec),
        `${x.p50Us.toFixed(1)} µs`,
        `${x.p99Us.toFixed(1)} µs`,
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
