/**
 * @module The core README's "The limiter" tables list exactly the options `createLimiter` and
 * `new MemoryStore` accept, and every method and property of the `Limiter` it names is one. The accepted
 * names come from the parsers themselves (their ERR_RL_UNKNOWN_OPTION lists the valid keys), as in
 * adapter-options.test.ts, so a new option without a row fails here.
 */
import { createLimiter, MemoryStore, RateLimitConfigError } from '@tollgate/core';
import { describe, expect, it } from 'vitest';
import { readRepoFile, section, type Table, tables } from './markdown.js';

const PROBE = 'tollgateDocsProbe';
const text = section(readRepoFile('packages/core/README.md'), '## The limiter');

/** The option names `build` accepts, read from its error for an unknown option. */
function accepted(build: () => unknown): string[] {
  try {
    build();
  } catch (error) {
    if (!(error instanceof RateLimitConfigError) || error.code !== 'ERR_RL_UNKNOWN_OPTION') throw error;
    const list = /\(valid: ([^)]*)\)/.exec(error.message)?.[1];
    if (list === undefined) throw new Error(`ERR_RL_UNKNOWN_OPTION no longer lists the valid keys: ${error.message}`);
    return list.split(', ').sort();
  }
  throw new Error(`the parser accepted the unknown option '${PROBE}'`);
}

/** The backticked option name of each row, and the rows' cell counts against the header's. */
function rows(table: Table): string[] {
  for (const row of table.rows) expect(row.length, row.join(' | ')).toBe(table.header.length);
  return table.rows.map((row) => /^`([A-Za-z]+)`$/.exec(row[0] ?? '')?.[1] ?? `(not one option: ${row[0]})`).sort();
}

describe('core README "The limiter"', () => {
  const [limiterTable, memoryTable] = tables(text);

  it("has a row for each option createLimiter accepts, and no other (before: no table; the adapters' tables stood in)", () => {
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const options = accepted(() => createLimiter({ policies: { limit: 1, windowMs: 1000 }, store, [PROBE]: true } as never));
    expect(limiterTable).toBeDefined();
    expect(rows(limiterTable as Table)).toEqual(options);
  });

  it('has a row for each MemoryStore option, and no other', () => {
    expect(memoryTable).toBeDefined();
    expect(rows(memoryTable as Table)).toEqual(accepted(() => new MemoryStore({ [PROBE]: true } as never)));
  });

  it('names only methods and properties a limiter has, and all of them', () => {
    const limiter = createLimiter({ policies: { limit: 1, windowMs: 1000 }, store: new MemoryStore({ sweepIntervalMs: 0 }) });
    const paragraph = text.slice(text.indexOf('The limiter: '), text.indexOf('`new MemoryStore(options)`'));
    const named = new Set([...paragraph.matchAll(/`([a-z][a-zA-Z]*)[(`]/g)].map((m) => m[1] as string));
    const members = new Set(Object.keys(limiter));
    expect([...named].filter((n) => !members.has(n))).toEqual([]);
    expect([...members].filter((m) => !named.has(m)).sort()).toEqual([]);
  });
});
