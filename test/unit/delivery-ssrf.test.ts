/**
 * The SSRF guard's pure parts: which addresses are forbidden and why, the allow-list, and the
 * DNS filter (with dns.lookup stubbed, so names can resolve to whatever the test needs).
 */
import dns from 'node:dns';
import { BLOCKED_CODE, BlockedAddressError, checkAddress, forbiddenReason, guardedLookup, isAllowed, isForbiddenAddress } from '../../src/delivery/ssrf';
import { parseAllowList, parseCidr } from '../../src/ip/ranges';

describe('isForbiddenAddress / forbiddenReason: IPv4', () => {
  it.each([
    ['127.0.0.1', 'a loopback address'],
    ['127.255.255.254', 'a loopback address'],
    ['10.0.0.1', 'a private address'],
    ['10.255.255.255', 'a private address'],
    ['172.16.0.1', 'a private address'],
    ['172.31.255.255', 'a private address'],
    ['192.168.1.1', 'a private address'],
    ['169.254.0.1', 'a link-local address'],
    ['169.254.169.254', 'the cloud metadata address'],
    ['100.64.0.1', 'a carrier-grade NAT (shared) address'],
    ['100.127.255.255', 'a carrier-grade NAT (shared) address'],
    ['100.100.100.200', 'a carrier-grade NAT (shared) address'],
    ['0.0.0.0', 'an unspecified ("this network") address'],
    ['0.1.2.3', 'an unspecified ("this network") address'],
    ['224.0.0.1', 'a multicast address'],
    ['239.255.255.250', 'a multicast address'],
    ['255.255.255.255', 'the broadcast address'],
    ['240.0.0.1', 'a reserved address'],
    ['192.0.0.8', 'an IETF protocol assignment address'],
    ['192.0.2.10', 'a documentation address'],
    ['198.51.100.7', 'a documentation address'],
    ['203.0.113.99', 'a documentation address'],
    ['198.18.0.1', 'a benchmarking address'],
    ['198.19.255.255', 'a benchmarking address'],
    ['192.88.99.1', 'a 6to4 relay anycast address'],
  ])('%s is %s', (ip, reason) => {
    expect(forbiddenReason(ip)).toBe(reason);
    expect(isForbiddenAddress(ip)).toBe(true);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '11.0.0.1',
    '126.255.255.255',
    '128.0.0.1',
    '172.15.255.255',
    '172.32.0.1',
    '192.167.255.255',
    '192.169.0.1',
    '100.63.255.255',
    '100.128.0.1',
    '169.253.255.255',
    '169.255.0.1',
    '198.17.255.255',
    '198.20.0.1',
    '223.255.255.255',
  ])('%s is public', (ip) => {
    expect(forbiddenReason(ip)).toBeNull();
    expect(isForbiddenAddress(ip)).toBe(false);
  });
});

describe('isForbiddenAddress / forbiddenReason: IPv6', () => {
  it.each([
    ['::1', 'a loopback address'],
    ['[::1]', 'a loopback address'],
    ['0:0:0:0:0:0:0:1', 'a loopback address'],
    ['::', 'an unspecified address'],
    ['fe80::1', 'a link-local address'],
    ['fe80::1%eth0', 'a link-local address'],
    ['febf:ffff::1', 'a link-local address'],
    ['fec0::1', 'a site-local address'],
    ['fc00::1', 'a unique local address'],
    ['fd12:3456:789a::1', 'a unique local address'],
    ['fd00:ec2::254', 'a unique local address'],
    ['ff02::1', 'a multicast address'],
    ['ff05::1:3', 'a multicast address'],
    ['2001:db8::1', 'a documentation address'],
    ['3fff::1', 'a documentation address'],
    ['2001::1', 'a Teredo address'],
    ['2001:2::1', 'a benchmarking address'],
    ['100::1', 'a discard-only address'],
    ['64:ff9b:1::1', 'a local-use NAT64 address'],
    ['::127.0.0.1', 'a deprecated IPv4-compatible address'],
    ['::ffff:0:7f00:1', 'an IPv4-translated address'],
    ['4000::1', 'a reserved address'],
    ['1::1', 'a reserved address'],
  ])('%s is %s', (ip, reason) => {
    expect(forbiddenReason(ip)).toBe(reason);
  });

  it.each([
    ['::ffff:127.0.0.1', 'an IPv4-mapped address of 127.0.0.1, a loopback address'],
    ['::ffff:7f00:1', 'an IPv4-mapped address of 127.0.0.1, a loopback address'],
    ['0:0:0:0:0:ffff:7f00:0001', 'an IPv4-mapped address of 127.0.0.1, a loopback address'],
    ['::FFFF:10.1.2.3', 'an IPv4-mapped address of 10.1.2.3, a private address'],
    ['::ffff:169.254.169.254', 'an IPv4-mapped address of 169.254.169.254, the cloud metadata address'],
    ['::ffff:c0a8:101', 'an IPv4-mapped address of 192.168.1.1, a private address'],
    ['::ffff:0.0.0.0', 'an IPv4-mapped address of 0.0.0.0, an unspecified ("this network") address'],
    ['::ffff:100.64.0.1', 'an IPv4-mapped address of 100.64.0.1, a carrier-grade NAT (shared) address'],
    ['::ffff:224.0.0.1', 'an IPv4-mapped address of 224.0.0.1, a multicast address'],
    ['64:ff9b::7f00:1', 'a NAT64 address of 127.0.0.1, a loopback address'],
    ['64:ff9b::169.254.169.254', 'a NAT64 address of 169.254.169.254, the cloud metadata address'],
    ['2002:7f00:1::1', 'a 6to4 address of 127.0.0.1, a loopback address'],
    ['2002:a00:1::', 'a 6to4 address of 10.0.0.1, a private address'],
  ])('%s, which embeds IPv4, is %s', (ip, reason) => {
    expect(forbiddenReason(ip)).toBe(reason);
  });

  it.each(['2606:4700:4700::1111', '2001:4860:4860::8888', '2a00:1450:4001:82b::200e', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1'])(
    '%s is public',
    (ip) => {
      expect(forbiddenReason(ip)).toBeNull();
    },
  );
});

describe('isForbiddenAddress: what is not an address', () => {
  it.each(['localhost', '', ' ', '1.2.3', '01.2.3.4', '256.1.1.1', '1.2.3.4.5', '0x7f.0.0.1', '2130706433', ':::1', '[::1', 'fe80::1%'])(
    '%p is refused',
    (text) => {
      expect(isForbiddenAddress(text)).toBe(true);
      expect(forbiddenReason(text)).toBe('not an IP address');
    },
  );
});

describe('parseAllowList / parseCidr', () => {
  it('reads comma- and space-separated CIDRs, IPv4 and IPv6', () => {
    expect(parseAllowList('127.0.0.0/8, ::1/128').map((c) => c.text)).toEqual(['127.0.0.0/8', '::1/128']);
    expect(parseAllowList(' 10.0.0.0/8 ,,fd00::/8\n192.168.0.0/16 ').map((c) => c.text)).toEqual([
      '10.0.0.0/8',
      'fd00::/8',
      '192.168.0.0/16',
    ]);
  });

  it('is empty for an unset or empty setting', () => {
    expect(parseAllowList(undefined)).toEqual([]);
    expect(parseAllowList('')).toEqual([]);
    expect(parseAllowList(' , ')).toEqual([]);
  });

  it('takes a bare address as just that address', () => {
    expect(parseCidr('10.1.2.3')).toMatchObject({ family: 4, prefix: 32, text: '10.1.2.3/32' });
    expect(parseCidr('::1')).toMatchObject({ family: 6, prefix: 128, text: '::1/128' });
  });

  it('clears host bits and writes IPv6 canonically', () => {
    expect(parseCidr('10.1.2.3/8').text).toBe('10.0.0.0/8');
    expect(parseCidr('172.31.1.1/12').text).toBe('172.16.0.0/12');
    expect(parseCidr('FD00:0:0::1/8').text).toBe('fd00::/8');
    expect(parseCidr('2001:DB8:0:0:1:0:0:1/128').text).toBe('2001:db8::1:0:0:1/128');
    expect(parseCidr('0.0.0.0/0').text).toBe('0.0.0.0/0');
  });

  it('stores an IPv4-mapped IPv6 range as the IPv4 range it is', () => {
    expect(parseCidr('::ffff:127.0.0.0/104')).toMatchObject({ family: 4, prefix: 8, text: '127.0.0.0/8' });
  });

  it.each([
    ['localhost', /"localhost" is not a CIDR range/],
    ['10.0.0.0/33', /"10.0.0.0\/33" has an invalid prefix length \(0 to 32 for IPv4\)/],
    ['::1/129', /invalid prefix length \(0 to 128 for IPv6\)/],
    ['10.0.0.0/', /invalid prefix length/],
    ['10.0.0.0/8/9', /invalid prefix length/],
    ['10.0.0.0/-1', /invalid prefix length/],
    ['10.0.0.0/08x', /invalid prefix length/],
    ['10.0.0/8', /is not a CIDR range/],
    ['fe80::1%eth0/64', /is not a CIDR range/],
    ['127.0.0.0/8;rm', /invalid prefix length/],
  ])('rejects %p with a clear error', (entry, message) => {
    expect(() => parseAllowList(`127.0.0.0/8, ${entry}`)).toThrow(message);
    expect(() => parseAllowList(entry)).toThrow(/^SLUICE_WEBHOOK_ALLOW: /);
  });
});

describe('isAllowed', () => {
  const allow = parseAllowList('127.0.0.0/8, ::1/128, 172.16.0.0/12, fe80::/10, 192.168.1.7');

  it.each(['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1', '172.16.0.0', '172.31.255.255', 'fe80::1', 'febf::1', '192.168.1.7'])(
    '%s is in the list',
    (ip) => {
      expect(isAllowed(ip, allow)).toBe(true);
    },
  );

  it.each(['128.0.0.1', '::2', '172.32.0.0', '172.15.255.255', 'fec0::1', '192.168.1.8', '10.0.0.1', 'nonsense'])(
    '%s is not',
    (ip) => {
      expect(isAllowed(ip, allow)).toBe(false);
    },
  );

  it('keeps families apart: 0.0.0.0/0 is every IPv4 address and no IPv6 one', () => {
    const all4 = parseAllowList('0.0.0.0/0');
    expect(isAllowed('10.1.1.1', all4)).toBe(true);
    expect(isAllowed('::ffff:10.1.1.1', all4)).toBe(true);
    expect(isAllowed('fd00::1', all4)).toBe(false);
  });

  it('allows nothing with an empty list', () => {
    expect(isAllowed('127.0.0.1', [])).toBe(false);
  });
});

describe('checkAddress', () => {
  it('says why, and how to allow it', () => {
    expect(checkAddress('127.0.0.1', [])).toBe('blocked: 127.0.0.1 is a loopback address (allow it with SLUICE_WEBHOOK_ALLOW)');
    expect(checkAddress('169.254.169.254', [])).toBe(
      'blocked: 169.254.169.254 is the cloud metadata address (allow it with SLUICE_WEBHOOK_ALLOW)',
    );
  });

  it('lets public and allowed addresses through', () => {
    expect(checkAddress('8.8.8.8', [])).toBeNull();
    expect(checkAddress('127.0.0.1', parseAllowList('127.0.0.0/8'))).toBeNull();
    expect(checkAddress('10.0.0.1', parseAllowList('127.0.0.0/8'))).toMatch(/^blocked: 10.0.0.1 is a private address/);
  });
});

describe('guardedLookup', () => {
  let answers: { address: string; family: number }[];

  beforeEach(() => {
    jest.spyOn(dns, 'lookup').mockImplementation(((_host: string, _opts: unknown, cb: (e: null, a: typeof answers) => void) =>
      process.nextTick(cb, null, answers)) as unknown as typeof dns.lookup);
  });
  afterEach(() => {
    jest.restoreAllMocks();
  });

  function lookup(host: string, all: boolean, allow = parseAllowList('')) {
    return new Promise<{ err: NodeJS.ErrnoException | null; address: unknown; family?: number }>((resolve) => {
      guardedLookup(allow)(host, { all }, (err, address, family) => resolve({ err, address, family }));
    });
  }

  it('keeps only the addresses a webhook may reach', async () => {
    answers = [
      { address: '10.0.0.1', family: 4 },
      { address: '93.184.216.34', family: 4 },
      { address: '::1', family: 6 },
      { address: '2606:4700::1', family: 6 },
    ];
    expect(await lookup('mixed.test', true)).toEqual({
      err: null,
      address: [
        { address: '93.184.216.34', family: 4 },
        { address: '2606:4700::1', family: 6 },
      ],
      family: undefined,
    });
    expect(await lookup('mixed.test', false)).toEqual({ err: null, address: '93.184.216.34', family: 4 });
  });

  it('refuses a name with no reachable address, saying what it resolved to', async () => {
    answers = [
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ];
    const { err } = await lookup('localhost', true);
    expect(err).toBeInstanceOf(BlockedAddressError);
    expect(err!.code).toBe(BLOCKED_CODE);
    expect(err!.message).toBe(
      'blocked: localhost resolves to 127.0.0.1, a loopback address (and 1 more, none allowed) (allow it with SLUICE_WEBHOOK_ALLOW)',
    );
  });

  it('lets allowed private addresses through', async () => {
    answers = [
      { address: '::1', family: 6 },
      { address: '127.0.0.1', family: 4 },
    ];
    expect(await lookup('localhost', true, parseAllowList('127.0.0.0/8'))).toEqual({
      err: null,
      address: [{ address: '127.0.0.1', family: 4 }],
      family: undefined,
    });
  });

  it('passes DNS errors on as they are', async () => {
    jest.spyOn(dns, 'lookup').mockImplementation(((_h: string, _o: unknown, cb: (e: Error) => void) =>
      process.nextTick(cb, Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.test'), { code: 'ENOTFOUND' }))) as unknown as typeof dns.lookup);
    const { err } = await lookup('nowhere.test', true);
    expect(err?.code).toBe('ENOTFOUND');
  });
});
