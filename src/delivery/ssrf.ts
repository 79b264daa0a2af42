/**
 * The SSRF guard of outgoing webhooks. A webhook URL is chosen by an organization admin, and
 * Sluice's workers sit inside someone's network: without this, a webhook could POST to the
 * cloud metadata service, to PostgreSQL's neighbours, or to anything on loopback.
 *
 * The check is made on the address actually connected to, after DNS: a name that resolves to
 * 127.0.0.1 is blocked like the literal, and a name cannot pass the check with one answer and
 * connect with another (no DNS rebinding window), because the connection uses exactly the
 * addresses the check saw. `SLUICE_WEBHOOK_ALLOW` opens chosen ranges (tests, on-premises
 * receivers).
 */
import dns from 'node:dns';
import net from 'node:net';
import { buildConnector } from 'undici';
import { contains, mappedV4, parseCidr, parseIp, type Cidr } from '../ip/ranges';

/** `err.code` of a connection refused by the guard; send.ts makes it a fatal (non-retried) result. */
export const BLOCKED_CODE = 'ERR_SLUICE_WEBHOOK_BLOCKED';

export class BlockedAddressError extends Error {
  readonly code = BLOCKED_CODE;
  constructor(message: string) {
    super(message);
    this.name = 'BlockedAddressError';
  }
}

const ALLOW_HINT = '(allow it with SLUICE_WEBHOOK_ALLOW)';

// ---------------------------------------------------------------------------------------------
// Address classification

interface Range {
  cidr: Cidr;
  /** "a loopback address", ...: completes "<ip> is ...". */
  what: string;
}

/**
 * Everything a webhook may not reach by default, most specific first (the first match names
 * the reason). Based on the IANA special-purpose address registries, plus multicast.
 */
const IPV4_RANGES: readonly Range[] = [
  ['169.254.169.254/32', 'the cloud metadata address'],
  ['255.255.255.255/32', 'the broadcast address'],
  ['0.0.0.0/8', 'an unspecified ("this network") address'],
  ['10.0.0.0/8', 'a private address'],
  ['100.64.0.0/10', 'a carrier-grade NAT (shared) address'],
  ['127.0.0.0/8', 'a loopback address'],
  ['169.254.0.0/16', 'a link-local address'],
  ['172.16.0.0/12', 'a private address'],
  ['192.0.0.0/24', 'an IETF protocol assignment address'],
  ['192.0.2.0/24', 'a documentation address'],
  ['192.88.99.0/24', 'a 6to4 relay anycast address'],
  ['192.168.0.0/16', 'a private address'],
  ['198.18.0.0/15', 'a benchmarking address'],
  ['198.51.100.0/24', 'a documentation address'],
  ['203.0.113.0/24', 'a documentation address'],
  ['224.0.0.0/4', 'a multicast address'],
  ['240.0.0.0/4', 'a reserved address'],
].map(([text, what]) => ({ cidr: parseCidr(text!), what: what! }));

const IPV6_RANGES: readonly Range[] = [
  ['::/128', 'an unspecified address'],
  ['::1/128', 'a loopback address'],
  ['::/96', 'a deprecated IPv4-compatible address'],
  ['::ffff:0:0:0/96', 'an IPv4-translated address'],
  ['64:ff9b:1::/48', 'a local-use NAT64 address'],
  ['100::/64', 'a discard-only address'],
  ['2001::/32', 'a Teredo address'],
  ['2001:2::/48', 'a benchmarking address'],
  ['2001:10::/28', 'an ORCHID address'],
  ['2001:20::/28', 'an ORCHID address'],
  ['2001:db8::/32', 'a documentation address'],
  ['3fff::/20', 'a documentation address'],
  ['fc00::/7', 'a unique local address'],
  ['fe80::/10', 'a link-local address'],
  ['fec0::/10', 'a site-local address'],
  ['ff00::/8', 'a multicast address'],
].map(([text, what]) => ({ cidr: parseCidr(text!), what: what! }));

/** Global unicast: the only IPv6 space that is public at all. */
const IPV6_GLOBAL = parseCidr('2000::/3');
/** Prefixes that carry an IPv4 address a packet may end up at: judged by that address. */
const NAT64 = parseCidr('64:ff9b::/96');
const SIX_TO_FOUR = parseCidr('2002::/16');

/**
 * Why `ip` may not be reached by default ("a loopback address", ...), or null when it is a
 * public address. Anything that is not an IP address is refused too.
 */
export function forbiddenReason(ip: string): string | null {
  const bytes = parseIp(ip);
  if (!bytes) return 'not an IP address';
  return bytes.length === 4 ? reasonV4(bytes) : reasonV6(bytes);
}

/** True for every address a webhook may not reach unless the allow-list says so. */
export function isForbiddenAddress(ip: string): boolean {
  return forbiddenReason(ip) !== null;
}

function reasonV4(bytes: Uint8Array): string | null {
  return IPV4_RANGES.find((r) => contains(r.cidr, bytes))?.what ?? null;
}

function reasonV6(bytes: Uint8Array): string | null {
  // Mapped first: ::ffff:127.0.0.1 is 127.0.0.1 as far as the kernel is concerned.
  const mapped = mappedV4(bytes);
  if (mapped) return qualify(reasonV4(mapped), 'an IPv4-mapped', mapped);
  const listed = IPV6_RANGES.find((r) => contains(r.cidr, bytes));
  if (listed) return listed.what;
  if (contains(NAT64, bytes)) return qualify(reasonV4(bytes.subarray(12, 16)), 'a NAT64', bytes.subarray(12, 16));
  if (contains(SIX_TO_FOUR, bytes)) return qualify(reasonV4(bytes.subarray(2, 6)), 'a 6to4', bytes.subarray(2, 6));
  if (!contains(IPV6_GLOBAL, bytes)) return 'a reserved address';
  return null;
}

/** "a loopback address" → "an IPv4-mapped address of 127.0.0.1, a loopback address". */
function qualify(inner: string | null, kind: string, v4: Uint8Array): string | null {
  return inner === null ? null : `${kind} address of ${v4.join('.')}, ${inner}`;
}

// ---------------------------------------------------------------------------------------------
// Allow-list

/** True when `ip` lies in one of the allowed ranges (IPv4-mapped IPv6 addresses match IPv4 ranges). */
export function isAllowed(ip: string, allow: readonly Cidr[]): boolean {
  const parsed = parseIp(ip);
  if (!parsed) return false;
  const bytes = (parsed.length === 16 && mappedV4(parsed)) || parsed;
  return allow.some((cidr) => contains(cidr, bytes));
}

/**
 * The verdict on one address: null when a webhook may connect to it, else why not (the text
 * that follows "<ip> is ...").
 */
export function blockedReason(ip: string, allow: readonly Cidr[]): string | null {
  if (isAllowed(ip, allow)) return null;
  return forbiddenReason(ip);
}

// ---------------------------------------------------------------------------------------------
// The connection: DNS lookup and undici connector

type LookupAddress = { address: string; family: number };
type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for net/tls.connect that resolves as usual and then keeps only the addresses a
 * webhook may reach. Refuses the connection, with the reason, when none is left.
 */
export function guardedLookup(allow: readonly Cidr[]) {
  return (hostname: string, options: dns.LookupOptions, callback: LookupCallback): void => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      const permitted = addresses.filter((a) => blockedReason(a.address, allow) === null);
      if (permitted.length === 0) {
        const first = addresses[0];
        const why = first ? `${first.address}, ${forbiddenReason(first.address) ?? 'blocked'}` : 'no address';
        const more = addresses.length > 1 ? ` (and ${addresses.length - 1} more, none allowed)` : '';
        return callback(new BlockedAddressError(`blocked: ${hostname} resolves to ${why}${more} ${ALLOW_HINT}`), []);
      }
      if (options.all) return callback(null, permitted);
      callback(null, permitted[0]!.address, permitted[0]!.family);
    });
  };
}

/** "blocked: 127.0.0.1 is a loopback address (allow it with SLUICE_WEBHOOK_ALLOW)", or null. */
export function checkAddress(ip: string, allow: readonly Cidr[]): string | null {
  const why = blockedReason(ip, allow);
  return why === null ? null : `blocked: ${ip} is ${why} ${ALLOW_HINT}`;
}

/**
 * An undici connector that refuses forbidden addresses: IP literals before connecting, names
 * through the guarded lookup, and every connection once more on the socket's actual peer
 * address (belt and braces: whatever path the address took, this is the one that counts).
 */
export function guardedConnector(allow: readonly Cidr[], options: buildConnector.BuildOptions = {}): buildConnector.connector {
  const connect = buildConnector({ ...options, lookup: guardedLookup(allow) } as buildConnector.BuildOptions);
  return (opts, callback) => {
    const host = opts.hostname.replace(/^\[(.*)\]$/, '$1');
    // Node does not call lookup for an IP literal, so it is judged here.
    if (net.isIP(host.split('%')[0]!)) {
      const blocked = checkAddress(host, allow);
      if (blocked) return callback(new BlockedAddressError(blocked), null);
    }
    connect(opts, (...args) => {
      const [err, socket] = args;
      if (err) return callback(err, null);
      // No peer address means the socket is already gone; the request fails on its own.
      const peer = socket.remoteAddress;
      const blocked = peer === undefined ? null : checkAddress(peer, allow);
      if (blocked) {
        socket.destroy();
        return callback(new BlockedAddressError(blocked), null);
      }
      callback(null, socket);
    });
  };
}
