/**
 * @module Writes examples/replay/access.log.gz: half an hour of a public site's traffic (seed 1), the log
 * the README's `tollgate replay` command reads. Run `pnpm --filter @tollgate/example-replay generate`
 * to regenerate it (the same bytes every time: the generator is seeded and gzip is deterministic).
 */
import { createWriteStream } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createGzip } from 'node:zlib';
import { generateAccessLog } from '@tollgate/cli';

export const LOG_PATH = join(dirname(fileURLToPath(import.meta.url)), '..', 'access.log.gz');

/** Writes the gzipped log to `path`; resolves to the number of lines. */
export async function writeAccessLog(path: string = LOG_PATH): Promise<number> {
  const gzip = createGzip({ level: 9 });
  const out = createWriteStream(path);
  gzip.pipe(out);
  let lines = 0;
  for (const batch of generateAccessLog({ seed: 1 })) {
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
  writeAccessLog().then((lines) => console.log(`wrote ${LOG_PATH} (${lines} lines)`));
}
