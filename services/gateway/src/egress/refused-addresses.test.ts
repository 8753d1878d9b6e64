import { describe, expect, it } from 'vitest';
import { createRefusedAddresses, isMetadataHost, natsEndpoints, parseRefusedEntry } from './refused-addresses.js';

describe("egress — the control plane's own addresses are refused", () => {
  it('entries: host:port, host, CIDR, bracketed IPv6', () => {
    expect(parseRefusedEntry('db.internal:5432')).toEqual({ host: 'db.internal', port: 5432 });
    expect(parseRefusedEntry('db.internal')).toEqual({ host: 'db.internal' });
    expect(parseRefusedEntry('10.0.0.0/8')).toEqual({ host: '10.0.0.0/8' });
    expect(parseRefusedEntry('[fd00::1]:4222')).toEqual({ host: '[fd00::1]', port: 4222 });
    expect(natsEndpoints('nats://127.0.0.1:4333, nats://nats.svc')).toEqual([
      { host: '127.0.0.1', port: 4333 },
      { host: 'nats.svc', port: 4222 },
    ]);
  });

  it("link-local, metadata and unspecified addresses always; named endpoints on their port; a CIDR on every port; the gateway's ports on local addresses", async () => {
    const refused = await createRefusedAddresses({
      endpoints: [{ host: '127.0.0.1', port: 4222 }, { host: '10.1.0.0/16' }, { host: 'localhost', port: 5432 }],
      ownPorts: [8080],
    });
    expect(refused.reasonFor('169.254.169.254', 80)).toMatch(/link-local, metadata or unspecified/);
    expect(refused.reasonFor('fe80::1', 443)).toMatch(/link-local/);
    expect(refused.reasonFor('0.0.0.0', 443)).toMatch(/unspecified/);
    expect(refused.reasonFor('127.0.0.1', 4222)).toBe('127.0.0.1:4222 belongs to the control plane');
    expect(refused.reasonFor('127.0.0.1', 4223)).toBeUndefined();
    expect(refused.reasonFor('10.1.2.3', 1)).toMatch(/belongs to the control plane/);
    expect(refused.reasonFor('10.2.0.1', 1)).toBeUndefined();
    expect(refused.reasonFor('127.0.0.1', 5432)).toMatch(/belongs to the control plane/);
    expect(refused.reasonFor('127.0.0.1', 8080)).toMatch(/belongs to the control plane/);
    expect(refused.reasonFor('93.184.216.34', 443)).toBeUndefined();
    expect(isMetadataHost('metadata.google.internal.')).toBe(true);
    expect(isMetadataHost('example.com')).toBe(false);
  });
});
