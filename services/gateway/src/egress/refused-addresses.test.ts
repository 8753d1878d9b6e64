import { describe, expect, it } from 'vitest';
import type { HostLookup, OutboundInspection } from '@svc/service-kit';
import { createEgressAddressCheck, parseRefusedEntry } from './refused-addresses.js';

/** A resolver from a table: these tests make no DNS query and open no connection. */
function tableLookup(table: Record<string, string[]>): HostLookup {
  return async (name) => {
    const addresses = table[name];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
    return addresses;
  };
}

const reasonOf = (inspection: OutboundInspection) => (inspection.resolved ? undefined : inspection.reason);

describe("egress — the control plane's own endpoints are refused, whatever any rule says", () => {
  it('SVC_EGRESS_REFUSED entries: host:port, host, CIDR, bracketed IPv6', () => {
    expect(parseRefusedEntry('db.internal:5432')).toEqual({ what: 'SVC_EGRESS_REFUSED', host: 'db.internal', port: 5432 });
    expect(parseRefusedEntry(' db.internal ')).toEqual({ what: 'SVC_EGRESS_REFUSED', host: 'db.internal' });
    expect(parseRefusedEntry('10.0.0.0/8')).toEqual({ what: 'SVC_EGRESS_REFUSED', host: '10.0.0.0/8' });
    expect(parseRefusedEntry('fd00::/8')).toEqual({ what: 'SVC_EGRESS_REFUSED', host: 'fd00::/8' });
    expect(parseRefusedEntry('[fd00::1]:4222')).toEqual({ what: 'SVC_EGRESS_REFUSED', host: '[fd00::1]', port: 4222 });
  });

  it("NATS, the store, the gateway's ports and SVC_EGRESS_REFUSED: by name and by every spelling of their addresses; local ones on every local address", async () => {
    const check = await createEgressAddressCheck({
      natsUrl: 'nats://127.0.0.1:4333, nats://nats.internal',
      databaseUrl: 'postgres://svc:secret@db.internal/svc',
      publicUrl: 'https://svc.example.com',
      ownPorts: [8080, 8082],
      refused: ['10.20.0.0/16', 'redis.internal:6379'],
      allowedCidrs: ['10.0.0.0/8'],
      lookup: tableLookup({
        'nats.internal': ['10.9.0.6'],
        'db.internal': ['10.9.0.5'],
        'redis.internal': ['10.9.0.7'],
        localhost: ['127.0.0.1', '::1'],
        'db.127.0.0.1.nip.io': ['127.0.0.1'],
        // A CDN's address, which other sites share.
        'svc.example.com': ['93.184.215.14'],
      }),
    });
    const nats = 'a control-plane endpoint (NATS)';
    expect(reasonOf(await check.inspect('127.0.0.1', 4333))).toBe(`port 4333 of 127.0.0.1 is ${nats}`);
    expect(reasonOf(await check.inspect('2130706433', 4333))).toBe(`port 4333 of 127.0.0.1 is ${nats}`);
    expect(reasonOf(await check.inspect('0x7f.1', 4333))).toBe(`port 4333 of 127.0.0.1 is ${nats}`);
    expect(reasonOf(await check.inspect('::1', 4333))).toBe(`port 4333 of ::1 is ${nats}`);
    expect(reasonOf(await check.inspect('db.127.0.0.1.nip.io', 4333))).toBe(`db.127.0.0.1.nip.io resolves to 127.0.0.1, and port 4333 of 127.0.0.1 is ${nats}`);
    expect(reasonOf(await check.inspect('nats.internal', 4222))).toBe(`port 4222 of nats.internal is ${nats}`);
    expect(reasonOf(await check.inspect('10.9.0.6', 4222))).toBe(`port 4222 of 10.9.0.6 is ${nats}`);
    expect(reasonOf(await check.inspect('db.internal', 5432))).toBe('port 5432 of db.internal is a control-plane endpoint (the store)');
    expect(reasonOf(await check.inspect('10.9.0.5', 5432))).toBe('port 5432 of 10.9.0.5 is a control-plane endpoint (the store)');
    expect(reasonOf(await check.inspect('localhost', 8082))).toBe(
      "localhost resolves to 127.0.0.1, and port 8082 of 127.0.0.1 is a control-plane endpoint (the gateway's own port)",
    );
    expect(reasonOf(await check.inspect('0.0.0.0', 8080))).toBe("port 8080 of 0.0.0.0 is a control-plane endpoint (the gateway's own port)");
    expect(reasonOf(await check.inspect('10.20.3.4', 80))).toBe('port 80 of 10.20.3.4 is a control-plane endpoint (SVC_EGRESS_REFUSED)');
    expect(reasonOf(await check.inspect('redis.internal', 6379))).toBe('port 6379 of redis.internal is a control-plane endpoint (SVC_EGRESS_REFUSED)');
    expect(reasonOf(await check.inspect('metadata.google.internal', 80))).toBe("metadata.google.internal is a cloud metadata service's name");
    // The gateway's public name is refused; the shared address it leads to is not.
    expect(reasonOf(await check.inspect('svc.example.com', 443))).toBe('port 443 of svc.example.com is a control-plane endpoint (the gateway)');
    expect(await check.inspect('93.184.215.14', 443)).toEqual({
      resolved: true,
      name: undefined,
      addresses: [{ address: '93.184.215.14', family: 4, addressClass: 'public', allowed: true }],
    });
  });

  it("what is not the control plane's is resolved and classed, not decided: loopback is not allowed, the operator's ranges are", async () => {
    const check = await createEgressAddressCheck({
      natsUrl: 'nats://127.0.0.1:4333',
      databaseUrl: undefined,
      publicUrl: undefined,
      ownPorts: [],
      refused: [],
      allowedCidrs: ['10.0.0.0/8'],
      lookup: tableLookup({ localhost: ['127.0.0.1', '::1'] }),
    });
    expect(await check.inspect('localhost', 5432)).toEqual({
      resolved: true,
      name: 'localhost',
      addresses: [
        { address: '127.0.0.1', family: 4, addressClass: 'loopback', allowed: false },
        { address: '::1', family: 6, addressClass: 'loopback', allowed: false },
      ],
    });
    expect(await check.inspect('10.1.2.3', 443)).toMatchObject({ resolved: true, addresses: [{ addressClass: 'private', allowed: true }] });
    expect(await check.inspect('172.16.0.1', 443)).toMatchObject({ resolved: true, addresses: [{ addressClass: 'private', allowed: false }] });
    expect(await check.inspect('nowhere.example', 443)).toEqual({
      resolved: false,
      refusal: 'unresolved',
      reason: 'nowhere.example does not resolve (ENOTFOUND)',
    });
  });
});
