/**
 * @module Strings that outlive their log line. A string cut from a line (`slice`, `split`) can keep the
 * whole text it was cut from alive (V8 keeps substrings of 13 characters and more as views into their
 * parent): a client key cut from a 1 MB chunk and kept for the whole replay would keep the megabyte. Every
 * string the replay keeps (keys, cached addresses) goes through `ownString` first, so memory is bounded by
 * the number of distinct keys, not by the size of the log.
 */

/** A copy of `text` sharing no memory with the text it was cut from. */
export function ownString(text: string): string {
  // Appending makes a rope; slicing a rope first flattens it into a new string of its own.
  return `${text} `.slice(0, -1);
}
