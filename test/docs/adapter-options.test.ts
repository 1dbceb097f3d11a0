/**
 * @module Each adapter README's "Options" tables list exactly the options that adapter's parser accepts:
 * one row per option (its name alone, backticked, in the first cell), every row as many cells as its
 * header, no option twice, none missing and none that does not exist. Fastify's plugin-only table holds
 * exactly the keys the plugin adds to the shared ones (`hook`, `global`).
 *
 * The accepted names come from the parser itself, not from a copy: each adapter is built with one option
 * that does not exist, and its `ERR_RL_UNKNOWN_OPTION` error lists the valid keys (docs/errors.md: "The
 * message lists the valid keys"), which is `KEYS` of the core's handler options plus the adapter's own.
 * That needs no export and follows the parser wherever its file moves.
 */
import { RateLimitConfigError } from '@tollgate/core';
import { rateLimit as expressRateLimit } from '@tollgate/express';
import fastifyRateLimit from '@tollgate/fastify';
import { rateLimit as koaRateLimit } from '@tollgate/koa';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { readRepoFile, section, type Table, tables } from './markdown.js';

/** A key no adapter will ever accept. */
const PROBE = 'tollgateDocsProbe';

/** Builds an adapter from `options`, so that its option parser runs (and throws). */
type Build = (options: Record<string, unknown>) => unknown;

const buildExpress: Build = (o) => expressRateLimit(o);
const buildKoa: Build = (o) => koaRateLimit(o);
const buildFastify: Build = async (o) => {
  const app = Fastify();
  try {
    await app.register(fastifyRateLimit, o);
    await app.ready();
  } finally {
    await app.close();
  }
};

const ADAPTERS: readonly { readonly name: string; readonly readme: string; readonly build: Build }[] = [
  { name: 'express', readme: 'packages/express/README.md', build: buildExpress },
  { name: 'koa', readme: 'packages/koa/README.md', build: buildKoa },
  { name: 'fastify', readme: 'packages/fastify/README.md', build: buildFastify },
];

/** The option names `build`'s parser accepts, read from its error for an unknown option. */
async function acceptedOptions(build: Build): Promise<string[]> {
  try {
    await build({ policies: { limit: 1, windowMs: 1000 }, [PROBE]: true });
  } catch (error) {
    if (!(error instanceof RateLimitConfigError) || error.code !== 'ERR_RL_UNKNOWN_OPTION' || error.option !== PROBE) throw error;
    const list = /\(valid: ([^)]*)\)/.exec(error.message)?.[1];
    if (list === undefined) throw new Error(`ERR_RL_UNKNOWN_OPTION no longer lists the valid keys as "(valid: a, b)": ${error.message}`);
    return list.split(', ');
  }
  throw new Error(`the parser accepted the unknown option '${PROBE}'`);
}

/** The option name of each body row: the first cell must be exactly one backticked identifier. */
function optionNames(table: Table): string[] {
  return table.rows.map((row, i) => {
    const name = /^`([A-Za-z][A-Za-z0-9]*)`$/.exec(row[0] ?? '')?.[1];
    if (name === undefined) throw new Error(`the first cell of an options row must be one backticked option name:\n${table.lines[i]}`);
    return name;
  });
}

function optionTables(readme: string): Table[] {
  const found = tables(section(readRepoFile(readme), '## Options'));
  if (found.length === 0) throw new Error(`${readme} has no table under "## Options"`);
  return found;
}

const sorted = (names: Iterable<string>): string[] => [...names].sort();

describe.each(ADAPTERS)('$name README options tables', (adapter) => {
  it('has rows of as many cells as their header', () => {
    for (const table of optionTables(adapter.readme)) {
      expect(table.header[0]).toBe('option');
      table.rows.forEach((row, i) => {
        expect(row.length, `${adapter.readme}: cells in\n${table.lines[i]}`).toBe(table.header.length);
      });
    }
  });

  it('lists every option the parser accepts, once, and no other', async () => {
    const accepted = await acceptedOptions(adapter.build);
    expect(accepted).toEqual(expect.arrayContaining(['policies', 'key']));
    const listed = optionTables(adapter.readme).flatMap(optionNames);
    const twice = listed.filter((name, i) => listed.indexOf(name) !== i);
    expect(twice, 'options listed twice').toEqual([]);
    expect(
      accepted.filter((name) => !listed.includes(name)),
      'options the parser accepts that the README does not list',
    ).toEqual([]);
    expect(
      listed.filter((name) => !accepted.includes(name)),
      'options the README lists that the parser rejects',
    ).toEqual([]);
  });
});

describe('fastify README', () => {
  it("lists the plugin's own options (those Express does not take) in the first table, and only them", async () => {
    const shared = await acceptedOptions(buildExpress);
    const own = (await acceptedOptions(buildFastify)).filter((name) => !shared.includes(name));
    expect(own.length).toBeGreaterThan(0);
    const [first] = optionTables('packages/fastify/README.md');
    expect(sorted(optionNames(first as Table))).toEqual(sorted(own));
  });
});
