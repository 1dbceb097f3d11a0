/**
 * @module What the eviction tests (eviction-watch.test.ts, eviction-policy-change.test.ts) read: the lines a
 * store logged, the evictions metric in a registry's text, and what Redis itself counted.
 */
import type { LogFields } from '@tollgate/core';

/** A logger that keeps every line with the time it came; `coded` lists the fields of one code's lines. */
export function recorder() {
  const lines: { fields: LogFields; at: number }[] = [];
  const push = (fields: LogFields) => lines.push({ fields, at: performance.now() });
  const coded = (code: string) => lines.filter((l) => l.fields.code === code).map((l) => l.fields);
  return { lines, logger: { warn: push, error: push }, coded };
}

/** The value of `tollgate_store_evictions_total{store="redis"}` in a registry's text output. */
export function redisEvictions(text: string): number {
  const line = text.split('\n').find((l) => l.startsWith('tollgate_store_evictions_total{') && l.includes('store="redis"'));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** What a Redis node counted as evicted (`evicted_keys` of INFO stats). */
export async function evictedBy(admin: { info(section: string): Promise<string> }): Promise<number> {
  return Number(/evicted_keys:(\d+)/.exec(await admin.info('stats'))?.[1]);
}
