/**
 * @module The trusted-proxy allowlist of `keys.ip()`: CIDRs, single addresses and named presets, parsed
 * once into integer ranges (network and mask words), then matched per hop with a few ANDs. Only a peer
 * inside these ranges may tell us who its client was.
 */
import { RateLimitConfigError } from '../../errors.js';
import { addressWord, formatIpAddress, type IpAddress, networkAddress, parseIpAddress, wordMask } from './ip-address.js';

/**
 * Named ranges. The same names and ranges as proxy-addr (Express's `trust proxy`) where they overlap;
 * `private` is `uniquelocal` plus `linklocal`. There are no cloud or CDN presets on purpose: their
 * published ranges change, and a stale built-in list would silently trust addresses that are no longer
 * the provider's. Fetch the provider's list at deploy time and pass it as CIDRs instead.
 */
export const TRUSTED_PROXY_PRESETS = Object.freeze({
  /** 127.0.0.0/8 and ::1/128. */
  loopback: Object.freeze(['127.0.0.0/8', '::1/128']),
  /** RFC 3927 and RFC 4291 link-local: 169.254.0.0/16 and fe80::/10. */
  linklocal: Object.freeze(['169.254.0.0/16', 'fe80::/10']),
  /** RFC 1918 private IPv4 and RFC 4193 unique local IPv6: 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, fc00::/7. */
  uniquelocal: Object.freeze(['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7']),
  /** `uniquelocal` and `linklocal` together: RFC 1918, ULA and link-local. */
  private: Object.freeze(['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7', '169.254.0.0/16', 'fe80::/10']),
});

/** The name of a built-in list of proxy ranges for `trustedProxies` (e.g. `loopback`, `private`). */
export type TrustedProxyPreset = keyof typeof TRUSTED_PROXY_PRESETS;

type Range = readonly [IpAddress, number];

export interface TrustedProxies {
  /** True when `address` is inside one of the ranges. */
  has(address: IpAddress): boolean;
  /** No range at all: every peer is a client. */
  readonly empty: boolean;
  /**
   * The entries, as written, of a family whose ranges together cover half its addresses or more
   * (`0.0.0.0/0`, `::/0`, `0.0.0.0/1` with `128.0.0.0/1`): no proxy fleet is that wide, so every client
   * could pick its own address. Empty for real proxy ranges.
   */
  readonly permissive: readonly string[];
}

const CODE = 'ERR_RL_INVALID_TRUSTED_PROXY';
const HINT =
  "a CIDR ('10.0.0.0/8', '2001:db8::/32'), an address ('10.0.0.7', '::1') or a preset (loopback, linklocal, uniquelocal, private)";

/**
 * Parses one CIDR or address into a range, turning IPv4-mapped IPv6 ranges (`::ffff:10.0.0.0/104`) into
 * the IPv4 range they cover, so they match the IPv4 addresses `parseIpAddress` returns.
 */
function parseRange(entry: string, path: string): Range {
  const slash = entry.indexOf('/');
  const addressText = slash === -1 ? entry : entry.slice(0, slash);
  const prefixText = slash === -1 ? undefined : entry.slice(slash + 1);
  const address = parseIpAddress(addressText);
  if (address === undefined || addressText.includes('%')) {
    throw new RateLimitConfigError(CODE, path, `must be ${HINT}`, entry);
  }
  const written = addressText.includes(':') ? 128 : 32;
  let prefix = written;
  if (prefixText !== undefined) {
    if (!/^(0|[1-9][0-9]{0,2})$/.test(prefixText)) {
      // A trailing newline or space from an env var or a file, a sign, a leading zero: say what it is.
      throw new RateLimitConfigError(
        CODE,
        path,
        `has a prefix length that is not a plain number (no spaces, signs or leading zeros); write it as ${HINT}`,
        entry,
      );
    }
    if (Number(prefixText) > written) {
      throw new RateLimitConfigError(CODE, path, `has a prefix length outside 0-${written}; write it as ${HINT}`, entry);
    }
    prefix = Number(prefixText);
  }
  if (written === 128 && address.family === 4) {
    // An IPv4-mapped range: only its part inside ::ffff:0:0/96 means anything, as IPv4.
    if (prefix < 96) {
      throw new RateLimitConfigError(CODE, path, 'is an IPv4-mapped range shorter than /96; write the IPv4 range instead', entry);
    }
    prefix -= 96;
  }
  const network = networkAddress(address, prefix);
  if (formatIpAddress(network) !== formatIpAddress(address)) {
    throw new RateLimitConfigError(
      CODE,
      path,
      `has host bits set after the prefix; did you mean '${formatIpAddress(network)}/${prefix}'?`,
      entry,
    );
  }
  return [network, prefix] as const;
}

/**
 * Validates and compiles the `trustedProxies` option (`path` names it in errors). Throws
 * `RateLimitConfigError` on an entry that is not a CIDR, an address or a known preset. `nat64` are the
 * /96 prefixes whose addresses the caller keys as the IPv4 address they embed (`keys.ip`'s
 * `nat64Prefixes`): ranges inside them count as IPv4 when judging how much a list trusts.
 */
export function compileTrustedProxies(option: unknown, path: string, nat64: readonly IpAddress[] = []): TrustedProxies {
  const list: unknown[] = option === undefined ? [] : Array.isArray(option) ? option : [option];
  const ranges: Range[] = [];
  const written: [string, Range][] = [];
  list.forEach((entry, i) => {
    const at = Array.isArray(option) ? `${path}[${i}]` : path;
    if (typeof entry !== 'string') {
      throw new RateLimitConfigError(CODE, at, `must be a string: ${HINT}`, entry);
    }
    const preset = Object.hasOwn(TRUSTED_PROXY_PRESETS, entry) ? TRUSTED_PROXY_PRESETS[entry as TrustedProxyPreset] : undefined;
    if (preset !== undefined) {
      for (const cidr of preset) ranges.push(parseRange(cidr, at));
      return;
    }
    if (/^[a-z]+$/i.test(entry)) {
      throw new RateLimitConfigError(
        CODE,
        at,
        `is not a known preset (valid: ${Object.keys(TRUSTED_PROXY_PRESETS).join(', ')}); cloud presets are deliberately not built in, pass the provider's CIDRs`,
        entry,
      );
    }
    const range = parseRange(entry, at);
    written.push([entry, range]);
    ranges.push(range);
  });
  // An entry can count in both families (`::/0` holds 2000::/3 and 64:ff9b::/96): name it once.
  const permissive = [
    ...new Set([...permissiveEntries(clientSpans(written, 4, nat64), 4), ...permissiveEntries(clientSpans(written, 6, nat64), 6)]),
  ];
  // Ranges as 32-bit network and mask words, split by family: a trust check is a few ANDs per range.
  const v4: number[] = [];
  const v6: number[] = [];
  for (const [network, prefix] of ranges) {
    if (network.family === 4) v4.push(addressWord(network, 3), wordMask(prefix + 96, 3));
    else for (let k = 0; k < 4; k++) v6.push(addressWord(network, k), wordMask(prefix, k));
  }
  return Object.freeze({
    has(address: IpAddress): boolean {
      if (address.family === 4) {
        const a = (address.g6 << 16) | address.g7;
        for (let i = 0; i < v4.length; i += 2) if ((a & (v4[i + 1] as number)) === v4[i]) return true;
        return false;
      }
      const w0 = (address.g0 << 16) | address.g1;
      const w1 = (address.g2 << 16) | address.g3;
      const w2 = (address.g4 << 16) | address.g5;
      const w3 = (address.g6 << 16) | address.g7;
      for (let i = 0; i < v6.length; i += 8) {
        if (
          (w0 & (v6[i + 1] as number)) === v6[i] &&
          (w1 & (v6[i + 3] as number)) === v6[i + 2] &&
          (w2 & (v6[i + 5] as number)) === v6[i + 4] &&
          (w3 & (v6[i + 7] as number)) === v6[i + 6]
        ) {
          return true;
        }
      }
      return false;
    },
    empty: ranges.length === 0,
    permissive: Object.freeze(permissive),
  });
}

/**
 * Where clients' addresses come from, per family: all of IPv4 (private ranges included: clients behind
 * one NAT are clients too), and IPv6's global unicast space, 2000::/3, since the rest is unallocated,
 * private (fc00::/7) or link-local: trusting 2000::/3 trusts every IPv6 client on the Internet.
 */
const CLIENT_SPACE = { 4: { start: 0n, size: 1n << 32n }, 6: { start: 0x2000n << 112n, size: 1n << 125n } } as const;

/** The part of one entry's range inside a family's client space, as an offset into that space. */
interface Span {
  readonly entry: string;
  /** Where the entry was written: reports keep the user's order. */
  readonly order: number;
  readonly start: bigint;
  readonly size: bigint;
}

/** The part of `[from, from + size)` inside `[start, start + length)`, shifted by `-shift`; none when they miss. */
function overlap(entry: string, order: number, from: bigint, size: bigint, start: bigint, length: bigint, shift: bigint): Span[] {
  const lo = from > start ? from : start;
  const end = from + size;
  const limit = start + length;
  // biome-ignore lint/complexity/useMathMinMax: bigints (Math.min takes numbers only)
  const hi = end < limit ? end : limit;
  return hi > lo ? [{ entry, order, start: lo - shift, size: hi - lo }] : [];
}

/**
 * The spans of client addresses each entry trusts in `family`. IPv4 counts, besides IPv4 ranges, the
 * IPv6 ranges inside the NAT64 /96 prefixes: keys.ip keys `64:ff9b::1.2.3.4` as `ip:1.2.3.4`, so
 * trusting `64:ff9b::/96` (or any range holding it) let every IPv4 client behind a translator forge its
 * key with no warning, while `::ffff:0:0/96` warned.
 */
function clientSpans(written: readonly (readonly [string, Range])[], family: 4 | 6, nat64: readonly IpAddress[]): Span[] {
  const space = CLIENT_SPACE[family];
  return written.flatMap(([entry, [network, prefix]], order) => {
    const from = addressValue(network);
    const size = 1n << BigInt((network.family === 4 ? 32 : 128) - prefix);
    if (network.family === family) return overlap(entry, order, from, size, space.start, space.size, space.start);
    if (family === 6) return [];
    return nat64.flatMap((p) => overlap(entry, order, from, size, addressValue(p), 1n << 32n, addressValue(p)));
  });
}

/**
 * The widest of `spans` (one family's) that together cover half of its client addresses (CLIENT_SPACE)
 * or more (ranges may overlap: they are merged), as written and in the order written; none when all of
 * them fall short. Presets never count: they are narrow.
 */
function permissiveEntries(spans: Span[], family: 4 | 6): string[] {
  const half = CLIENT_SPACE[family].size / 2n;
  spans.sort((a, b) => (a.size > b.size ? -1 : a.size < b.size ? 1 : a.order - b.order));
  for (let n = 1; n <= spans.length; n++) {
    const widest = spans.slice(0, n);
    if (covered(widest) >= half) return widest.sort((a, b) => a.order - b.order).map((s) => s.entry);
  }
  return [];
}

/** How many addresses `spans` cover together, each counted once. */
function covered(spans: readonly { readonly start: bigint; readonly size: bigint }[]): bigint {
  let total = 0n;
  let end = 0n;
  for (const { start, size } of [...spans].sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0))) {
    const stop = start + size;
    if (stop <= end) continue;
    total += stop - (start > end ? start : end);
    end = stop;
  }
  return total;
}

/** The address as an unsigned integer of its family's width. */
function addressValue(address: IpAddress): bigint {
  let value = 0n;
  for (let k = address.family === 4 ? 3 : 0; k < 4; k++) value = (value << 32n) | BigInt(addressWord(address, k) >>> 0);
  return value;
}
