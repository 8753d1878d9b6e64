import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupFunction } from 'node:net';
import { networkInterfaces } from 'node:os';
import ipaddr from 'ipaddr.js';
import { listSetting, type Setting } from './config.js';

/**
 * Where the control plane may connect when a user names the destination (a webhook's URL, an
 * egress tunnel): decided on the addresses a host resolves to, never on how its name is spelled,
 * because `2130706433`, `0x7f.1`, `[::ffff:127.0.0.1]` and `db.127.0.0.1.nip.io` all reach
 * 127.0.0.1.
 */

/** What an address is, as far as reaching it from inside the control plane's network goes. */
export type AddressClass =
  'public' | 'loopback' | 'private' | 'link-local' | 'metadata' | 'unspecified' | 'carrier-grade-nat' | 'multicast' | 'broadcast' | 'reserved';

const CLASS_DESCRIPTIONS: Record<AddressClass, string> = {
  public: 'a public address',
  loopback: 'a loopback address',
  private: 'a private address (RFC 1918, or IPv6 unique-local fc00::/7)',
  'link-local': 'a link-local address',
  metadata: "a cloud metadata service's address",
  unspecified: 'an unspecified address (this machine)',
  'carrier-grade-nat': 'a carrier-grade NAT address (100.64.0.0/10)',
  multicast: 'a multicast address',
  broadcast: 'the broadcast address',
  reserved: 'a reserved or special-purpose address',
};

/** ipaddr.js's range names; anything not named here is `reserved`. */
const IPV4_CLASSES: Record<string, AddressClass> = {
  unicast: 'public',
  unspecified: 'unspecified',
  broadcast: 'broadcast',
  multicast: 'multicast',
  linkLocal: 'link-local',
  loopback: 'loopback',
  carrierGradeNat: 'carrier-grade-nat',
  private: 'private',
};
const IPV6_CLASSES: Record<string, AddressClass> = {
  unspecified: 'unspecified',
  linkLocal: 'link-local',
  multicast: 'multicast',
  loopback: 'loopback',
  uniqueLocal: 'private',
  deprecatedSiteLocal: 'private',
};

type Address = ipaddr.IPv4 | ipaddr.IPv6;
type Range = [Address, number];

/** Cloud metadata services: AWS, GCP, Azure, OCI (169.254.169.254), AWS over IPv6 (fd00:ec2::254), Alibaba (100.100.100.200). */
const METADATA_ADDRESSES = ['169.254.169.254', 'fd00:ec2::254', '100.100.100.200'].map((address) => ipaddr.parse(address));
/** Names that always mean a cloud's metadata service, whatever they resolve to. */
const METADATA_HOSTS = ['metadata.google.internal', 'metadata', 'instance-data'];
/** Only global unicast (2000::/3) is the outside in IPv6; the rest of what ipaddr.js calls unicast is unassigned. */
const IPV6_GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');
/** NAT64's well-known prefix (RFC 6052): DNS64 answers with the IPv4 address in its last 32 bits. */
const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96');

function inRange(address: Address, [base, bits]: Range): boolean {
  return address.kind() === base.kind() && address.match(base, bits);
}

function sameAddress(one: Address, other: Address): boolean {
  return inRange(one, [other, other.kind() === 'ipv4' ? 32 : 128]);
}

/** An IPv4-mapped IPv6 address as the IPv4 address it is; any other unchanged. */
function unmapped(address: Address): Address {
  return address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress() ? (address as ipaddr.IPv6).toIPv4Address() : address;
}

/** Parses an IP literal (any form ipaddr.js reads, a zone index allowed), IPv4-mapped IPv6 unwrapped; undefined when it is none. */
function parseAddress(address: string): Address | undefined {
  const bare = address.replace(/^\[|\]$/g, '');
  return ipaddr.isValid(bare) ? unmapped(ipaddr.parse(bare)) : undefined;
}

/** An IP literal's one canonical spelling (`::ffff:7f00:1` → `127.0.0.1`, `0:0::1` → `::1`). */
function canonicalAddress(address: string): string {
  const parsed = parseAddress(address);
  if (!parsed) throw new Error(`not an IP address: "${address}"`);
  return parsed.toString();
}

function classOf(address: Address): AddressClass {
  if (METADATA_ADDRESSES.some((metadata) => sameAddress(address, metadata))) return 'metadata';
  if (address.kind() === 'ipv4') return IPV4_CLASSES[address.range()] ?? 'reserved';
  if (inRange(address, NAT64_WELL_KNOWN)) return classOf(ipaddr.fromByteArray(address.toByteArray().slice(12)));
  const range = address.range();
  if (range === 'unicast') return inRange(address, IPV6_GLOBAL_UNICAST) ? 'public' : 'reserved';
  return IPV6_CLASSES[range] ?? 'reserved';
}

/** What an IP address is (any spelling ipaddr.js reads; IPv4-mapped and NAT64 IPv6 as the IPv4 address they carry). */
export function classifyAddress(address: string): AddressClass {
  const parsed = parseAddress(address);
  if (!parsed) throw new Error(`not an IP address: "${address}"`);
  return classOf(parsed);
}

/** A class in words, for a refusal a person reads ("a loopback address"). */
function describeAddressClass(addressClass: AddressClass): string {
  return CLASS_DESCRIPTIONS[addressClass];
}

/**
 * A host as a URL's parser reads it (the WHATWG parser, the one `fetch` and `http.request` use):
 * an IP literal in its canonical spelling (`2130706433`, `0x7f.1`, `0177.0.0.1` → `127.0.0.1`;
 * `[::ffff:127.0.0.1]` → `127.0.0.1`), or a lower-case name without its final dot. Undefined when
 * it is neither (a port, a path, credentials or characters no host has).
 */
export function normaliseHost(host: string): { address: string } | { name: string } | undefined {
  const trimmed = host.trim();
  // A bare IPv6 literal is written in brackets in a URL.
  const bracketed = trimmed.includes(':') && !trimmed.startsWith('[') ? `[${trimmed}]` : trimmed;
  let url: URL;
  try {
    url = new URL(`http://${bracketed}/`);
  } catch {
    return undefined;
  }
  // `a@b`, `a/b`, `a?b`, `a#b` parse as a URL whose host is only part of the text.
  if (url.username || url.password || url.port || url.pathname !== '/' || url.search || url.hash || url.hostname === '') return undefined;
  const { hostname } = url;
  if (hostname.startsWith('[')) return { address: canonicalAddress(hostname) };
  // The parser turned every IPv4 spelling into four decimal parts; anything else is a name.
  if (ipaddr.IPv4.isValidFourPartDecimal(hostname)) return { address: hostname };
  return { name: hostname.replace(/\.$/, '') };
}

/** Resolves a host name to every address it has, as `dns.lookup` (the system's resolver) answers. */
export type HostLookup = (name: string) => Promise<string[]>;

/** The system resolver (`getaddrinfo`, as every connection made by name uses): every address, in its order. */
const systemLookup: HostLookup = async (name) => (await dnsLookup(name, { all: true, verbatim: true })).map((entry) => entry.address);

/** Resolves a normalised host: a literal is itself; a name's addresses, canonical, each once. */
async function addressesOf(host: { address: string } | { name: string }, lookup: HostLookup): Promise<string[]> {
  if ('address' in host) return [host.address];
  return [...new Set((await lookup(host.name)).map(canonicalAddress))];
}

/** Every address of a host (an IP literal in any spelling: itself), canonical; throws when a name does not resolve. */
export async function resolveHost(host: string, lookup: HostLookup = systemLookup): Promise<string[]> {
  const normalised = normaliseHost(host);
  if (!normalised) throw new Error(`"${host}" is not a valid host`);
  return addressesOf(normalised, lookup);
}

/** One CIDR (`10.0.0.0/8`, `fd00::/8`) or a single address; undefined when it is neither. IPv4 in four decimal parts only. */
export function parseCidr(entry: string): Range | undefined {
  const text = entry.trim();
  const [address, prefix, ...rest] = text.split('/');
  if (address === undefined || rest.length > 0 || (prefix !== undefined && !/^\d{1,3}$/.test(prefix))) return undefined;
  const isIPv4 = ipaddr.IPv4.isValidFourPartDecimal(address);
  if (!isIPv4 && !ipaddr.IPv6.isValid(address)) return undefined;
  const parsed = ipaddr.parse(address);
  const width = isIPv4 ? 32 : 128;
  const bits = prefix === undefined ? width : Number(prefix);
  if (bits > width) return undefined;
  // `::ffff:10.0.0.0/104` is 10.0.0.0/8: addresses are matched unwrapped.
  if (!isIPv4 && (parsed as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) return [(parsed as ipaddr.IPv6).toIPv4Address(), bits - 96];
  return [parsed, bits];
}

/** A comma-separated list of CIDRs (or single addresses); every bad entry is named at start. Default: none. */
export function cidrListSetting(variable: string): Setting<string[]> {
  const list = listSetting(variable, { default: [] });
  return {
    variable,
    read(raw) {
      const read = list.read(raw);
      if ('problem' in read) return read;
      const bad = read.value.filter((entry) => parseCidr(entry) === undefined);
      if (bad.length > 0)
        return { problem: `${variable} must be comma-separated CIDRs such as 10.0.0.0/8 or fd00::/8; not one: ${bad.map((entry) => `"${entry}"`).join(', ')}` };
      return read;
    },
  };
}

/** A control-plane endpoint no user-named destination may reach: what it is ("NATS"), its host (a name, an address or a CIDR), and its port (every port when none). */
export interface ControlPlaneEndpoint {
  what: string;
  host: string;
  port?: number | undefined;
  /**
   * Whether its public addresses are refused too (the default). False for an endpoint behind a
   * shared address (a CDN's, a cloud load balancer's): refusing that address would refuse every
   * site on it, so only its name and its addresses that are not public are.
   */
  publicAddresses?: boolean | undefined;
}

const DEFAULT_PORTS: Record<string, number> = {
  'nats:': 4222,
  'tls:': 4222,
  'postgres:': 5432,
  'postgresql:': 5432,
  'http:': 80,
  'https:': 443,
  'ws:': 80,
  'wss:': 443,
};

/**
 * The endpoints of a URL setting: `SVC_NATS_URL` (several, comma-separated, the scheme optional),
 * `SVC_DATABASE_URL`, a public URL. An entry that does not parse (a Unix socket, say) names none.
 */
export function endpointsOfUrls(what: string, urls: string, defaultScheme = 'http'): ControlPlaneEndpoint[] {
  return urls
    .split(',')
    .map((url) => url.trim())
    .filter(Boolean)
    .flatMap((url) => {
      try {
        const parsed = new URL(url.includes('://') ? url : `${defaultScheme}://${url}`);
        if (parsed.hostname === '') return [];
        return [{ what, host: parsed.hostname, port: parsed.port ? Number(parsed.port) : DEFAULT_PORTS[parsed.protocol] }];
      } catch {
        return [];
      }
    });
}

/** An address the check let through, as `pinnedLookup` hands it to a connection. */
export interface CheckedAddress {
  address: string;
  family: 4 | 6;
}

/** Why a destination is refused: `address` is an address's class, which an allowed range can let through; the others cannot be. */
type OutboundRefusal = 'invalid-host' | 'unresolved' | 'metadata-name' | 'control-plane' | 'address';

export type OutboundVerdict =
  | { allowed: true; addresses: CheckedAddress[] }
  | {
      allowed: false;
      /** Why, in words a person reads: which address, and what it is. */
      reason: string;
      refusal: OutboundRefusal;
    };

/** One address a host resolved to, and what it is. */
export interface InspectedAddress extends CheckedAddress {
  addressClass: AddressClass;
  /** Public, or inside a range the check allows (`allowedCidrs`): what `check` lets through. */
  allowed: boolean;
}

/**
 * A destination resolved and looked at, its classes not yet weighed: refused only for what no
 * policy may open (a host that is none or does not resolve, a metadata name, a control-plane
 * endpoint, by name or by any of its addresses).
 */
export type OutboundInspection =
  | {
      resolved: true;
      /** The host's name, normalised (lower case, no final dot); undefined for an IP literal. */
      name: string | undefined;
      /** Every address, canonical, each once, in the resolver's order. */
      addresses: InspectedAddress[];
    }
  | { resolved: false; refusal: Exclude<OutboundRefusal, 'address'>; reason: string };

export interface OutboundAddressCheck {
  /**
   * Resolves `host` (a name, or an IP literal in any spelling) and decides whether `port` on it
   * may be reached: refused when any of its addresses is a control-plane endpoint, or is not
   * public and no allowed range covers it. Connect to the `addresses` it returns (`pinnedLookup`),
   * never to the name again: a name may resolve elsewhere a moment later.
   */
  check(host: string, port: number): Promise<OutboundVerdict>;
  /**
   * Resolves `host` once and refuses what no policy may open, as `check` does, but leaves the
   * classes to the caller, whose own rules may open some (egress: a template naming the address).
   */
  inspect(host: string, port: number): Promise<OutboundInspection>;
}

/** A refusal by class in words: "localhost resolves to 127.0.0.1, a loopback address" (a name), "127.0.0.1 is a loopback address" (a literal). */
export function classRefusalReason(name: string | undefined, address: string, addressClass: AddressClass): string {
  const what = describeAddressClass(addressClass);
  return name === undefined ? `${address} is ${what}` : `${name} resolves to ${address}, ${what}`;
}

/** Whether `address` (an IP literal, any spelling) lies in `cidr` (`10.0.0.0/8`, `fd00::/8`, or one address); false when either is none. */
export function addressInCidr(address: string, cidr: string): boolean {
  const parsed = parseAddress(address);
  const range = parseCidr(cidr);
  return parsed !== undefined && range !== undefined && inRange(parsed, range);
}

/** This machine's own addresses: a listener on 0.0.0.0 answers on each, and on every loopback address. */
function ownAddresses(): Address[] {
  return Object.values(networkInterfaces()).flatMap((entries) => (entries ?? []).flatMap((entry) => parseAddress(entry.address) ?? []));
}

/**
 * The outbound check. `controlPlane` endpoints are resolved here, once (the control plane's own
 * addresses do not move while a process runs); one on a local address is refused on every local
 * address, since a listener on 0.0.0.0 answers on all of them. `allowedCidrs` lets a class that
 * is not public through (an in-cluster receiver), never a control-plane endpoint.
 */
export async function createOutboundAddressCheck(options: {
  allowedCidrs?: readonly string[];
  controlPlane?: readonly ControlPlaneEndpoint[];
  lookup?: HostLookup;
}): Promise<OutboundAddressCheck> {
  const lookup = options.lookup ?? systemLookup;
  const allowed = (options.allowedCidrs ?? []).map((entry) => {
    const range = parseCidr(entry);
    if (!range) throw new Error(`not a CIDR: "${entry}"`);
    return range;
  });
  const own = ownAddresses();
  const isLocal = (address: Address) => ['loopback', 'unspecified'].includes(classOf(address)) || own.some((mine) => sameAddress(address, mine));
  const endpoints = await Promise.all(
    (options.controlPlane ?? []).map(async (endpoint) => {
      const range = endpoint.host.includes('/') ? parseCidr(endpoint.host) : undefined;
      if (range) return { ...endpoint, name: undefined, ranges: [range], local: false };
      const host = normaliseHost(endpoint.host);
      // One that does not resolve now refuses nothing by address; its name is still refused.
      const addresses = (host ? (await addressesOf(host, lookup).catch(() => [] as string[])).map((address) => parseAddress(address)!) : []).filter(
        (address) => endpoint.publicAddresses !== false || classOf(address) !== 'public',
      );
      return {
        ...endpoint,
        name: host && 'name' in host ? host.name : undefined,
        ranges: addresses.map((address): Range => [address, address.kind() === 'ipv4' ? 32 : 128]),
        local: addresses.some(isLocal),
      };
    }),
  );
  const controlPlaneOf = (address: Address, port: number) =>
    endpoints.find(
      (endpoint) =>
        (endpoint.port === undefined || endpoint.port === port) &&
        (endpoint.ranges.some((range) => inRange(address, range)) || (endpoint.local && isLocal(address))),
    );

  const inspect = async (host: string, port: number): Promise<OutboundInspection> => {
    const normalised = normaliseHost(host);
    if (!normalised) return { resolved: false, refusal: 'invalid-host', reason: `"${host}" is not a valid host` };
    const name = 'name' in normalised ? normalised.name : undefined;
    if (name !== undefined && METADATA_HOSTS.includes(name))
      return { resolved: false, refusal: 'metadata-name', reason: `${name} is a cloud metadata service's name` };
    const namedEndpoint = endpoints.find((endpoint) => name !== undefined && endpoint.name === name && (endpoint.port === undefined || endpoint.port === port));
    if (namedEndpoint)
      return { resolved: false, refusal: 'control-plane', reason: `port ${port} of ${name} is a control-plane endpoint (${namedEndpoint.what})` };
    let texts: string[];
    try {
      texts = await addressesOf(normalised, lookup);
    } catch (err) {
      const code = (err as { code?: string }).code;
      return { resolved: false, refusal: 'unresolved', reason: `${name ?? host} does not resolve${code ? ` (${code})` : ''}` };
    }
    if (texts.length === 0) return { resolved: false, refusal: 'unresolved', reason: `${name ?? host} resolves to no address` };
    const addresses: InspectedAddress[] = [];
    for (const text of texts) {
      const address = parseAddress(text)!;
      const endpoint = controlPlaneOf(address, port);
      if (endpoint) {
        const refusedPort = `port ${port} of ${text} is a control-plane endpoint (${endpoint.what})`;
        return { resolved: false, refusal: 'control-plane', reason: name === undefined ? refusedPort : `${name} resolves to ${text}, and ${refusedPort}` };
      }
      const addressClass = classOf(address);
      addresses.push({
        address: text,
        family: address.kind() === 'ipv4' ? 4 : 6,
        addressClass,
        allowed: addressClass === 'public' || allowed.some((range) => inRange(address, range)),
      });
    }
    return { resolved: true, name, addresses };
  };

  return {
    inspect,
    async check(host, port) {
      const inspection = await inspect(host, port);
      if (!inspection.resolved) return { allowed: false, refusal: inspection.refusal, reason: inspection.reason };
      const refused = inspection.addresses.find((address) => !address.allowed);
      if (refused) return { allowed: false, refusal: 'address', reason: classRefusalReason(inspection.name, refused.address, refused.addressClass) };
      return { allowed: true, addresses: inspection.addresses.map(({ address, family }) => ({ address, family })) };
    },
  };
}

/**
 * A `lookup` for `net.connect` / `http.request` that answers with the checked addresses only: the
 * connection goes where the check looked, while the Host header and TLS's server name stay the
 * name (DNS rebinding between the check and the connection redirects nothing).
 */
export function pinnedLookup(addresses: readonly CheckedAddress[]): LookupFunction {
  return (hostname, options, callback) => {
    const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : options.family;
    const usable = family === 4 || family === 6 ? addresses.filter((entry) => entry.family === family) : addresses;
    const first = usable[0];
    if (!first) {
      const error: NodeJS.ErrnoException = Object.assign(new Error(`no checked IPv${family} address for ${hostname}`), { code: 'ENOTFOUND' });
      return callback(error, '', 0);
    }
    if (options.all)
      callback(
        null,
        usable.map((entry) => ({ ...entry })),
      );
    else callback(null, first.address, first.family);
  };
}
