/**
 * @module Lines of a file in batches, streamed: gzip is recognised by its magic bytes (not the name) and
 * inflated on the fly; memory holds one chunk at a time, whatever the file's size. `\r\n` endings lose
 * their `\r`; a final line without `\n` still counts; a UTF-8 byte order mark is dropped; a line that is
 * not valid UTF-8 reads its other bytes as latin1 (`decodeLoose`).
 */

import { isAscii, isUtf8 } from 'node:buffer';
import { closeSync, createReadStream, openSync, type ReadStream, readSync, statSync } from 'node:fs';
import { createGunzip, type Gunzip } from 'node:zlib';
import { CliError } from '../cli-error.js';

const CHUNK_BYTES = 1 << 20;
/**
 * A longer line is cut to this many characters (and will usually fail to parse): without a bound, a
 * file with no newline would be held whole in memory.
 */
export const MAX_LINE_CHARS = 1 << 20;

/** True when the file starts with the gzip magic bytes 1f 8b. */
export function isGzip(path: string): boolean {
  const fd = openSync(path, 'r');
  try {
    const head = Buffer.alloc(2);
    const n = readSync(fd, head, 0, 2, 0);
    return n === 2 && head[0] === 0x1f && head[1] === 0x8b;
  } finally {
    closeSync(fd);
  }
}

/** The file's size in bytes, or a CliError naming it when it cannot be read. */
export function fileSize(path: string): number {
  try {
    const stat = statSync(path);
    if (!stat.isFile()) throw new CliError('ERR_RL_REPLAY_INPUT', `'${path}' is not a file`);
    return stat.size;
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw new CliError('ERR_RL_REPLAY_INPUT', `cannot read '${path}' (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
}

/**
 * `bytes` (one line, not valid UTF-8) as text: each valid UTF-8 sequence as its character, each other
 * byte as the latin1 character of that value (0xE9 as `é`, as a log written in latin1 means it). Distinct
 * lines stay distinct (decoded with the replacement character, `caf` + 0xE9 and `caf` + 0xE8 would be one
 * client), and the text stays what a parser takes: a JSON line with such a byte in a string still parses.
 */
export function decodeLoose(bytes: Buffer): string {
  let out = '';
  let from = 0;
  let i = 0;
  while (i < bytes.length) {
    const n = utf8SequenceAt(bytes, i);
    if (n > 0) {
      i += n;
      continue;
    }
    out += bytes.toString('utf8', from, i) + String.fromCharCode(bytes[i] as number);
    i += 1;
    from = i;
  }
  return out + bytes.toString('utf8', from, i);
}

/** The length of the valid UTF-8 sequence at `i` (1 for ASCII), or 0 when the byte there starts none (RFC 3629's table). */
function utf8SequenceAt(b: Buffer, i: number): number {
  const c = b[i] as number;
  if (c < 0x80) return 1;
  const n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
  if (n === 0 || i + n > b.length) return 0;
  const second = b[i + 1] as number;
  const low = c === 0xe0 ? 0xa0 : c === 0xf0 ? 0x90 : 0x80;
  const high = c === 0xed ? 0x9f : c === 0xf4 ? 0x8f : 0xbf;
  if (second < low || second > high) return 0;
  for (let k = 2; k < n; k++) if (((b[i + k] as number) & 0xc0) !== 0x80) return 0;
  return n;
}

/**
 * The text of `bytes`, whole lines: ASCII as latin1 (the same text, several times faster than UTF-8
 * decoding; logs are mostly ASCII, nginx escapes other bytes as \xHH), valid UTF-8 as UTF-8, and a
 * block with invalid bytes line by line, those lines through `decodeLoose`.
 */
function decodeLines(bytes: Buffer): string {
  if (isAscii(bytes)) return bytes.toString('latin1');
  if (isUtf8(bytes)) return bytes.toString('utf8');
  const lines: string[] = [];
  let from = 0;
  for (;;) {
    const nl = bytes.indexOf(0x0a, from);
    const line = bytes.subarray(from, nl < 0 ? bytes.length : nl);
    lines.push(isUtf8(line) ? line.toString('utf8') : decodeLoose(line));
    if (nl < 0) return lines.join('\n');
    from = nl + 1;
  }
}

/**
 * The bytes of text the gzip file at `path` inflates to, counted by inflating it (every member, as
 * `readLines` reads them), or a number over `atMost` as soon as the count passes it: what a replay will
 * read, whatever its trailer says (a file cut short has compressed data where the trailer would be, a
 * file of several members records only its last member's size, and the size wraps at 4 GiB). A file cut
 * short counts the text before the cut; a read error counts what was read before it (`readLines` reports it).
 */
export async function inflatedBytes(path: string, atMost = Number.POSITIVE_INFINITY): Promise<number> {
  const raw = createReadStream(path, { highWaterMark: CHUNK_BYTES });
  const gunzip = gunzipOf(raw);
  let bytes = 0;
  try {
    for await (const chunk of gunzip as AsyncIterable<Buffer>) {
      bytes += chunk.length;
      if (bytes > atMost) break;
    }
  } catch {
    // Cut short or damaged: the text before it is what a replay reads.
  } finally {
    raw.destroy();
    gunzip.destroy();
  }
  return bytes;
}

/** `raw` inflated, as `readLines` and `inflatedBytes` both read a gzip file: a read error of `raw` ends it too. */
function gunzipOf(raw: ReadStream): Gunzip {
  const gunzip = raw.pipe(createGunzip({ chunkSize: CHUNK_BYTES }));
  raw.on('error', (error) => gunzip.destroy(error));
  return gunzip;
}

/** True for zlib's error on a gzip stream that ends before its end (a file still being written, a copy cut short). */
function isCutShort(error: unknown): boolean {
  return (error as NodeJS.ErrnoException).code === 'Z_BUF_ERROR';
}

/**
 * Yields the lines of `path` in batches (each batch is the lines completed by one chunk). `onBytes`
 * receives the count of file bytes (compressed, for gzip) read so far, for a progress bar. Lines are
 * split on the bytes, then decoded (`decodeLines`): a line is never cut inside a character. A gzip file
 * cut short ends, as `zcat` does, after its last whole line (the cut one is dropped), and `onCut` is told
 * why; without `onCut`, and for any other read error, a CliError.
 */
export async function* readLines(
  path: string,
  onBytes: (bytes: number) => void = () => {},
  onCut?: (why: string) => void,
): AsyncGenerator<string[]> {
  fileSize(path);
  const raw = createReadStream(path, { highWaterMark: CHUNK_BYTES });
  let read = 0;
  raw.on('data', (chunk) => {
    read += chunk.length;
    onBytes(read);
  });
  const stream = isGzip(path) ? gunzipOf(raw) : raw;
  // The bytes of the line not yet ended.
  let rest = EMPTY;
  let skipping = false;
  // A UTF-8 byte order mark (files saved by Windows tools) is not part of the first line.
  let atStart = true;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      let bytes = rest.length === 0 ? chunk : Buffer.concat([rest, chunk]);
      if (atStart && bytes.length >= 3) {
        atStart = false;
        bytes = withoutBom(bytes);
      }
      if (skipping) {
        // The rest of a line already cut and counted: drop it up to its end.
        const nl = bytes.indexOf(0x0a);
        if (nl < 0) {
          rest = EMPTY;
          continue;
        }
        bytes = bytes.subarray(nl + 1);
        skipping = false;
      }
      const end = bytes.lastIndexOf(0x0a);
      const lines = end < 0 ? [] : splitLines(decodeLines(bytes.subarray(0, end)));
      rest = Buffer.from(bytes.subarray(end + 1));
      if (rest.length > MAX_LINE_CHARS) {
        lines.push(decodeLines(rest.subarray(0, MAX_LINE_CHARS)));
        rest = EMPTY;
        skipping = true;
      }
      if (lines.length > 0) yield lines;
    }
  } catch (error) {
    if (onCut === undefined || !isCutShort(error))
      throw new CliError('ERR_RL_REPLAY_INPUT', `cannot read '${path}': ${(error as Error).message}`);
    onCut((error as Error).message);
    return;
  }
  const last = skipping ? '' : decodeLines(atStart ? withoutBom(rest) : rest);
  if (last !== '') yield splitLines(last);
}

const EMPTY = Buffer.alloc(0);

/** `bytes` without a UTF-8 byte order mark at its start. */
function withoutBom(bytes: Buffer): Buffer {
  return bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? bytes.subarray(3) : bytes;
}

/** `text`'s lines, each without a `\r` before its `\n`. */
function splitLines(text: string): string[] {
  const lines = text.split('\n');
  if (text.includes('\r')) {
    for (let i = 0; i < lines.length; i++) {
      const l = lines[i] as string;
      if (l.charCodeAt(l.length - 1) === 13) lines[i] = l.slice(0, -1);
    }
  }
  return lines;
}
