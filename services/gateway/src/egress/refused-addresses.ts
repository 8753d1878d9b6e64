import { lookup } from 'node:dns/promises';
import net from 'node:net';
import { networkInterfaces } from 'node:os';

/**
 * The addresses no tunnel may reach, even when listed or approved: the control plane's own
 * (NATS, the store, the gateway's ports, what the operator names in `SVC_EGRESS_REFUSED`),
 * link-local and cloud metadata addresses, and the unspecified ones.
 */
export interface RefusedAddresses {
  /** Why `address` (an IP) on `port` may not be reached, or undefined when it may. */
  reasonFor(address: string, port: number): string | undefined;
}

/** Names that always mean a cloud's metadata service. */
const METADATA_HOSTS = ['metadata.google.internal', 'metadata', 'instance-data'];

function addSubnet(list: net.BlockList, cidr: string): void {
  const [address, prefix] = cidr.split('/');
  const family = net.isIPv6(address!) ? 'ipv6' : 'ipv4';
  if (prefix === undefined) list.addAddress(address!, family);
  else list.addSubnet(address!, Number(prefix), family);
}

/** The addresses of a host name (or the literal itself); none when it does not resolve. */
export async function addressesOf(host: string): Promise<string[]> {
  const bare = host.replace(/^\[|\]$/g, '');
  if (net.isIP(bare)) return [bare];
  try {
    return (await lookup(bare, { all: true })).map((entry) => entry.address);
  } catch {
    return [];
  }
}

/** `host:port`, `host` (every port) or a CIDR; hosts are resolved now. */
export interface RefusedEndpoint {
  host: string;
  port?: number | undefined;
}

/** Parses one `SVC_EGRESS_REFUSED` entry: `10.0.0.0/8`, `db.internal`, `db.internal:5432`, `[fd00::1]:4222`. */
export function parseRefusedEntry(entry: string): RefusedEndpoint {
  const withPort = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(entry.trim());
  return withPort ? { host: withPort[1]!, port: Number(withPort[2]) } : { host: entry.trim() };
}

/** The NATS servers of a `SVC_NATS_URL` (comma-separated URLs; port 4222 when none is given). */
export function natsEndpoints(natsUrl: string): RefusedEndpoint[] {
  return natsUrl
    .split(',')
    .map((url) => url.trim())
    .filter(Boolean)
    .map((url) => {
      const parsed = new URL(url.includes('://') ? url : `nats://${url}`);
      return { host: parsed.hostname, port: Number(parsed.port || 4222) };
    });
}

/**
 * Builds the refusal list. `endpoints` are the control plane's own (resolved once, here);
 * `ownPorts` are the gateway's listening ports, refused on every local address.
 */
export async function createRefusedAddresses(options: { endpoints: readonly RefusedEndpoint[]; ownPorts: readonly number[] }): Promise<RefusedAddresses> {
  const everywhere = new net.BlockList();
  for (const cidr of ['0.0.0.0/8', '169.254.0.0/16', '::/128', 'fe80::/10', 'fd00:ec2::254/128', '100.100.100.200/32']) addSubnet(everywhere, cidr);
  const anyPort = new net.BlockList();
  const byPort = new Map<number, net.BlockList>();
  const portList = (port: number) => {
    let list = byPort.get(port);
    if (!list) byPort.set(port, (list = new net.BlockList()));
    return list;
  };
  for (const endpoint of options.endpoints) {
    if (endpoint.host.includes('/')) {
      addSubnet(endpoint.port === undefined ? anyPort : portList(endpoint.port), endpoint.host);
      continue;
    }
    for (const address of await addressesOf(endpoint.host)) addSubnet(endpoint.port === undefined ? anyPort : portList(endpoint.port), address);
  }
  // The gateway's own ports, on loopback and on every address of this machine.
  const localAddresses = ['127.0.0.0/8', '::1/128', ...Object.values(networkInterfaces()).flatMap((entries) => (entries ?? []).map((entry) => entry.address))];
  for (const port of options.ownPorts) for (const address of localAddresses) addSubnet(portList(port), address);

  const family = (address: string) => (net.isIPv6(address) ? 'ipv6' : 'ipv4');
  return {
    reasonFor(address, port) {
      if (everywhere.check(address, family(address))) return `${address} is a link-local, metadata or unspecified address`;
      if (anyPort.check(address, family(address)) || byPort.get(port)?.check(address, family(address)))
        return `${address}:${port} belongs to the control plane`;
      return undefined;
    },
  };
}

/** Whether a host name is a cloud metadata service's. */
export function isMetadataHost(host: string): boolean {
  return METADATA_HOSTS.includes(host.toLowerCase().replace(/\.$/, ''));
}
