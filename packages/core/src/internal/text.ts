/**
 * @module Text helpers shared by the keys and the limiter: whether a string has a UTF-8 form, and its digest.
 */
import { hash } from 'node:crypto';

/** `String.prototype.isWellFormed` (ES2024, in Node 20): the lib this package compiles against is ES2023. */
type WellFormedCheck = (this: string) => boolean;
const wellFormed = (String.prototype as unknown as { isWellFormed: WellFormedCheck }).isWellFormed;

/**
 * False for strings with unpaired UTF-16 surrogates: they have no UTF-8 form (an encoder writes U+FFFD in
 * their place), so two different ones would hash, or reach Redis, alike. HTTP header values (byte strings)
 * always pass. Native, and about 2 ns on a one-byte string, which cannot hold a surrogate.
 */
export function isWellFormed(text: string): boolean {
  return wellFormed.call(text);
}

/** SHA-256 of the UTF-8 bytes of `text`, base64url. (One-shot `hash()`: a third of `createHash()`'s cost.) */
export function sha256(text: string): string {
  return hash('sha256', text, 'base64url');
}
