import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { algorithms } from '../../algorithms/index.js';
import { ALGORITHM_CODES, APPLY_SCRIPT } from './scripts.js';

describe('APPLY_SCRIPT', () => {
  it('is named by the SHA1 of its text; the snapshot makes every script edit show in review', () => {
    expect(APPLY_SCRIPT.sha).toBe(createHash('sha1').update(APPLY_SCRIPT.lua).digest('hex'));
    expect({ name: APPLY_SCRIPT.name, sha: APPLY_SCRIPT.sha }).toMatchInlineSnapshot(`
      {
        "name": "tollgate:apply:v1",
        "sha": "11eb09f5d87cd24303dd27d7f920c16f1e80f4a1",
      }
    `);
  });

  it('has a code for every algorithm of the core, each handled by the script', () => {
    expect(Object.keys(ALGORITHM_CODES).sort()).toEqual(Object.keys(algorithms).sort());
    const codes = Object.values(ALGORITHM_CODES);
    expect(new Set(codes).size).toBe(codes.length);
    // Codes 1, 2, 3 and 6 have their own branches; 4 (gcra) and 5 (leaky-bucket) share the GCRA one.
    for (const c of [1, 2, 3, 6]) expect(APPLY_SCRIPT.lua).toContain(`c == ${c} then`);
    expect(APPLY_SCRIPT.lua).toContain('if code[i] == 5 then dticks = extra[i] end');
  });

  it('reads every key through KEYS, time from TIME, and names its KEYS and ARGV slots', () => {
    const lua = APPLY_SCRIPT.lua;
    expect(lua).toMatch(/^-- tollgate:apply:v1/);
    for (const slot of ['KEYS[i]', 'ARGV[1]', 'ARGV[2]', 'ARGV[3]']) expect(lua).toContain(`-- ${slot}`);
    expect(lua).toContain("redis.call('TIME')");
    // No key name is ever built inside the script (Cluster routes by the declared KEYS only).
    const code = lua
      .split('\n')
      .filter((line) => !line.trimStart().startsWith('--'))
      .join('\n');
    expect(new Set(code.match(/KEYS(\[[^\]]*\])?/g))).toEqual(new Set(['KEYS', 'KEYS[i]']));
    expect(code).not.toMatch(/\b(SCAN|FLUSHALL|FLUSHDB)\b/);
  });
});
