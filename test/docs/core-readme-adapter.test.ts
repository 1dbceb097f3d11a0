/**
 * @module The core README's "Writing an adapter" section matches the code, in both directions:
 * - what it names exists: its imports are exports of the entry they name, every `handler.x.y` path is
 *   there on a real handler, and every bare call `name(...)` and `UPPER_CASE` constant is an export;
 * - what the adapters use is there: every value the Express, Fastify and Koa sources import from the
 *   adapter entry is named in the section.
 * When adapter-only exports move to their own entry (e.g. `@tollgate/core/adapter`), change the
 * `adapterEntry` import and `ADAPTER_ENTRY` below, together; nothing else here names an entry.
 */
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import * as core from '@tollgate/core';
// The entry the adapters import their machinery (`createRateLimitHandler`, ...) from, and its specifier.
import * as adapterEntry from '@tollgate/core/adapter';
import { afterAll, describe, expect, it } from 'vitest';
import { fencedBlocks, inlineSpans, readRepoFile, root, section } from './markdown.js';

const ADAPTER_ENTRY = '@tollgate/core/adapter';
/** The entries the section may import from, by specifier. */
const ENTRIES: Readonly<Record<string, Readonly<Record<string, unknown>>>> = Object.fromEntries([
  ['@tollgate/core', core],
  [ADAPTER_ENTRY, adapterEntry],
]);
const README = 'packages/core/README.md';
const HEADING = '## Writing an adapter';
const ADAPTERS = ['express', 'fastify', 'koa'];
/** Framework functions the section's example calls bare (Express's `next`); not tollgate's to check. */
const FRAMEWORK_CALLS = new Set(['next']);

const text = section(readRepoFile(README), HEADING);
const fenced = fencedBlocks(text);
const code = [...fenced, ...inlineSpans(text)];
const exported = new Set(Object.values(ENTRIES).flatMap((entry) => Object.keys(entry)));

/** `import { a, type B, c as d } from 'spec'` (not `import type`): the value names and the specifier. */
function valueImports(source: string): { spec: string; names: string[] }[] {
  return [...source.matchAll(/import\s*\{([^}]*)\}\s*from\s*'([^']+)'/g)].map((m) => ({
    spec: m[2] ?? '',
    names: (m[1] ?? '')
      .split(',')
      .map((n) => n.trim())
      .filter((n) => n !== '' && !n.startsWith('type '))
      .map((n) => n.split(/\s+as\s+/)[0] ?? n),
  }));
}

function adapterSources(): string[] {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts') && !/\.test(-d)?\.ts$/.test(entry.name)) files.push(path);
    }
  };
  for (const name of ADAPTERS) walk(join(root, 'packages', name, 'src'));
  return files;
}

/** Names the fenced examples declare themselves (`function f`, `const x`, object keys `k:`). */
const declared = new Set(
  fenced.flatMap((block) =>
    [...block.matchAll(/\b(?:function|const|let)\s+([A-Za-z_$][\w$]*)|([A-Za-z_$][\w$]*)\s*:/g)].map((m) => m[1] ?? m[2] ?? ''),
  ),
);

const handler = adapterEntry.createRateLimitHandler({ policies: { limit: 1, windowMs: 1000 } });
afterAll(async () => {
  handler.close();
  await handler.limiter.close();
});

describe(`${README} "${HEADING}"`, () => {
  it('imports only exports of the entries it names', () => {
    const imports = fenced.flatMap(valueImports).filter((i) => i.spec.startsWith('@tollgate/'));
    expect(imports.length).toBeGreaterThan(0);
    for (const { spec, names } of imports) {
      const entry = ENTRIES[spec];
      expect(entry, `${spec} is not one of the entries the section may import from`).toBeDefined();
      for (const name of names) expect(Object.keys(entry ?? {}), `${name} from '${spec}'`).toContain(name);
    }
  });

  it('names only handler members that exist', () => {
    const paths = new Set(code.flatMap((c) => [...c.matchAll(/\bhandler((?:\.[A-Za-z_$][\w$]*)+)/g)].map((m) => m[1] ?? '')));
    expect(paths).toContain('.run');
    for (const path of paths) {
      let value: unknown = handler;
      for (const part of path.slice(1).split('.')) {
        const owner = value;
        expect(typeof owner === 'object' && owner !== null && part in owner, `handler${path}: no '${part}'`).toBe(true);
        value = (owner as Record<string, unknown>)[part];
      }
    }
  });

  it('calls bare only exported functions (or names its example declares)', () => {
    const calls = new Set(code.flatMap((c) => [...c.matchAll(/(?<![\w$.])([a-z_$][\w$]*)\s*\(/g)].map((m) => m[1] ?? '')));
    const keywords = new Set(['function', 'if', 'for', 'while', 'switch', 'return', 'await', 'typeof', 'async', 'catch']);
    const strangers = [...calls].filter((n) => !keywords.has(n) && !exported.has(n) && !declared.has(n) && !FRAMEWORK_CALLS.has(n));
    expect(strangers, 'called in the section but not exported').toEqual([]);
    for (const name of calls) {
      if (!exported.has(name)) continue;
      const value = Object.values(ENTRIES).find((entry) => name in entry)?.[name];
      expect(typeof value, name).toBe('function');
    }
  });

  it('names only exported constants', () => {
    const constants = inlineSpans(text).filter((s) => /^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$/.test(s) && !/^(?:ERR|WRN)_RL_/.test(s));
    for (const name of constants) expect(exported, name).toContain(name);
  });

  it('names every value the adapters import from the adapter entry', () => {
    const used = new Map<string, string>();
    for (const file of adapterSources()) {
      for (const { spec, names } of valueImports(readRepoFile(relative(root, file)))) {
        if (spec === ADAPTER_ENTRY) for (const name of names) used.set(name, relative(root, file));
      }
    }
    expect(used.size).toBeGreaterThan(0);
    const words = new Set(code.flatMap((c) => c.match(/[A-Za-z_$][\w$]*/g) ?? []));
    const missing = [...used].filter(([name]) => !words.has(name)).map(([name, file]) => `${name} (${file})`);
    expect(missing, 'imported by an adapter, not named in the section').toEqual([]);
  });
});
