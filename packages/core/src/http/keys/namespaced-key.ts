/**
 * @module Builds `namespace:id` keys that are injective, bounded and safe to log. The id is kept readable
 * when it is short printable ASCII; other bytes (controls, spaces, non-ASCII) and the four characters
 * `%`, `#`, `{`, `}` are percent-encoded (UTF-8), so no two ids share a key and a key never carries a
 * newline into a log line or a brace into a Redis Cluster hash tag. An id whose encoded form is longer
 * than `MAX_ID_LENGTH` becomes `namespace:#<sha256>`: `#` never appears in an encoded id, so a digest
 * can never equal a readable id. Nothing is ever truncated.
 */
import { sha256 } from '../../internal/text.js';

/** Longest readable id; longer ones are replaced by their SHA-256 (43 base64url characters). */
export const MAX_ID_LENGTH = 128;

/** Printable ASCII except `#`, `%`, `{` and `}`. */
const READABLE = /^[!"$&-z|~]*$/;

function percentEncode(id: string): string {
  let out = '';
  for (const byte of Buffer.from(id, 'utf8')) {
    const readable = byte >= 0x21 && byte <= 0x7e && byte !== 0x23 && byte !== 0x25 && byte !== 0x7b && byte !== 0x7d;
    out += readable ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/**
 * `namespace:id`, with `id` encoded as described above. `id` must be non-empty and well-formed
 * (`isWellFormed`); callers check both.
 */
export function namespacedKey(namespace: string, id: string): string {
  const encoded = READABLE.test(id) ? id : id.length > MAX_ID_LENGTH ? undefined : percentEncode(id);
  if (encoded === undefined || encoded.length > MAX_ID_LENGTH) return `${namespace}:#${sha256(id)}`;
  return `${namespace}:${encoded}`;
}
