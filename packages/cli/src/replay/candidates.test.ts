/**
 * @module --policy values: a policy, a list, a plan, JSON text or a file, validated by the core.
 */
import { RateLimitConfigError } from '@tollgate/core';
import { describe, expect, it } from 'vitest';
import { CliError } from '../cli-error.js';
import { describePolicies, parseCandidate, parseCandidates } from './candidates.js';

describe('--policy values', () => {
  it('takes a policy, a list of policies, or a plan, as JSON text or a file', () => {
    expect(parseCandidate('{"limit":100,"windowMs":60000}', 0)).toEqual({
      label: 'gcra 100/60s',
      policies: [{ limit: 100, windowMs: 60000 }],
    });
    expect(
      parseCandidate('[{"algorithm":"token-bucket","limit":10,"windowMs":1000,"burst":20},{"name":"h","limit":1000,"windowMs":3600000}]', 0)
        .label,
    ).toBe('token-bucket 10/1s burst 20 + gcra 1000/1h');
    const files: Record<string, string> = { 'plan.json': '{"name":"proposal B","policies":[{"limit":5,"windowMs":1000}]}' };
    expect(parseCandidate('plan.json', 0, (p) => files[p] ?? '')).toEqual({
      label: 'proposal B',
      policies: [{ limit: 5, windowMs: 1000 }],
    });
  });

  it("names a list's unnamed policies by their shape, as the README writes the list: before, ERR_RL_DUPLICATE_POLICY (both 'default')", () => {
    expect(parseCandidate('[{"limit":10,"windowMs":1000},{"limit":1000,"windowMs":3600000}]', 0).policies.map((p) => p.name)).toEqual([
      '10/1s',
      '1000/1h',
    ]);
    expect(
      parseCandidate(
        '[{"limit":10,"windowMs":1000},{"algorithm":"fixed-window","limit":10,"windowMs":1000},{"name":"h","limit":5,"windowMs":60000}]',
        0,
      ).policies.map((p) => p.name),
    ).toEqual(['10/1s', '10/1s #2', 'h']);
    // Names the user gave stay, and clash as the core says.
    expect(() => parseCandidate('[{"name":"a","limit":1,"windowMs":1000},{"name":"a","limit":2,"windowMs":1000}]', 0)).toThrow(
      /ERR_RL_DUPLICATE_POLICY/,
    );
    expect(parseCandidate('{"limit":10,"windowMs":1000}', 0).policies[0]?.name).toBeUndefined();
  });

  it('lets the core validate, naming the --policy', () => {
    expect(() => parseCandidate('{"limit":-1,"windowMs":1000}', 1)).toThrow(RateLimitConfigError);
    expect(() => parseCandidate('{"limit":-1,"windowMs":1000}', 1)).toThrow(/^--policy #2: ERR_RL_INVALID_LIMIT/);
    expect(() => parseCandidate('{"limit":1,"windowMs":1000,"burts":2}', 0)).toThrow(/ERR_RL_UNKNOWN_OPTION/);
  });

  it('refuses what is neither JSON nor a readable file, and plans with unknown keys', () => {
    expect(() =>
      parseCandidate('nope.json', 0, () => {
        throw Object.assign(new Error('x'), { code: 'ENOENT' });
      }),
    ).toThrow(CliError);
    expect(() => parseCandidate('{"limit":', 0)).toThrow(/not valid JSON/);
    expect(() => parseCandidate('{"policies":[],"mode":"shadow"}', 0)).toThrow(/unexpected 'mode'/);
  });

  it('reads a policy file that starts with a UTF-8 byte order mark (before: "not valid JSON")', () => {
    const files: Record<string, string> = { 'bom.json': '\uFEFF{"limit":5,"windowMs":1000}' };
    expect(parseCandidate('bom.json', 0, (p) => files[p] ?? '')).toEqual({ label: 'gcra 5/1s', policies: [{ limit: 5, windowMs: 1000 }] });
  });

  it.each([
    ['null', 'JSON null'],
    ['42', 'the JSON number 42'],
    ['"x"', 'the JSON string "x"'],
    ['true', 'the JSON boolean true'],
  ])('says JSON %s is JSON, but not a policy (before: "neither JSON nor a readable file (ENOENT)")', (text, what) => {
    const missing = () => {
      throw Object.assign(new Error('x'), { code: 'ENOENT' });
    };
    expect(() => parseCandidate(text, 0, missing)).toThrow(`ERR_RL_CLI_USAGE: --policy #1 is ${what}, not a policy: give an object`);
    // The same JSON in a file.
    expect(() => parseCandidate('p.json', 0, () => text)).toThrow(`--policy #1 is ${what}, not a policy`);
  });

  it('refuses a concurrency policy, naming the --policy: a log line has no duration to hold a lease for', () => {
    const plan = '[{"limit":5,"windowMs":1000},{"algorithm":"concurrency","limit":3}]';
    expect(() => parseCandidate(plan, 1)).toThrow(/^ERR_RL_CLI_USAGE: --policy #2: a 'concurrency' policy limits requests in flight/);
  });

  it('makes labels unique', () => {
    expect(parseCandidates(['{"limit":1,"windowMs":1000}', '{"limit":1,"windowMs":1000}']).map((c) => c.label)).toEqual([
      'gcra 1/1s',
      'gcra 1/1s #2',
    ]);
  });

  it('describes windows in the largest whole unit', () => {
    expect(
      describePolicies([
        { limit: 1, windowMs: 250 },
        { limit: 1, windowMs: 900_000, algorithm: 'fixed-window', anchor: 'first-request' },
      ]),
    ).toBe('gcra 1/250ms + fixed-window 1/15m anchored');
  });
});
