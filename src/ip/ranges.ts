/**
 * IP addresses and CIDR ranges: parsing an address to its bytes (IPv4-mapped IPv6 too), a range
 * to its canonical form (host bits cleared, IPv6 compressed as RFC 5952 says), and whether a
 * range holds an address. The configuration parses SLUICE_WEBHOOK_ALLOW with it, and the SSRF
 * guard of outgoing webhooks (delivery/ssrf.ts) judges every address with it.
 */
import net from 'node:net';

/** A parsed CIDR range. IPv4-mapped IPv6 ranges (::ffff:a.b.c.d/n, n >= 96) are stored as IPv4. */
export interface Cidr {
  readonly family: 4 | 6;
  /** Network address bytes (4 or 16), host bits cleared. */
  readonly network: Uint8Array;
  readonly prefix: number;
  /** Canonical text, for messages and logs. */
  readonly text: string;
}

/**
 * Parses `SLUICE_WEBHOOK_ALLOW`: CIDRs separated by commas and/or whitespace, e.g.
 * "127.0.0.0/8, ::1/128". A bare address means just that address. Host bits are cleared
 * (10.1.2.3/8 is 10.0.0.0/8). Throws on anything else, naming the entry.
 */
export function parseAllowList(text: string | undefined): Cidr[] {
  if (!text) return [];
  return text
    .split(/[\s,]+/)
    .filter((entry) => entry.length > 0)
    .map((entry) => {
      try {
        return parseCidr(entry);
      } catch (err) {
        throw new Error(`SLUICE_WEBHOOK_ALLOW: ${(err as Error).message}`, { cause: err });
      }
    });
}

/** One CIDR ("10.0.0.0/8", "fd00::/8", or a bare address). Throws with a clear message. */
export function parseCidr(text: string): Cidr {
  const slash = text.indexOf('/');
  const addr = slash === -1 ? text : text.slice(0, slash);
  const bytes = addr.includes('%') ? null : parseIp(addr);
  if (!bytes) throw new Error(`${JSON.stringify(text)} is not a CIDR range (expected e.g. 127.0.0.0/8 or ::1/128)`);
  const max = bytes.length * 8;
  let prefix = max;
  if (slash !== -1) {
    const p = text.slice(slash + 1);
    if (!/^\d{1,3}$/.test(p) || Number(p) > max) {
      throw new Error(`${JSON.stringify(text)} has an invalid prefix length (0 to ${max} for IPv${bytes.length === 4 ? 4 : 6})`);
    }
    prefix = Number(p);
  }
  // ::ffff:127.0.0.0/104 and 127.0.0.0/8 are the same range; keep one form so both match.
  const mapped = bytes.length === 16 && prefix >= 96 ? mappedV4(bytes) : null;
  if (mapped) return makeCidr(mapped, prefix - 96);
  return makeCidr(bytes, prefix);
}

function makeCidr(bytes: Uint8Array, prefix: number): Cidr {
  const network = new Uint8Array(bytes);
  for (let bit = prefix; bit < network.length * 8; bit++) network[bit >> 3]! &= ~(0x80 >> (bit & 7));
  const family = network.length === 4 ? 4 : 6;
  return { family, network, prefix, text: `${formatIp(network)}/${prefix}` };
}

/** Whether the range holds the address `bytes` (of the same family). */
export function contains(cidr: Cidr, bytes: Uint8Array): boolean {
  if (cidr.network.length !== bytes.length) return false;
  const whole = cidr.prefix >> 3;
  for (let i = 0; i < whole; i++) if (cidr.network[i] !== bytes[i]) return false;
  const rest = cidr.prefix & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return ((bytes[whole]! ^ cidr.network[whole]!) & mask) === 0;
}

/** The IPv4 address an IPv4-mapped IPv6 address (::ffff:a.b.c.d) stands for, else null. */
export function mappedV4(bytes: Uint8Array): Uint8Array | null {
  for (let i = 0; i < 10; i++) if (bytes[i] !== 0) return null;
  return bytes[10] === 0xff && bytes[11] === 0xff ? bytes.subarray(12, 16) : null;
}

/** 4 or 16 bytes, or null. Accepts brackets ([::1]) and an IPv6 zone (fe80::1%eth0). */
export function parseIp(text: string): Uint8Array | null {
  let s = text.trim();
  if (s.startsWith('[') && s.endsWith(']')) s = s.slice(1, -1);
  // A zone (fe80::1%eth0) names the interface, not the address; only IPv6 has one.
  const zone = s.indexOf('%');
  if (zone !== -1) {
    if (zone === s.length - 1 || !s.includes(':')) return null;
    s = s.slice(0, zone);
  }
  // net.isIP is strict: no octal, hex or shortened IPv4 forms, which URL parsing has already
  // turned into dotted quads anyway.
  switch (net.isIP(s)) {
    case 4:
      return Uint8Array.from(s.split('.').map(Number));
    case 6:
      return parseV6(s);
    default:
      return null;
  }
}

/** Expands a valid IPv6 address (net.isIP said so) into 16 bytes. */
function parseV6(s: string): Uint8Array {
  let text = s;
  const out = new Uint8Array(16);
  // A trailing dotted quad (::ffff:1.2.3.4) is the last 32 bits.
  const lastColon = text.lastIndexOf(':');
  let tailBytes: number[] = [];
  if (text.includes('.', lastColon)) {
    tailBytes = text.slice(lastColon + 1).split('.').map(Number);
    text = text.slice(0, lastColon + 1) + '0:0';
  }
  const [head = '', tail] = text.split('::');
  const headGroups = head ? head.split(':') : [];
  const tailGroups = tail === undefined ? [] : tail ? tail.split(':') : [];
  const zeros = 8 - headGroups.length - tailGroups.length;
  const groups = [...headGroups, ...Array<string>(tail === undefined ? 0 : zeros).fill('0'), ...tailGroups];
  groups.forEach((g, i) => {
    const v = parseInt(g, 16);
    out[i * 2] = v >> 8;
    out[i * 2 + 1] = v & 0xff;
  });
  if (tailBytes.length === 4) out.set(tailBytes, 12);
  return out;
}

function formatIp(bytes: Uint8Array): string {
  if (bytes.length === 4) return bytes.join('.');
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i]! << 8) | bytes[i + 1]!).toString(16));
  // Let the URL parser do the RFC 5952 compression (longest run of zeros as ::).
  return new URL(`http://[${groups.join(':')}]/`).hostname.slice(1, -1);
}
