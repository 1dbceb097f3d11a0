/**
 * @module The trusted-proxy walk: which address is the client? The socket peer, unless it is a trusted
 * proxy; then the forwarding header, read from the right, skipping trusted hops, up to the first
 * untrusted one. A malformed hop stops the walk at the last good one: a client can never write its own
 * key, and a client behind our proxies can never make the proxy's own address the key by accident of
 * parsing (the entries our proxies append are read first).
 */

import type { HeaderBag, RequestView } from '../request-view.js';
import { type ForwardingHeader, HopReader } from './forwarded-header.js';
import { formatIpAddress, type IpAddress, parseIpAddress } from './ip-address.js';
import { readHeader } from './read-header.js';
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

/** The socket address of a request; undefined (warned once) when it is missing or not an IP address. */
export function socketAddress(view: RequestView): IpAddress | undefined {
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
  }
  return socket;
}

/**
 * For a socket peer that is not a trusted proxy (the client itself): warns once when it sent a
 * forwarding header, which is ignored. `peer` is its address, or the socket address text it was read
 * from (then read again only to name it in the warning).
 */
export function ignoreForwarding(view: RequestView, config: ClientAddressConfig, peer: IpAddress | string): void {
  const { header } = config;
  const other: ForwardingHeader = header === 'forwarded' ? 'x-forwarded-for' : 'forwarded';
  const sent = present(view.headers, header) ? header : present(view.headers, other) ? other : undefined;
  if (sent === undefined) return;
  // A text here was read as an address before (it is only passed for a remembered socket address).
  const address = typeof peer === 'string' ? (parseIpAddress(peer) as IpAddress) : peer;
  // The address is the client's: it travels in the fields (which a logger can redact), never in the text.
  view.diagnostics.warn(
    'WRN_RL_UNTRUSTED_FORWARDED_HEADER',
    `A request carries the ${HEADER_LABEL[sent]} header, but its peer (the field 'peer') is not in ` +
      "keys.ip({ trustedProxies }), so the header is ignored and the peer's own address is the key. If this server " +
      "runs behind a proxy or load balancer, list the proxy's addresses (e.g. trustedProxies: ['10.0.0.0/8'] or " +
      "'private'); never trust everyone. If clients connect directly, this warning is expected: switch it off with " +
      'validate: { WRN_RL_UNTRUSTED_FORWARDED_HEADER: false }.',
    { peer: formatIpAddress(address) },
  );
}

/** The client behind the trusted proxy `socket`: the walk of the forwarding header. */
export function clientBehindProxy(view: RequestView, config: ClientAddressConfig, socket: IpAddress): IpAddress {
  const { trustedProxies, header } = config;
  const value = readHeader(view.headers, header);
  if (value === undefined) {
    const other: ForwardingHeader = header === 'forwarded' ? 'x-forwarded-for' : 'forwarded';
    if (present(view.headers, other)) {
      view.diagnostics.warn(
        'WRN_RL_IGNORED_FORWARDED_HEADER',
        `A trusted proxy (the field 'proxy') sent ${HEADER_LABEL[other]} but keys.ip() reads ` +
          `${HEADER_LABEL[header]} (option 'header'), so every client behind it shares the proxy's key. ` +
          `Set header: '${other}' if that is the header your proxy writes.`,
        { proxy: formatIpAddress(socket) },
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
        `${header === 'x-forwarded-for' ? 'An' : 'A'} ${HEADER_LABEL[header]} entry next to a trusted hop (the field 'hop') is not an IP address ` +
          "(empty, garbage, 'unknown', obfuscated or oversized), so the walk stopped there and that hop is the key. " +
          'If your proxies write such entries, the clients behind them share one key.',
        { hop: formatIpAddress(client) },
      );
      return client;
    }
    client = address;
    if (!trustedProxies.has(address)) return address;
  }
  return client;
}
