/**
 * @module Writes examples/replay/access.log.gz: half an hour of generated traffic shaped like a public
 * site's (seed 1), the log the README's `tollgate replay` command reads. Run
 * `pnpm --filter @tollgate/example-replay generate` to regenerate it (the same bytes every time: the
 * generator is seeded and gzip is deterministic). `-- --order written-at-end --out <file>` writes the
 * same traffic as a server writes it (each line at its request's end), to try replay's reordering on.
 */
import { createWriteStream } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createGzip } from 'node:zlib';
import { type AccessLogOrder, generateAccessLog } from '@tollgate/cli';

export const LOG_PATH = join(dirname(fileURLToPath(import.meta.url)), '..', 'access.log.gz');

/** Writes the gzipped log to `path`, its lines in `order`; resolves to the number of lines. */
export async function writeAccessLog(path: string = LOG_PATH, order: AccessLogOrder = 'time'): Promise<number> {
  const gzip = createGzip({ level: 9 });
  const out = createWriteStream(path);
  gzip.pipe(out);
  let lines = 0;
  for (const batch of generateAccessLog({ seed: 1, order })) {
    lines += batch.length;
    if (!gzip.write(`${batch.join('\n')}\n`)) await new Promise<void>((resolve) => gzip.once('drain', () => resolve()));
  }
  gzip.end();
  await new Promise<void>((resolve, reject) => {
    out.on('finish', () => resolve());
    out.on('error', reject);
  });
  return lines;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  // pnpm passes a '--' through to the script.
  const args = process.argv.slice(2).filter((a) => a !== '--');
  const { values } = parseArgs({ args, options: { order: { type: 'string' }, out: { type: 'string' } } });
  const order = (values.order ?? 'time') as AccessLogOrder;
  if (!['time', 'written-at-end', 'shuffled-within-hour'].includes(order))
    throw new Error(`--order: time, written-at-end or shuffled-within-hour; got ${order}`);
  const out = values.out ?? LOG_PATH;
  writeAccessLog(out, order).then((lines) => console.log(`wrote ${out} (${lines} lines, ${order} order)`));
}
