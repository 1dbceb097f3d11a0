/**
 * @module The baseline the issue 12 "within 2 % without a provider" target is judged against: a copy of
 * this checkout's core in which the two per-decision hooks of observability are cut out
 * (`DecisionObserver.observe` returns its decision untouched, `StoreTimer.apply` calls the store
 * directly). Everything else is the same source, so a paired run of the copy and the real core measures
 * what observability costs a decision and nothing else. The copy lives under bench/.results (ignored
 * by git) and is rebuilt from the working tree on every call.
 */
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BENCH_DIR } from '../child-process.js';

const CORE_DIR = join(BENCH_DIR, '..', 'packages', 'core');

/** Each hook: the file, the method's first line, and the statement put first in its body. */
const CUTS: readonly { readonly file: string; readonly head: RegExp; readonly body: string }[] = [
  {
    file: 'observability/decision-observer.ts',
    head: /^(\s*)observe\(d: Decision, options: CheckOptions \| undefined\): Decision \{$/m,
    body: 'return d;',
  },
  {
    file: 'observability/store-timer.ts',
    head: /^(\s*)apply\(key: StoreKey, plan: StorePlan, cost: number, now: number\): StoreResult \| Promise<StoreResult> \{$/m,
    body: 'return this.store.apply(key, plan, cost, now);',
  },
];

/**
 * Writes the baseline core under `dir` (default bench/.results/obs-baseline) and returns the path of
 * its `index.ts`, for `import()`. Throws when a hook is not where it is expected: the baseline must
 * never silently equal the real core.
 */
export function buildObservabilityBaseline(dir = join(BENCH_DIR, '.results', 'obs-baseline'), cut = true): string {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const src = join(dir, 'src');
  cpSync(join(CORE_DIR, 'src'), src, { recursive: true, filter: (path) => !path.endsWith('.test.ts') });
  // A module of its own (ESM, as the core is): without it, a copy outside the workspace loads as CommonJS, twice as slow.
  writeFileSync(join(dir, 'package.json'), '{ "type": "module", "private": true }\n');
  for (const c of cut ? CUTS : []) {
    const file = join(src, c.file);
    const text = readFileSync(file, 'utf8');
    if (!c.head.test(text))
      throw new Error(`observability baseline: the hook in ${c.file} moved; update bench/src/observability/baseline.ts`);
    writeFileSync(
      file,
      text.replace(c.head, (line, indent: string) => `${line}\n${indent}  ${c.body}`),
    );
  }
  const modules = join(CORE_DIR, 'node_modules');
  if (existsSync(modules)) symlinkSync(modules, join(dir, 'node_modules'), 'dir');
  return join(src, 'index.ts');
}
