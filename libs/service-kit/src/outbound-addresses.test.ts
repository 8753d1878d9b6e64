import { describe, expect, it } from 'vitest';
import { readConfig } from './config.js';
import {
  addressInCidr,
  cidrListSetting,
  classifyAddress,
  classRefusalReason,
  createOutboundAddressCheck,
  endpointsOfUrls,
  normaliseHost,
  parseCidr,
  pinnedLookup,
  resolveHost,
  type HostLookup,
  type OutboundVerdict,
} from './outbound-addresses.js';

/** A resolver from a table: these tests make no DNS query and open no connection. */
function tableLookup(table: Record<string, string[]>): HostLookup & { asked: string[] } {
  const asked: string[] = [];
  const lookup = async (name: string) => {
    asked.push(name);
    const addresses = table[name];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
    return addresses;
  };
  return Object.assign(lookup, { asked });
}

const reasonOf = (verdict: OutboundVerdict) => (verdict.allowed ? undefined : verdict.reason);

describe('outbound addresses — hosts normalised as a URL parser reads them', () => {
  it.each([
    ['2130706433', '127.0.0.1'],
    ['0x7f.1', '127.0.0.1'],
    ['0177.0.0.1', '127.0.0.1'],
    ['127.1', '127.0.0.1'],
    ['0', '0.0.0.0'],
    ['[::ffff:127.0.0.1]', '127.0.0.1'],
    ['::ffff:7f00:1', '127.0.0.1'],
    ['[0:0:0:0:0:0:0:1]', '::1'],
    ['FD00:EC2::254', 'fd00:ec2::254'],
  ])('%s is the address %s', (host, address) => {
    expect(normaliseHost(host)).toEqual({ address });
  });

  it('a name is lower-cased and loses its final dot; a port, path, credentials or a numeric last label make no host', () => {
    expect(normaliseHost('Hooks.Example.COM.')).toEqual({ name: 'hooks.example.com' });
    expect(normaliseHost('db.127.0.0.1.nip.io')).toEqual({ name: 'db.127.0.0.1.nip.io' });
    for (const bad of ['example.com:80', 'a@127.0.0.1', 'example.com/x', 'a?b', 'a#b', '', 'foo.0x7f', 'a b', '[::1'])
      expect(normaliseHost(bad), bad).toBeUndefined();
  });

  it('a literal resolves to itself without a lookup; a name to each of its addresses once, canonical', async () => {
    const lookup = tableLookup({ 'dual.example': ['::ffff:93.184.215.14', '93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'] });
    expect(await resolveHost('0x7f.1', lookup)).toEqual(['127.0.0.1']);
    expect(await resolveHost('dual.example', lookup)).toEqual(['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c']);
    expect(lookup.asked).toEqual(['dual.example']);
    await expect(resolveHost('nowhere.example', lookup)).rejects.toMatchObject({ code: 'ENOTFOUND' });
    await expect(resolveHost('a/b', lookup)).rejects.toThrow('"a/b" is not a valid host');
  });
});

describe('outbound addresses — each address classified', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['fd12:3456::1', 'private'],
    ['fc00::1', 'private'],
    ['169.254.169.254', 'metadata'],
    ['fd00:ec2::254', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['169.254.1.1', 'link-local'],
    ['fe80::1', 'link-local'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['100.64.0.1', 'carrier-grade-nat'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['192.0.2.1', 'reserved'],
    ['240.0.0.1', 'reserved'],
    ['2001:db8::1', 'reserved'],
    // IPv4-compatible (deprecated), 6to4 and Teredo carry an IPv4 address in ways no receiver needs.
    ['::7f00:1', 'reserved'],
    ['2002:7f00:1::', 'reserved'],
    ['2001::1', 'reserved'],
    // NAT64 (DNS64's answers in an IPv6-only cluster) is the IPv4 address it carries.
    ['64:ff9b::7f00:1', 'loopback'],
    ['64:ff9b::a9fe:a9fe', 'metadata'],
    ['64:ff9b::5db8:d70e', 'public'],
    ['93.184.215.14', 'public'],
    ['1.1.1.1', 'public'],
    ['2606:4700::1111', 'public'],
    ['::ffff:1.1.1.1', 'public'],
  ])('%s is %s', (address, addressClass) => {
    expect(classifyAddress(address)).toBe(addressClass);
  });

  it('classifying something that is not an address is a mistake, said so', () => {
    expect(() => classifyAddress('example.com')).toThrow('not an IP address: "example.com"');
  });
});

describe('outbound addresses — the check refuses what is not the outside', () => {
  it.each([
    ['10.0.0.1', '10.0.0.1 is a private address (RFC 1918, or IPv6 unique-local fc00::/7)'],
    ['172.16.0.1', '172.16.0.1 is a private address (RFC 1918, or IPv6 unique-local fc00::/7)'],
    ['192.168.1.1', '192.168.1.1 is a private address (RFC 1918, or IPv6 unique-local fc00::/7)'],
    ['169.254.169.254', "169.254.169.254 is a cloud metadata service's address"],
    ['fd00:ec2::254', "fd00:ec2::254 is a cloud metadata service's address"],
    ['[fe80::1]', 'fe80::1 is a link-local address'],
    ['::1', '::1 is a loopback address'],
    ['0.0.0.0', '0.0.0.0 is an unspecified address (this machine)'],
    ['100.64.0.1', '100.64.0.1 is a carrier-grade NAT address (100.64.0.0/10)'],
    ['2130706433', '127.0.0.1 is a loopback address'],
    ['0x7f.1', '127.0.0.1 is a loopback address'],
    ['0177.0.0.1', '127.0.0.1 is a loopback address'],
    ['[::ffff:127.0.0.1]', '127.0.0.1 is a loopback address'],
    ['[::ffff:a9fe:a9fe]', "169.254.169.254 is a cloud metadata service's address"],
    ['224.0.0.1', '224.0.0.1 is a multicast address'],
  ])('%s: refused', async (host, reason) => {
    const lookup = tableLookup({});
    const check = await createOutboundAddressCheck({ lookup });
    expect(await check.check(host, 443)).toEqual({ allowed: false, refusal: 'address', reason });
    expect(lookup.asked).toEqual([]);
  });

  it('a name is refused when any of its addresses is; one that resolves only outside is allowed, with every address to connect to', async () => {
    const lookup = tableLookup({
      localhost: ['127.0.0.1', '::1'],
      'db.127.0.0.1.nip.io': ['127.0.0.1'],
      'split.example': ['93.184.215.14', '10.0.0.7'],
      'hooks.example': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
    });
    const check = await createOutboundAddressCheck({ lookup });
    expect(reasonOf(await check.check('localhost', 80))).toBe('localhost resolves to 127.0.0.1, a loopback address');
    expect(reasonOf(await check.check('db.127.0.0.1.nip.io', 5432))).toBe('db.127.0.0.1.nip.io resolves to 127.0.0.1, a loopback address');
    expect(reasonOf(await check.check('split.example', 443))).toBe(
      'split.example resolves to 10.0.0.7, a private address (RFC 1918, or IPv6 unique-local fc00::/7)',
    );
    expect(await check.check('Hooks.Example.', 443)).toEqual({
      allowed: true,
      addresses: [
        { address: '93.184.215.14', family: 4 },
        { address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6 },
      ],
    });
    expect(await check.check('93.184.215.14', 443)).toEqual({ allowed: true, addresses: [{ address: '93.184.215.14', family: 4 }] });
  });

  it('a metadata name is refused without a lookup; a name that does not resolve and a host that is none are refused, saying so', async () => {
    const lookup = tableLookup({ empty: [] });
    const check = await createOutboundAddressCheck({ lookup });
    expect(await check.check('metadata.google.internal.', 80)).toEqual({
      allowed: false,
      refusal: 'metadata-name',
      reason: "metadata.google.internal is a cloud metadata service's name",
    });
    expect(await check.check('nowhere.example', 443)).toEqual({
      allowed: false,
      refusal: 'unresolved',
      reason: 'nowhere.example does not resolve (ENOTFOUND)',
    });
    expect(await check.check('empty', 443)).toEqual({ allowed: false, refusal: 'unresolved', reason: 'empty resolves to no address' });
    expect(await check.check('a@b', 443)).toEqual({ allowed: false, refusal: 'invalid-host', reason: '"a@b" is not a valid host' });
    expect(lookup.asked).toEqual(['nowhere.example', 'empty']);
  });

  it('an allowed range lets a private or loopback address through, and nothing outside it', async () => {
    const lookup = tableLookup({ 'receiver.cluster.local': ['10.1.2.3'], 'other.cluster.local': ['10.2.0.1'] });
    const check = await createOutboundAddressCheck({ allowedCidrs: ['10.1.0.0/16', '127.0.0.0/8', '::ffff:192.168.0.0/112'], lookup });
    expect(await check.check('receiver.cluster.local', 8080)).toEqual({ allowed: true, addresses: [{ address: '10.1.2.3', family: 4 }] });
    expect(await check.check('0x7f.1', 8080)).toEqual({ allowed: true, addresses: [{ address: '127.0.0.1', family: 4 }] });
    expect(await check.check('192.168.3.4', 80)).toMatchObject({ allowed: true });
    expect(reasonOf(await check.check('other.cluster.local', 8080))).toBe(
      'other.cluster.local resolves to 10.2.0.1, a private address (RFC 1918, or IPv6 unique-local fc00::/7)',
    );
    expect(reasonOf(await check.check('169.254.169.254', 80))).toBe("169.254.169.254 is a cloud metadata service's address");
    expect(reasonOf(await check.check('::1', 80))).toBe('::1 is a loopback address');
  });

  it('a control-plane endpoint is refused on its port, whatever range is allowed; on a local address, on every local address', async () => {
    const lookup = tableLookup({ 'postgres.internal': ['10.9.0.5'], 'nats.internal': ['10.9.0.6'] });
    const check = await createOutboundAddressCheck({
      allowedCidrs: ['0.0.0.0/0', '::/0'],
      controlPlane: [
        ...endpointsOfUrls('NATS', 'nats://127.0.0.1:4333, nats.internal', 'nats'),
        ...endpointsOfUrls('the store', 'postgres://svc:secret@postgres.internal/svc'),
        ...endpointsOfUrls('the gateway', 'https://svc.example.com'),
        { what: 'the operator', host: '10.20.0.0/16' },
      ],
      lookup,
    });
    expect(reasonOf(await check.check('127.0.0.1', 4333))).toBe('port 4333 of 127.0.0.1 is a control-plane endpoint (NATS)');
    expect(reasonOf(await check.check('127.0.0.2', 4333))).toBe('port 4333 of 127.0.0.2 is a control-plane endpoint (NATS)');
    expect(reasonOf(await check.check('[::1]', 4333))).toBe('port 4333 of ::1 is a control-plane endpoint (NATS)');
    expect(reasonOf(await check.check('0.0.0.0', 4333))).toBe('port 4333 of 0.0.0.0 is a control-plane endpoint (NATS)');
    expect(reasonOf(await check.check('10.9.0.6', 4222))).toBe('port 4222 of 10.9.0.6 is a control-plane endpoint (NATS)');
    expect(reasonOf(await check.check('10.9.0.5', 5432))).toBe('port 5432 of 10.9.0.5 is a control-plane endpoint (the store)');
    expect(reasonOf(await check.check('postgres.internal', 5432))).toBe('port 5432 of postgres.internal is a control-plane endpoint (the store)');
    expect(reasonOf(await check.check('10.20.3.4', 80))).toBe('port 80 of 10.20.3.4 is a control-plane endpoint (the operator)');
    // Another port of the same hosts is what the allowed range says.
    expect(await check.check('127.0.0.1', 4334)).toMatchObject({ allowed: true });
    expect(await check.check('10.9.0.5', 80)).toMatchObject({ allowed: true });
    // The gateway's public name does not resolve here: refused by its name still.
    expect(reasonOf(await check.check('svc.example.com', 443))).toBe('port 443 of svc.example.com is a control-plane endpoint (the gateway)');
    expect(lookup.asked).toEqual(expect.arrayContaining(['nats.internal', 'postgres.internal', 'svc.example.com']));
  });

  it('endpoints of URL settings: several NATS servers, the default port of each scheme; a URL that does not parse names none', () => {
    expect(endpointsOfUrls('NATS', 'nats://a:4333,b, tls://c', 'nats')).toEqual([
      { what: 'NATS', host: 'a', port: 4333 },
      { what: 'NATS', host: 'b', port: 4222 },
      { what: 'NATS', host: 'c', port: 4222 },
    ]);
    expect(endpointsOfUrls('the store', 'postgresql://u:p@[fd00::5]/db')).toEqual([{ what: 'the store', host: '[fd00::5]', port: 5432 }]);
    expect(endpointsOfUrls('the gateway', 'http://127.0.0.1:8080/')).toEqual([{ what: 'the gateway', host: '127.0.0.1', port: 8080 }]);
    // A Unix socket's store has no host to refuse.
    expect(endpointsOfUrls('the store', 'postgres:///svc')).toEqual([]);
    expect(endpointsOfUrls('the store', 'postgres://u:p@/svc?host=/var/run/postgresql')).toEqual([]);
  });
});

describe('outbound addresses — inspected for a caller with its own policy (egress)', () => {
  it('each address with its class, and whether the allowed ranges let it through; what no policy opens is refused as by check', async () => {
    const lookup = tableLookup({ 'half.example': ['93.184.215.14', '10.1.0.5', '192.168.0.4'], 'nats.internal': ['10.9.0.6'] });
    const check = await createOutboundAddressCheck({ allowedCidrs: ['10.1.0.0/16'], controlPlane: endpointsOfUrls('NATS', 'nats.internal', 'nats'), lookup });
    expect(await check.inspect('Half.Example.', 443)).toEqual({
      resolved: true,
      name: 'half.example',
      addresses: [
        { address: '93.184.215.14', family: 4, addressClass: 'public', allowed: true },
        { address: '10.1.0.5', family: 4, addressClass: 'private', allowed: true },
        { address: '192.168.0.4', family: 4, addressClass: 'private', allowed: false },
      ],
    });
    expect(await check.inspect('0x7f.1', 80)).toEqual({
      resolved: true,
      name: undefined,
      addresses: [{ address: '127.0.0.1', family: 4, addressClass: 'loopback', allowed: false }],
    });
    expect(await check.inspect('10.9.0.6', 4222)).toEqual({
      resolved: false,
      refusal: 'control-plane',
      reason: 'port 4222 of 10.9.0.6 is a control-plane endpoint (NATS)',
    });
    expect(await check.inspect('metadata', 80)).toMatchObject({ resolved: false, refusal: 'metadata-name' });
    expect(await check.inspect('a/b', 80)).toMatchObject({ resolved: false, refusal: 'invalid-host' });
    expect(await check.inspect('nowhere.example', 80)).toMatchObject({ resolved: false, refusal: 'unresolved' });
    // check says no for the first address the ranges do not hold.
    expect(reasonOf(await check.check('half.example', 443))).toBe(
      'half.example resolves to 192.168.0.4, a private address (RFC 1918, or IPv6 unique-local fc00::/7)',
    );
  });

  it('an endpoint behind a shared address is refused by its name and its addresses that are not public, never by a public one', async () => {
    const lookup = tableLookup({ 'svc.example.com': ['93.184.215.14', '10.0.0.9'], 'site.example': ['93.184.215.14'] });
    const check = await createOutboundAddressCheck({
      allowedCidrs: ['10.0.0.0/8'],
      controlPlane: [{ what: 'the gateway', host: 'svc.example.com', port: 443, publicAddresses: false }],
      lookup,
    });
    expect(reasonOf(await check.check('svc.example.com', 443))).toBe('port 443 of svc.example.com is a control-plane endpoint (the gateway)');
    expect(reasonOf(await check.check('10.0.0.9', 443))).toBe('port 443 of 10.0.0.9 is a control-plane endpoint (the gateway)');
    expect(await check.check('site.example', 443)).toMatchObject({ allowed: true });
  });

  it('CIDR membership and refusal reasons in words', () => {
    expect(addressInCidr('0x7f.1', '127.0.0.0/8')).toBe(true);
    expect(addressInCidr('127.0.0.1', '127.0.0.0/8')).toBe(true);
    expect(addressInCidr('::ffff:10.1.2.3', '10.0.0.0/8')).toBe(true);
    expect(addressInCidr('fd12::1', 'fd00::/8')).toBe(true);
    expect(addressInCidr('10.1.2.3', 'fd00::/8')).toBe(false);
    expect(addressInCidr('10.1.2.3', '10.1.2.3')).toBe(true);
    expect(addressInCidr('example.com', '10.0.0.0/8')).toBe(false);
    expect(addressInCidr('10.1.2.3', '10.0.0.0/33')).toBe(false);
    expect(classRefusalReason(undefined, '127.0.0.1', 'loopback')).toBe('127.0.0.1 is a loopback address');
    expect(classRefusalReason('localhost', '::1', 'loopback')).toBe('localhost resolves to ::1, a loopback address');
  });
});

describe('outbound addresses — settings and connections', () => {
  it('CIDRs: IPv4 in four decimal parts, IPv6, a single address; anything else is no CIDR', () => {
    expect(parseCidr('10.0.0.0/8')?.map(String)).toEqual(['10.0.0.0', '8']);
    expect(parseCidr('fd00::/8')?.map(String)).toEqual(['fd00::', '8']);
    expect(parseCidr('192.168.1.7')?.map(String)).toEqual(['192.168.1.7', '32']);
    expect(parseCidr('::ffff:10.0.0.0/104')?.map(String)).toEqual(['10.0.0.0', '8']);
    for (const bad of ['10.0.0.0/33', '10/8', '0x0a.0.0.0/8', 'fd00::/129', 'example.com/8', '10.0.0.0/8/1', '10.0.0.0/-1', ''])
      expect(parseCidr(bad), bad).toBeUndefined();
  });

  it('SVC_*_ALLOWED_CIDRS: none by default; a comma-separated list; a bad entry named at start', () => {
    const settings = { allowed: cidrListSetting('SVC_WEBHOOK_ALLOWED_CIDRS') };
    expect(readConfig(settings, {})).toEqual({ allowed: [] });
    expect(readConfig(settings, { SVC_WEBHOOK_ALLOWED_CIDRS: '10.1.0.0/16, fd00::/8' })).toEqual({ allowed: ['10.1.0.0/16', 'fd00::/8'] });
    expect(() => readConfig(settings, { SVC_WEBHOOK_ALLOWED_CIDRS: '10.1.0.0/16,10.0.0.0/33,nope' })).toThrow(
      'SVC_WEBHOOK_ALLOWED_CIDRS must be comma-separated CIDRs such as 10.0.0.0/8 or fd00::/8; not one: "10.0.0.0/33", "nope"',
    );
  });

  it('an allowed range that is no CIDR is refused when the check is made', async () => {
    await expect(createOutboundAddressCheck({ allowedCidrs: ['10.0.0.0/33'] })).rejects.toThrow('not a CIDR: "10.0.0.0/33"');
  });

  it('the pinned lookup answers with the checked addresses only, by family, one or all', () => {
    const lookup = pinnedLookup([
      { address: '93.184.215.14', family: 4 },
      { address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6 },
    ]);
    const answers: unknown[] = [];
    lookup('hooks.example', { all: true }, (err, address) => answers.push([err, address]));
    lookup('hooks.example', {}, (err, address, family) => answers.push([err, address, family]));
    lookup('hooks.example', { family: 6 }, (err, address, family) => answers.push([err, address, family]));
    lookup('hooks.example', { family: 'IPv4', all: true }, (err, address) => answers.push([err, address]));
    expect(answers).toEqual([
      [
        null,
        [
          { address: '93.184.215.14', family: 4 },
          { address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6 },
        ],
      ],
      [null, '93.184.215.14', 4],
      [null, '2606:2800:21f:cb07:6820:80da:af6b:8b2c', 6],
      [null, [{ address: '93.184.215.14', family: 4 }]],
    ]);
    const onlyV4 = pinnedLookup([{ address: '93.184.215.14', family: 4 }]);
    onlyV4('hooks.example', { family: 6 }, (err) => answers.push(err));
    expect(answers.at(-1)).toMatchObject({ code: 'ENOTFOUND', message: 'no checked IPv6 address for hooks.example' });
  });
});
