/**
 * @module `keys.ip()`: the client IP key. The client address comes from the socket, or through trusted
 * proxies from `X-Forwarded-For` / `Forwarded` (see client-address.ts); it is then keyed by range, not by
 * notation: IPv4-mapped and NAT64 addresses are their IPv4 address, IPv6 is grouped by prefix (default
 * /64, the smallest block one subscriber gets), and the key is canonical text: `ip:203.0.113.7`,
 * `ip:2001:db8:1:2::/64`.
 */
import { createDiagnostics, parseValidate, type ValidateOption } from '../../diagnostics.js';
import { RateLimitConfigError } from '../../errors.js';
import { type KeysEnum, readOptions } from '../../internal/read-options.js';
import { checkLogger, type Logger } from '../../logging.js';
import { clientBehindProxy, ignoreForwarding, socketAddress } from '../client-ip/client-address.js';
import type { ForwardingHeader } from '../client-ip/forwarded-header.js';
import { formatIpAddress, formatNetwork, IpAddress, networkAddress, parseIpAddress } from '../client-ip/ip-address.js';
import { compileTrustedProxies, type TrustedProxies, type TrustedProxyPreset } from '../client-ip/trusted-proxies.js';
import type { KeyFunction } from '../request-view.js';
import { BoundedCache } from './bounded-cache.js';

/** A preset name, a CIDR or an address. (`string & Record<never, never>` keeps the preset names in autocompletion.) */
export type TrustedProxyEntry = TrustedProxyPreset | (string & Record<never, never>);

/** Options of `keys.ip(options)`: the proxies trusted to forward the client address, the IPv6 prefix grouped into one key. */
export interface IpKeyOptions {
  /**
   * The proxies allowed to name the client: CIDRs (`'10.0.0.0/8'`, `'2001:db8::/32'`), single addresses
   * (`'10.0.0.7'`, `'::1'`) or presets (`'loopback'`, `'linklocal'`, `'uniquelocal'`, `'private'`). Only
   * when the socket peer is inside this list is the forwarding header read. Defaults to `[]`: the socket
   * address is the client, and forwarding headers are ignored (with a one-time warning).
   */
  trustedProxies?: TrustedProxyEntry | readonly TrustedProxyEntry[];
  /**
   * IPv6 clients are grouped by this prefix length, 32-128. Defaults to `64`: a /64 is the smallest
   * block an ISP hands one subscriber, and any host in it can pick any of its 2^64 addresses.
   */
  ipv6Prefix?: number;
  /** IPv4 clients are grouped by this prefix length, 16-32. Defaults to `32` (one key per address). */
  ipv4Prefix?: number;
  /**
   * The forwarding header the trusted proxies write: `'x-forwarded-for'` or `'forwarded'` (RFC 7239,
   * `for=` parameter). Defaults to `'x-forwarded-for'`.
   */
  header?: ForwardingHeader;
  /**
   * IPv6 /96 prefixes of IPv4/IPv6 translators (RFC 6052) whose addresses embed an IPv4 client in their
   * last 32 bits; such addresses are keyed as that IPv4 address. Defaults to `['64:ff9b::/96']` (the
   * well-known prefix). Add your network-specific prefix if a SIIT/NAT46 gateway sits in front; `[]` keys
   * them as plain IPv6.
   */
  nat64Prefixes?: readonly string[];
  /**
   * Receives construction-time warnings (a trust list that trusts everyone). Without it, they are raised
   * through the request's diagnostics on the first request.
   */
  logger?: Logger;
  /**
   * With `logger`: `false` silences its warnings, an object by code (`{ WRN_RL_PERMISSIVE_TRUSTED_PROXIES:
   * false }`), as the middleware's `validate` does. Without `logger` the middleware's `validate` decides.
   * Defaults to `true`.
   */
  validate?: ValidateOption;
}

const IP_KEY_OPTIONS: KeysEnum<IpKeyOptions> = {
  trustedProxies: true,
  ipv6Prefix: true,
  ipv4Prefix: true,
  header: true,
  nat64Prefixes: true,
  logger: true,
  validate: true,
};

/** `IpKeyOptions` validated. */
interface IpKeyConfig {
  readonly trustedProxies: TrustedProxies;
  readonly header: ForwardingHeader;
  readonly ipv4Prefix: number;
  readonly ipv6Prefix: number;
  readonly nat64: readonly IpAddress[];
  /** `/<prefix>`, or '' for a whole address: precomputed, as the key is built on every request. */
  readonly ipv4Suffix: string;
  readonly ipv6Suffix: string;
}

const PATH = 'keys.ip';

/** How many socket address texts one `keys.ip()` function remembers (about 100 bytes each). */
export const SOCKET_CACHE_SIZE = 1024;
const COLON = 0x3a;

function parsePrefix(value: unknown, name: string, min: number, max: number, why: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new RateLimitConfigError(
      name === 'ipv6Prefix' ? 'ERR_RL_INVALID_IPV6_PREFIX' : 'ERR_RL_INVALID_IPV4_PREFIX',
      `${PATH}.${name}`,
      `must be an integer from ${min} to ${max} (${why})`,
      value,
    );
  }
  return value;
}

function parseNat64(value: unknown): IpAddress[] {
  const path = `${PATH}.nat64Prefixes`;
  if (!Array.isArray(value)) {
    throw new RateLimitConfigError('ERR_RL_INVALID_NAT64_PREFIX', path, "must be an array of IPv6 /96 CIDRs like ['64:ff9b::/96']", value);
  }
  return value.map((entry: unknown, i) => {
    const at = `${path}[${i}]`;
    const [text, bits] = typeof entry === 'string' ? entry.split('/') : [];
    const address = text === undefined || text.includes('%') ? undefined : parseIpAddress(text);
    if (address === undefined || address.kind() !== 'ipv6' || bits !== '96') {
      throw new RateLimitConfigError('ERR_RL_INVALID_NAT64_PREFIX', at, "must be an IPv6 /96 CIDR like '64:ff9b::/96'", entry);
    }
    if (formatIpAddress(networkAddress(address, 96)) !== formatIpAddress(address)) {
      throw new RateLimitConfigError(
        'ERR_RL_INVALID_NAT64_PREFIX',
        at,
        `has bits set after the /96 (where the IPv4 address goes); did you mean '${formatIpAddress(networkAddress(address, 96))}/96'?`,
        entry,
      );
    }
    return address;
  });
}

function parseIpKeyOptions(input: IpKeyOptions): IpKeyConfig {
  const options = readOptions(input, IP_KEY_OPTIONS, PATH, "{ trustedProxies: ['10.0.0.0/8'] }");
  const header = options.header ?? 'x-forwarded-for';
  if (header !== 'x-forwarded-for' && header !== 'forwarded') {
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_IP_HEADER',
      `${PATH}.header`,
      "must be 'x-forwarded-for' or 'forwarded' (lower case)",
      header,
    );
  }
  checkLogger(options.logger, `${PATH}.logger`);
  const ipv4Prefix = parsePrefix(options.ipv4Prefix ?? 32, 'ipv4Prefix', 16, 32, 'shorter prefixes put whole providers in one bucket');
  const ipv6Prefix = parsePrefix(options.ipv6Prefix ?? 64, 'ipv6Prefix', 32, 128, 'a /32 is a whole ISP; 48, 56 and 64 are typical');
  // Read first: trusting a range inside a NAT64 prefix trusts the IPv4 clients it embeds.
  const nat64 = Object.freeze(parseNat64(options.nat64Prefixes ?? ['64:ff9b::/96']));
  return Object.freeze({
    trustedProxies: compileTrustedProxies(options.trustedProxies, `${PATH}.trustedProxies`, nat64),
    header,
    ipv4Prefix,
    ipv6Prefix,
    nat64,
    ipv4Suffix: ipv4Prefix === 32 ? '' : `/${ipv4Prefix}`,
    ipv6Suffix: ipv6Prefix === 128 ? '' : `/${ipv6Prefix}`,
  });
}

/** The IPv4 address a translator embedded in the last 32 bits of `address`, if it is in one of the /96 `prefixes`. */
function embeddedIpv4(address: IpAddress, prefixes: readonly IpAddress[]): IpAddress | undefined {
  for (let i = 0; i < prefixes.length; i++) {
    const prefix = prefixes[i] as IpAddress;
    if (
      address.g0 === prefix.g0 &&
      address.g1 === prefix.g1 &&
      address.g2 === prefix.g2 &&
      address.g3 === prefix.g3 &&
      address.g4 === prefix.g4 &&
      address.g5 === prefix.g5
    ) {
      return IpAddress.v4(address.g6, address.g7);
    }
  }
  return undefined;
}

/** The key of a client address under the configured prefixes. */
function keyOf(address: IpAddress, config: IpKeyConfig): string {
  const v4 = address.family === 4 ? address : embeddedIpv4(address, config.nat64);
  if (v4 !== undefined) {
    return config.ipv4Prefix === 32 ? `ip:${formatIpAddress(v4)}` : `ip:${formatNetwork(v4, config.ipv4Prefix)}${config.ipv4Suffix}`;
  }
  return config.ipv6Prefix === 128
    ? `ip:${formatIpAddress(address)}`
    : `ip:${formatNetwork(address, config.ipv6Prefix)}${config.ipv6Suffix}`;
}

function permissiveMessage(entries: readonly string[]): string {
  return (
    `keys.ip({ trustedProxies }) contains ${entries.map((e) => `'${e}'`).join(' and ')}, which trust${entries.length === 1 ? 's' : ''} half of all client addresses or more (of IPv4, NAT64 prefixes such as 64:ff9b::/96 included, or of IPv6's global 2000::/3): any ` +
    'client can then pick its own key by sending X-Forwarded-For, and bypass IP-based limits. List only your ' +
    "proxies' addresses or ranges."
  );
}

/**
 * Keys a request by client IP. Validates options now (throws `RateLimitConfigError`); the returned
 * function never throws and returns undefined only when the request has no usable socket address.
 *
 * @example
 * keys.ip({ trustedProxies: ['loopback', '10.0.0.0/8'] }) // behind a load balancer in 10/8
 */
export function ipKey(options: IpKeyOptions = {}): KeyFunction {
  const config = parseIpKeyOptions(options);
  const validate = parseValidate(options.validate);
  const permissive = config.trustedProxies.permissive;
  let pendingWarning = permissive.length > 0;
  if (pendingWarning && options.logger !== undefined) {
    createDiagnostics(options.logger, validate).warn('WRN_RL_PERMISSIVE_TRUSTED_PROXIES', permissiveMessage(permissive));
    pendingWarning = false;
  }
  // What an IPv6 socket address text (IPv4-mapped included) comes to, by text: a keep-alive connection
  // presents the same text on every request, and a lookup costs a fraction of reading (and printing)
  // an IPv6 address. For a peer that is not a trusted proxy, its key (which depends on nothing but the
  // text); for a trusted proxy, its address, to walk the headers of each request from. Only texts that
  // start with ':' or are longer than 15 characters are looked up: never a dotted quad, cheaper to
  // read than to look up (short IPv6 texts are read).
  const sockets = new BoundedCache<string | IpAddress>(SOCKET_CACHE_SIZE);
  // The last socket address text keyed and its key, for any text (dotted quads too): requests come in
  // runs from one connection, and comparing with the last text costs a fraction of reading it again.
  let lastText: string | undefined;
  let lastKey = '';
  return function ipKey(_request, view) {
    if (pendingWarning) view.diagnostics.warn('WRN_RL_PERMISSIVE_TRUSTED_PROXIES', permissiveMessage(permissive));
    const remote = view.remoteAddress;
    if (remote === lastText && lastText !== undefined) {
      ignoreForwarding(view, config, lastText);
      return lastKey;
    }
    const text = typeof remote === 'string' && (remote.length > 15 || remote.charCodeAt(0) === COLON) ? remote : undefined;
    if (text !== undefined) {
      const known = sockets.get(text);
      if (typeof known === 'string') {
        ignoreForwarding(view, config, text);
        return known;
      }
      if (known !== undefined) return keyOf(clientBehindProxy(view, config, known), config);
    }
    const socket = socketAddress(view);
    if (socket === undefined) return undefined;
    if (config.trustedProxies.has(socket)) {
      if (text !== undefined) sockets.set(text, socket);
      return keyOf(clientBehindProxy(view, config, socket), config);
    }
    ignoreForwarding(view, config, socket);
    const key = keyOf(socket, config);
    if (text !== undefined) sockets.set(text, key);
    lastText = remote as string;
    lastKey = key;
    return key;
  };
}
