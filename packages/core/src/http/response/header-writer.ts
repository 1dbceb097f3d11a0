/**
 * @module The rate-limit header formats a middleware can send. `createHeaderWriter` picks the format
 * once, when the middleware is created; per request the writer only formats numbers.
 */
import type { PolicyDescription } from '../../types.js';
import type { PartitionKeyFunction } from '../keys/partition-key.js';
import { createCompatWriter } from './compat-headers.js';
import { createDraft11Writer } from './draft11-headers.js';
import type { HeaderMode, HeadersOption } from './header-mode.js';
import type { HeaderWriter } from './header-values.js';

function createOne(
  mode: Exclude<HeaderMode, false>,
  policies: readonly PolicyDescription[],
  partitionKey: PartitionKeyFunction | undefined,
): HeaderWriter {
  return mode === 'draft-11' ? createDraft11Writer(policies, partitionKey) : createCompatWriter(mode);
}

export function createHeaderWriter(
  mode: HeadersOption,
  policies: readonly PolicyDescription[],
  partitionKey: PartitionKeyFunction | undefined,
): HeaderWriter | undefined {
  if (mode === false) return undefined;
  if (typeof mode === 'string') return createOne(mode, policies, partitionKey);
  const writers = mode.map((m) => createOne(m, policies, partitionKey));
  if (writers.length === 1) return writers[0];
  return {
    write(decision, exhausted, clock, into, target) {
      for (const w of writers) w.write(decision, exhausted, clock, into, target);
    },
  };
}

/** The modes `headers` turns on, as a list (`false` is none). */
export function headerModes(mode: HeadersOption): readonly Exclude<HeaderMode, false>[] {
  return mode === false ? [] : typeof mode === 'string' ? [mode] : mode;
}
