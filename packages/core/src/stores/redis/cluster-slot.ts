/**
 * @module Redis Cluster hash slots: which of the 16384 slots a key name lives in, computed as Redis does
 * (CRC16/XMODEM of the UTF-8 bytes of the hash tag, the text between the first `{` and the next `}`, or
 * of the whole name when there is no such non-empty tag). RedisStore needs it only after a NOSCRIPT on a
 * Cluster, to send SCRIPT LOAD to the master that serves the request's keys.
 */

export const SLOTS = 16384;

/** The hash slot of the key `name`. */
export function keySlot(name: string): number {
  const bytes = Buffer.from(name, 'utf8');
  let from = 0;
  let to = bytes.length;
  const open = bytes.indexOf(0x7b);
  if (open >= 0) {
    const close = bytes.indexOf(0x7d, open + 1);
    if (close > open + 1) {
      from = open + 1;
      to = close;
    }
  }
  let crc = 0;
  for (let i = from; i < to; i++) {
    crc ^= (bytes[i] as number) << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % SLOTS;
}
