/**
 * @module The trusted-proxy walk: which address is the client? The socket peer, unless it is a trusted
 * proxy; then the forwarding header, read from the right, skipping trusted hops, up to the first
 * untrusted one. A malformed hop stops the walk at the last good one: a client can never write its own
 * key, and a client behind our proxies can never make the proxy's own address the key by accident of
 * parsing (the entries our proxies append are read first).
 */
import { type ForwardingHeader, HopReader } from './forwarded-header.js';
import { formatIpAddress, type IpAddress, parseIpAddress } from './ip-address.js';
import { readHeader } from './read-header.js';
import type { HeaderBag, RequestView } from './request-view.js';
import type { TrustedProxies } from './trusted-proxies.js';

export interface ClientAddressConfig {
  readonly trustedProxies: TrustedProxies;
  readonly header: ForwardingHeader;
}

const HEADER_LABEL: Record<ForwardingHeader, string> = { 'x-forwarded-for': 'X-Forwarded-For', forwarded: 'Forwarded' };

function present(headers: HeaderBag, name: ForwardingHeader): boolean {
  const value = readHeader(headers, name);
  return value !== undefined && value.trim() !== '';
}

/**
 * Resolves the client address of a request. Undefined only when the socket address is missing or not an
 * IP address (warned once). Never throws on header content.
 */
export function resolveClientAddress(view: RequestView, config: ClientAddressConfig): IpAddress | undefined {
  const remote: unknown = view.remoteAddress;
  if (remote === undefined || remote === null) {
    view.diagnostics.warn(
      'WRN_RL_UNDEFINED_REMOTE_ADDRESS',
      'keys.ip() got a request without a socket address (the connection closed early, or the server listens on a ' +
        'Unix socket); such requests get no IP key. Chain a fallback with keys.first(keys.ip(...), ...) if that is expected.',
    );
    return undefined;
  }
  const socket = typeof remote === 'string' ? parseIpAddress(remote) : undefined;
  if (socket === undefined) {
    view.diagnostics.warn(
      'WRN_RL_INVALID_REMOTE_ADDRESS',
      'keys.ip() got a socket address that is not an IP address; such requests get no IP key. ' +
        "Check what the adapter passes as 'remoteAddress'.",
    );
    return undefined;
  }
  const { trustedProxies, header } = config;
  const other: ForwardingHeader = header === 'forwarded' ? 'x-forwarded-for' : 'forwarded';
  if (!trustedProxies.has(socket)) {
    const sent = present(view.headers, header) ? header : present(view.headers, other) ? other : undefined;
    if (sent !== undefined) {
      view.diagnostics.warn(
        'WRN_RL_UNTRUSTED_FORWARDED_HEADER',
        `A request from ${formatIpAddress(socket)} carries the ${HEADER_LABEL[sent]} header, but that peer is not in ` +
          "keys.ip({ trustedProxies }), so the header is ignored and the peer's own address is the key. If this server " +
          "runs behind a proxy or load balancer, list the proxy's addresses (e.g. trustedProxies: ['10.0.0.0/8'] or " +
          "'private'); never trust everyone. If clients connect directly, this warning is expected: switch it off with " +
          'validate: { WRN_RL_UNTRUSTED_FORWARDED_HEADER: false }.',
      );
    }
    return socket;
  }
  const value = readHeader(view.headers, header);
  if (value === undefined) {
    if (present(view.headers, other)) {
      view.diagnostics.warn(
        'WRN_RL_IGNORED_FORWARDED_HEADER',
        `The trusted proxy ${formatIpAddress(socket)} sent ${HEADER_LABEL[other]} but keys.ip() reads ` +
          `${HEADER_LABEL[header]} (option 'header'), so every client behind it shares the proxy's key. ` +
          `Set header: '${other}' if that is the header your proxy writes.`,
      );
    }
    return socket;
  }
  let client = socket;
  const hops = new HopReader(value, header);
  for (let hop = hops.next(); hop !== null; hop = hops.next()) {
    const address = hop === undefined ? undefined : parseIpAddress(hop);
    if (address === undefined) {
      view.diagnostics.warn(
        'WRN_RL_MALFORMED_FORWARDED_HEADER',
        `A ${HEADER_LABEL[header]} entry next to the trusted hop ${formatIpAddress(client)} is not an IP address ` +
          "(empty, garbage, 'unknown', obfuscated or oversized), so the walk stopped there and that hop is the key. " +
          'If your proxies write such entries, the clients behind them share one key.',
      );
      return client;
    }
    client = address;
    if (!trustedProxies.has(address)) return address;
  }
  return client;
}
