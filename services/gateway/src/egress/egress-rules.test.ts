import { describe, expect, it } from 'vitest';
import type { PermissionRule } from '@svc/protocol';
import type { HostLookup } from '@svc/service-kit';
import { compileEgressRule, peopleVerdict, resolvedTarget, templateVerdict, type ResolvedTarget } from './egress-rules.js';
import { createEgressAddressCheck } from './refused-addresses.js';

/** Names and what they resolve to: these tests make no DNS query and open no connection. */
const NAMES: Record<string, string[]> = {
  localhost: ['127.0.0.1', '::1'],
  'db.127.0.0.1.nip.io': ['127.0.0.1'],
  'registry.npmjs.org': ['104.16.1.34', '104.16.2.34'],
  'cdn.example': ['93.184.215.14'],
  'split.example': ['93.184.215.14', '93.184.215.15'],
  'half-inside.example': ['93.184.215.14', '10.0.0.7'],
  'v6.example': ['2606:4700:4700::1111'],
  'corp.internal': ['10.1.2.3'],
  'lab.internal': ['172.16.0.9'],
};
const lookup: HostLookup = async (name) => {
  const addresses = NAMES[name];
  if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
  return addresses;
};

/** Resolves `host:port` as the gateway does for a tunnel (the operator opens 10.0.0.0/8 to people's decisions). */
async function target(hostPort: string): Promise<ResolvedTarget> {
  const check = await createEgressAddressCheck({
    natsUrl: undefined,
    databaseUrl: undefined,
    publicUrl: undefined,
    ownPorts: [],
    refused: [],
    allowedCidrs: ['10.0.0.0/8'],
    lookup,
  });
  const colon = hostPort.lastIndexOf(':');
  const port = Number(hostPort.slice(colon + 1));
  const inspection = await check.inspect(hostPort.slice(0, colon).replace(/^\[|\]$/g, ''), port);
  if (!inspection.resolved) throw new Error(inspection.reason);
  return resolvedTarget(port, inspection);
}

const template = (allow: string[], deny: string[] = []) => ({ allow, deny });
const rule = (decision: 'allow' | 'deny', input_pattern?: string, tool_name = 'network'): PermissionRule =>
  ({ tool_name, decision, added_by: 'alice', ...(input_pattern === undefined ? {} : { input_pattern }) }) as PermissionRule;

describe('egress rules — targets normalised and resolved once', () => {
  it('every spelling of an IP literal is the address; a name is itself, lower-cased, with its addresses', async () => {
    for (const spelling of ['2130706433:22', '0x7f.1:22', '0177.0.0.1:22', '127.1:22', '127.0.0.1:22'])
      expect(await target(spelling), spelling).toMatchObject({ target: '127.0.0.1:22', host: '127.0.0.1', name: undefined });
    expect(await target('[::ffff:127.0.0.1]:22')).toMatchObject({ target: '127.0.0.1:22' });
    expect(await target('[0:0::1]:22')).toMatchObject({ target: '[::1]:22', host: '::1' });
    const named = await target('DB.127.0.0.1.nip.io:5432');
    expect(named).toMatchObject({ target: 'db.127.0.0.1.nip.io:5432', name: 'db.127.0.0.1.nip.io', port: 5432 });
    expect(named.addresses.map((a) => [a.address, a.addressClass, a.allowed])).toEqual([['127.0.0.1', 'loopback', false]]);
  });

  it('a rule naming an address (any spelling, or a CIDR) reads addresses; a name or a glob reads the name, and addresses as text', async () => {
    for (const text of ['127.0.0.1:5432', '0x7f.1:5432', '2130706433:*', '127.0.0.0/8:5432', '127.0.0.0/8:54??', '[::ffff:7f00:1]:5432'])
      expect(compileEgressRule(text).namesAddresses, text).toBe(true);
    for (const text of ['localhost:5432', '127.0.0.*:5432', '*:*', '10.0.0.0/33:443', 'db.internal:*'])
      expect(compileEgressRule(text).namesAddresses, text).toBe(false);
    expect(compileEgressRule('127.0.0.0/8:5432').matchesAddress('127.9.9.9', 5432)).toBe(true);
    expect(compileEgressRule('127.0.0.0/8:5432').matchesAddress('127.9.9.9', 5433)).toBe(false);
    expect(compileEgressRule('[fd00::/8]:*').matchesAddress('fd12::1', 443)).toBe(true);
    expect(compileEgressRule('[fd00::]/8:*').matchesAddress('fe80::1', 443)).toBe(false);
    expect(compileEgressRule('[::1]:22').matchesAddress('::1', 22)).toBe(true);
    expect(compileEgressRule('127.0.0.1:5432').matchesName(await target('localhost:5432'))).toBe(false);
    expect(compileEgressRule('LOCALHOST:5432').matchesName(await target('localhost:5432'))).toBe(true);
    expect(compileEgressRule('93.184.215.*:443').matchesAddress('93.184.215.14', 443)).toBe(true);
  });
});

describe("egress rules — the template's deny rules refuse a name by its addresses, and every spelling of an address", () => {
  it.each(['2130706433:22', '0x7f.1:22', '127.1:22', 'db.127.0.0.1.nip.io:22', '[::ffff:127.0.0.1]:22'])(
    'network(127.0.0.1:*) refuses %s',
    async (hostPort) => {
      expect(templateVerdict(template(['127.0.0.0/8:*'], ['network(127.0.0.1:*)']), await target(hostPort))).toEqual({
        allow: false,
        by: 'policy',
        reason: "denied by the template's rule network(127.0.0.1:*)",
      });
    },
  );

  it("a deny rule naming an address refuses a listed name that resolves to it; 'network' alone refuses all; another tool's rule none", async () => {
    expect(templateVerdict(template(['cdn.example:443'], ['network(93.184.215.14:*)']), await target('cdn.example:443'))).toMatchObject({
      allow: false,
      reason: "denied by the template's rule network(93.184.215.14:*)",
    });
    // Any one address suffices to refuse.
    expect(templateVerdict(template(['split.example:443'], ['network(93.184.215.15:443)']), await target('split.example:443'))).toMatchObject({ allow: false });
    expect(templateVerdict(template(['cdn.example:443'], ['network']), await target('cdn.example:443'))).toMatchObject({ allow: false });
    expect(templateVerdict(template(['cdn.example:443'], ['Bash(curl *)', 'network()']), await target('cdn.example:443'))).toMatchObject({ allow: true });
  });
});

describe('egress rules — IPv6 targets: host and port are cut at the last colon, so globs and deny rules bind them', () => {
  const deniedBy = (text: string) => ({ allow: false, by: 'policy', reason: `denied by the template's rule ${text}` });

  it.each(['[2606:4700:4700::1111]:22', '[2606:4700:4700:0:0:0:0:1111]:22', '[::ffff:1.2.3.4]:22', '[::ffff:102:304]:22', 'v6.example:22'])(
    'network(*:22) refuses %s, however the address is spelled',
    async (hostPort) => {
      expect(templateVerdict(template(['*:*'], ['network(*:22)']), await target(hostPort))).toEqual(deniedBy('network(*:22)'));
      expect(templateVerdict(template(['*:*'], ['network(*:22)']), await target(hostPort.replace(/:22$/, ':443')))).toMatchObject({ allow: true });
    },
  );

  it('network(*:22) refuses [2001:db8::1]:22 by the rule itself, before the address (not the outside) is weighed', async () => {
    expect(templateVerdict(template(['[2001:db8::1]:*'], ['network(*:22)']), await target('[2001:db8::1]:22'))).toEqual(deniedBy('network(*:22)'));
    expect(templateVerdict(template(['[2001:db8::1]:*'], ['network(*:22)']), await target('[2001:db8::1]:443'))).toMatchObject({ allow: true });
    expect(templateVerdict(template([], ['network(*:22)']), await target('[2001:db8:0::1]:22'))).toEqual(deniedBy('network(*:22)'));
  });

  it('network(*) and network refuse every target, IPv6 too; a pattern without a port refuses none', async () => {
    const v6 = await target('[2606:4700:4700::1111]:443');
    expect(templateVerdict(template(['*:*'], ['network(*)']), v6)).toEqual(deniedBy('network(*)'));
    expect(templateVerdict(template(['*:*'], ['network']), v6)).toEqual(deniedBy('network'));
    expect(templateVerdict(template(['*:*'], ['network(*)']), await target('cdn.example:443'))).toEqual(deniedBy('network(*)'));
    // Refused at input (docs/egress.md "Rules"); one stored before then names nothing, as it always did.
    for (const portless of ['network(2606:4700:4700::1111)', 'network([2606:4700:4700::1111])', 'network()'])
      expect(templateVerdict(template(['*:*'], [portless]), v6), portless).toMatchObject({ allow: true });
  });

  it('a glob over an IPv6 host names the addresses a name resolves to; the glob never reaches the port', async () => {
    expect(templateVerdict(template([], ['network([2606:4700:*]:22)']), await target('v6.example:22'))).toEqual(deniedBy('network([2606:4700:*]:22)'));
    expect(templateVerdict(template(['*:*'], ['network([2606:4700:*]:2)']), await target('v6.example:22'))).toMatchObject({ allow: true });
    expect(templateVerdict(template(['*:*'], ['network([2606:4700:*]:22)']), await target('v6.example:2222'))).toMatchObject({ allow: true });
  });

  it('an allow rule naming [2606:4700:4700::1111]:443 opens that address on that port only', async () => {
    const listed = compileEgressRule('[2606:4700:4700::1111]:443');
    expect(listed.namesAddresses).toBe(true);
    expect(listed.matchesAddress('2606:4700:4700::1111', 443)).toBe(true);
    expect(listed.matchesAddress('2606:4700:4700::1111', 4430)).toBe(false);
    expect(listed.matchesAddress('2606:4700:4700::1001', 443)).toBe(false);
    const allow = template(['[2606:4700:4700::1111]:443']);
    for (const hostPort of ['[2606:4700:4700::1111]:443', '[2606:4700:4700:0::1111]:443', 'v6.example:443'])
      expect(templateVerdict(allow, await target(hostPort)), hostPort).toEqual({
        allow: true,
        by: 'policy',
        reason: "listed in the template's egress ([2606:4700:4700::1111]:443)",
      });
    for (const hostPort of ['[2606:4700:4700::1111]:444', '[2606:4700:4700::1001]:443', 'cdn.example:443'])
      expect(templateVerdict(allow, await target(hostPort)), hostPort).toBeUndefined();
    // The documentation range is not the outside: the address itself listed opens it, and only it.
    expect(templateVerdict(template(['[2001:db8::1]:443']), await target('[2001:db8::1]:443'))).toMatchObject({ allow: true });
    expect(templateVerdict(template(['[2001:db8::1]:443']), await target('[2001:db8::2]:443'))).toMatchObject({ allow: false });
  });

  it("people's rules: an always-deny of *:22 refuses an IPv6 literal on port 22; * alone is every target, as no pattern is", async () => {
    const v6 = await target('[2606:4700:4700::1111]:22');
    expect(peopleVerdict([rule('allow'), rule('deny', '*:22')], v6)).toEqual({ allow: false, by: 'alice', reason: "denied by alice's rule network(*:22)" });
    expect(peopleVerdict([rule('deny', '*:22')], await target('[::ffff:1.2.3.4]:22'))).toMatchObject({ allow: false });
    expect(peopleVerdict([rule('deny', '*:22')], await target('[2606:4700:4700::1111]:443'))).toBeUndefined();
    expect(peopleVerdict([rule('deny', '*')], v6)).toEqual({ allow: false, by: 'alice', reason: "denied by alice's rule network(*)" });
    expect(peopleVerdict([rule('allow', '*')], v6)).toMatchObject({ allow: true });
    expect(peopleVerdict([rule('allow', '[2606:4700:4700::1111]:22')], v6)).toMatchObject({ allow: true });
    expect(peopleVerdict([rule('allow', '[2606:4700:4700::1111]:22')], await target('[2606:4700:4700::1111]:23'))).toBeUndefined();
  });
});

describe('egress rules — an address that is not the outside opens only for a template rule naming it', () => {
  it.each([
    ['127.0.0.1:5432', '127.0.0.1 is a loopback address'],
    ['0x7f.1:5432', '127.0.0.1 is a loopback address'],
    ['db.127.0.0.1.nip.io:5432', 'db.127.0.0.1.nip.io resolves to 127.0.0.1, a loopback address'],
    ['localhost:5432', 'localhost resolves to 127.0.0.1, a loopback address'],
    ['lab.internal:443', 'lab.internal resolves to 172.16.0.9, a private address (RFC 1918, or IPv6 unique-local fc00::/7)'],
    ['169.254.1.1:80', '169.254.1.1 is a link-local address'],
    ['100.64.0.1:80', '100.64.0.1 is a carrier-grade NAT address (100.64.0.0/10)'],
    ['[fd12::1]:80', 'fd12::1 is a private address (RFC 1918, or IPv6 unique-local fc00::/7)'],
    ['0.0.0.0:80', '0.0.0.0 is an unspecified address (this machine)'],
    ['192.0.2.1:80', '192.0.2.1 is a reserved or special-purpose address'],
  ])('%s: refused with nothing naming it — %s', async (hostPort, why) => {
    expect(templateVerdict(template([]), await target(hostPort))).toEqual({
      allow: false,
      by: 'policy',
      reason: `${why}, which nobody may open but the template's egress list, naming that address`,
    });
  });

  it('a name, a glob or another port in the list does not open it; the address itself, a CIDR or its port glob does', async () => {
    const refusedBy = async (allow: string[], hostPort: string) => templateVerdict(template(allow), await target(hostPort));
    for (const allow of [['localhost:5432'], ['*:*'], ['127.0.0.*:5432'], ['127.0.0.1:5433'], ['db.127.0.0.1.nip.io:5432']])
      expect(await refusedBy(allow, 'db.127.0.0.1.nip.io:5432'), allow[0]).toMatchObject({ allow: false });
    for (const allow of [['127.0.0.1:5432'], ['2130706433:5432'], ['127.0.0.0/8:*'], ['127.0.0.1:54*']])
      expect(await refusedBy(allow, 'db.127.0.0.1.nip.io:5432'), allow[0]).toEqual({
        allow: true,
        by: 'policy',
        reason: `listed in the template's egress (${allow[0]})`,
      });
    expect(await refusedBy(['127.0.0.1:5432'], '2130706433:5432')).toMatchObject({ allow: true });
    // Every address must be named: localhost is 127.0.0.1 and ::1 here.
    expect(await refusedBy(['127.0.0.1:5432'], 'localhost:5432')).toMatchObject({
      allow: false,
      reason: expect.stringContaining('localhost resolves to ::1') as unknown,
    });
    expect(await refusedBy(['127.0.0.1:5432', '[::1]:5432'], 'localhost:5432')).toMatchObject({ allow: true });
    // A listed name that also resolves inside: through when the operator's ranges hold that address (10.0.0.0/8 here), else refused.
    expect(await refusedBy(['half-inside.example:443'], 'half-inside.example:443')).toMatchObject({ allow: true });
    expect(await refusedBy(['lab.internal:443'], 'lab.internal:443')).toMatchObject({
      allow: false,
      reason: expect.stringContaining('lab.internal resolves to 172.16.0.9') as unknown,
    });
  });

  it("a metadata address is refused even when the template names it; the operator's ranges are left to rules and people", async () => {
    expect(templateVerdict(template(['169.254.169.254:80']), await target('169.254.169.254:80'))).toEqual({
      allow: false,
      by: 'policy',
      reason: "169.254.169.254 is a cloud metadata service's address",
    });
    expect(templateVerdict(template([]), await target('corp.internal:443'))).toBeUndefined();
    expect(templateVerdict(template(['corp.internal:443']), await target('corp.internal:443'))).toMatchObject({ allow: true });
  });
});

describe('egress rules — the outside: listed by name or by every address; else people decide', () => {
  it('listed by name; by address only when every address is named; anything else is left to people', async () => {
    expect(templateVerdict(template(['registry.npmjs.org:443']), await target('registry.npmjs.org:443'))).toMatchObject({ allow: true });
    expect(templateVerdict(template(['registry.npmjs.org:443']), await target('104.16.1.34:443'))).toBeUndefined();
    expect(templateVerdict(template(['93.184.215.14:443']), await target('cdn.example:443'))).toMatchObject({ allow: true });
    expect(templateVerdict(template(['93.184.215.14:443']), await target('split.example:443'))).toBeUndefined();
    expect(templateVerdict(template(['93.184.215.0/24:443']), await target('split.example:443'))).toMatchObject({ allow: true });
    expect(templateVerdict(template([]), await target('cdn.example:443'))).toBeUndefined();
  });

  it("people's rules: the newest that applies wins; deny on any address, allow on the name or every address; other tools' rules do not count", async () => {
    const cdn = await target('cdn.example:443');
    expect(peopleVerdict([], cdn)).toBeUndefined();
    expect(peopleVerdict([rule('allow')], cdn)).toEqual({ allow: true, by: 'alice', reason: "allowed by alice's rule network" });
    expect(peopleVerdict([rule('allow'), rule('deny', '93.184.215.14:*')], cdn)).toEqual({
      allow: false,
      by: 'alice',
      reason: "denied by alice's rule network(93.184.215.14:*)",
    });
    expect(peopleVerdict([rule('deny', '93.184.215.14:*'), rule('allow', 'cdn.example:443')], cdn)).toMatchObject({ allow: true });
    expect(peopleVerdict([rule('deny', '93.184.215.15:*')], await target('split.example:443'))).toMatchObject({ allow: false });
    expect(peopleVerdict([rule('allow', '93.184.215.15:*')], await target('split.example:443'))).toBeUndefined();
    expect(peopleVerdict([rule('allow', 'other.example:443'), rule('allow', undefined, 'Bash')], cdn)).toBeUndefined();
  });
});
