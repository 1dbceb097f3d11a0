/**
 * @module Tests of the command-line parser.
 */
import { describe, expect, it } from 'vitest';
import { parseBenchOptions } from './cli-options.js';

describe('parseBenchOptions', () => {
  it('runs everything in full mode by default', () => {
    expect(parseBenchOptions([])).toEqual({
      quick: false,
      smoke: false,
      sections: ['A', 'B', 'C', 'D', 'H', 'I', 'O', 'R'],
      only: undefined,
      out: undefined,
      profile: false,
      load: undefined,
      help: false,
    });
  });

  it('makes --smoke imply --quick and reads values', () => {
    const o = parseBenchOptions(['--smoke', '--sections', 'o,c,a,d', '--only', 'gcra', '--out', '/tmp/r.md', '--profile']);
    expect(o.quick).toBe(true);
    expect(o.smoke).toBe(true);
    expect(o.sections).toEqual(['A', 'C', 'D', 'O']);
    expect(o.only?.test('A/GCRA/1 key')).toBe(true);
    expect(o.out).toBe('/tmp/r.md');
    expect(o.profile).toBe(true);
    expect(parseBenchOptions(['--load', 'autocannon']).load).toBe('autocannon');
  });

  it('ignores the -- separator pnpm may pass through', () => {
    expect(parseBenchOptions(['--', '--quick']).quick).toBe(true);
  });

  it('rejects unknown flags, unknown sections, missing values and bad patterns', () => {
    expect(() => parseBenchOptions(['--fast'])).toThrow(/unknown option '--fast'/);
    expect(() => parseBenchOptions(['--sections', 'A,E'])).toThrow(/unknown section 'E'/);
    expect(() => parseBenchOptions(['--out'])).toThrow(/--out needs a value/);
    expect(() => parseBenchOptions(['--only', '--quick'])).toThrow(/--only needs a value/);
    expect(() => parseBenchOptions(['--only', '('])).toThrow(/not a regular expression/);
    expect(() => parseBenchOptions(['--load', 'ab'])).toThrow(/expected wrk or autocannon/);
  });
});
