/**
 * @module Tests of how a run of some sections rewrites only those sections of RESULTS.md.
 */
import { describe, expect, it } from 'vitest';
import { mergeResults } from './merge-results.js';

const existing = [
  '# tollgate benchmarks',
  '',
  'Written by `pnpm bench` on day 1.',
  '',
  '## Targets (issue 5)',
  '',
  '| section | target | figure | verdict |',
  '| --- | --- | --- | --- |',
  '| A | a1 | 1 | met |',
  '| B | b1 | 2 | not met |',
  '| D | old d | 3 | met |',
  '',
  '## A. Decisions in process',
  '',
  'old A',
  '',
  '## B. Redis',
  '',
  'old B',
  '',
  '## D. Concurrency',
  '',
  'old D',
  '',
].join('\n');

const fresh = [
  '# tollgate benchmarks',
  '',
  'Written by `pnpm bench` on day 2.',
  '',
  '## Targets (issues 5, 11 and 12)',
  '',
  '| section | target | figure | verdict |',
  '| --- | --- | --- | --- |',
  '| D | new d | 4 | met |',
  '| O | new o | 5 | not met |',
  '',
  '## D. Concurrency',
  '',
  'new D',
  '',
  '## O. Observability',
  '',
  'new O',
  '',
].join('\n');

describe('mergeResults', () => {
  it('replaces the sections run and their target rows, keeps the rest, and places new sections in order', () => {
    const merged = mergeResults(existing, fresh, ['D', 'O'], '_stamp_');
    expect(merged).toBe(
      [
        '# tollgate benchmarks',
        '',
        'Written by `pnpm bench` on day 1.',
        '',
        '## Targets (issues 5, 11 and 12)',
        '',
        '| section | target | figure | verdict |',
        '| --- | --- | --- | --- |',
        '| A | a1 | 1 | met |',
        '| B | b1 | 2 | not met |',
        '| D | new d | 4 | met |',
        '| O | new o | 5 | not met |',
        '',
        '## A. Decisions in process',
        '',
        'old A',
        '',
        '## B. Redis',
        '',
        'old B',
        '',
        '## D. Concurrency',
        '',
        '_stamp_',
        '',
        'new D',
        '',
        '## O. Observability',
        '',
        '_stamp_',
        '',
        'new O',
        '',
      ].join('\n'),
    );
  });

  it('inserts a section missing from the file before the sections that follow it', () => {
    const merged = mergeResults(existing.replace(/## D\. Concurrency\n\nold D\n/, ''), fresh, ['D'], '_s_');
    expect(merged.indexOf('## B. Redis')).toBeLessThan(merged.indexOf('## D. Concurrency'));
    expect(merged).toContain('new D');
    expect(merged).not.toContain('new O');
    expect(merged).not.toContain('| O |');
  });
});
