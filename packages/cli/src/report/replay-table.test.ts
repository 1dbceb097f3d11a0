/**
 * @module The terminal summary of a replay: as many clients as the report holds (`--top`), and keys or
 * malformed-line text that could drive the terminal (escape sequences, line breaks) shown escaped.
 */
import { describe, expect, it } from 'vitest';
import { parseCandidates } from '../replay/candidates.js';
import { createReplayEngine } from '../replay/replay-engine.js';
import { renderReplayTable } from './replay-table.js';
import { escapeControl, formatShare } from './text-table.js';

const T0 = 1_700_000_000_000;
const POLICY = '{"algorithm":"fixed-window","limit":1,"windowMs":10000}';

/** Every client in `keys` sends two requests: the second is rejected. */
function report(keys: readonly string[], top?: number) {
  const engine = createReplayEngine(parseCandidates([POLICY, POLICY]), top === undefined ? {} : { top });
  for (const k of keys) {
    engine.push(T0, k, 1);
    engine.push(T0 + 1, k, 1);
  }
  return engine.report({
    files: [],
    lines: keys.length * 2 + 1,
    malformed: 1,
    malformedSamples: [{ file: 'x\u001b[2J.log', line: 3, reason: 'no time in "\u001b]0;owned\u0007\nfake row"', text: '' }],
  });
}

/** The client rows of the table of `title`. */
function clientRows(table: string, title: string): string[] {
  const lines = table.split('\n');
  const start = lines.findIndex((l) => l.endsWith(title));
  const end = lines.findIndex((l, i) => i > start && l === '');
  return lines.slice(start + 3, end === -1 ? undefined : end);
}

describe('renderReplayTable', () => {
  const keys = Array.from({ length: 14 }, (_, i) => `client-${String(i).padStart(2, '0')}`);

  it('lists as many clients as the report holds: --top, 10 by default', () => {
    expect(clientRows(renderReplayTable(report(keys)), 'clients rejected most')).toHaveLength(10);
    expect(clientRows(renderReplayTable(report(keys, 12)), 'clients rejected most')).toHaveLength(12);
    expect(clientRows(renderReplayTable(report(keys, 2)), 'clients rejected most')).toHaveLength(2);
    expect(clientRows(renderReplayTable(report(keys, 12), 3), 'clients rejected most')).toHaveLength(3);
  });

  it('escapes control characters in keys, file names and malformed-line reasons', () => {
    const table = renderReplayTable(report(['evil\u001b[31m\nkey', 'plain']));
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what it looks for.
    expect(table).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
    expect(table).toContain('evil\\u001b[31m\\u000akey');
    expect(table).toContain('  x\\u001b[2J.log:3: no time in "\\u001b]0;owned\\u0007\\u000afake row"');
    // One row per client: the newline did not split one.
    expect(clientRows(table, 'clients rejected most')).toHaveLength(2);
  });
});

describe('renderReplayTable past --max-keys', () => {
  it('says "more than" the clients it tracked, and what evictions did to the verdicts', () => {
    const engine = createReplayEngine(parseCandidates([POLICY]), { maxKeys: 2 });
    for (const k of ['a', 'b', 'c', 'd']) engine.push(T0, k, 1);
    const table = renderReplayTable(engine.report());
    expect(table).toMatch(/^Replayed 4 requests from more than 2 clients,/);
    expect(table).toContain('Note: 2 limiter entries were evicted to stay within --max-keys, as the MemoryStore does: the verdicts are');
    const exact = createReplayEngine(parseCandidates([POLICY]));
    exact.push(T0, 'a', 1);
    expect(renderReplayTable(exact.report())).toMatch(/^Replayed 1 request from 1 client,/);
    const one = createReplayEngine(parseCandidates([POLICY]), { maxKeys: 1 });
    for (const k of ['a', 'b']) one.push(T0, k, 1);
    expect(renderReplayTable(one.report())).toMatch(/^Replayed 2 requests from more than 1 client,/);
  });
});

describe('escapeControl', () => {
  it('escapes C0, DEL and C1 controls, line separators and bidi overrides as \\uXXXX and leaves other text alone', () => {
    expect(escapeControl('a\tb\r\n\u0000\u007f\u0085é😀"\\')).toBe('a\\u0009b\\u000d\\u000a\\u0000\\u007f\\u0085é😀"\\');
    expect(escapeControl('rtl\u202eevil\u2028x\u2066y\u200b')).toBe('rtl\\u202eevil\\u2028x\\u2066y\u200b');
  });
});

describe('formatShare', () => {
  it('says 0% and 100% only when exact, and a tenth of a percent elsewhere', () => {
    expect([0, 0.0004, 0.001, 0.1234, 0.999, 1999 / 2000, 1].map(formatShare)).toEqual([
      '0%',
      '<0.1%',
      '0.1%',
      '12.3%',
      '99.9%',
      '>99.9%',
      '100%',
    ]);
  });
});
