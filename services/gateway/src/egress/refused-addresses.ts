import { createOutboundAddressCheck, endpointsOfUrls, type ControlPlaneEndpoint, type HostLookup, type OutboundAddressCheck } from '@svc/service-kit';

/** What the gateway knows of the control plane, and what its operator says of egress (docs/egress.md "Addresses"). */
export interface EgressAddressOptions {
  /** `SVC_NATS_URL`. */
  natsUrl: string | undefined;
  /** `SVC_DATABASE_URL`: the store (unset for embedded PGlite, which has no address). */
  databaseUrl: string | undefined;
  /** The gateway's public URL. */
  publicUrl: string | undefined;
  /** The gateway's listening ports (public, worker, health): refused on every local address. */
  ownPorts: readonly number[];
  /** `SVC_EGRESS_REFUSED`: `host:port`, `host` (every port) or a CIDR. */
  refused: readonly string[];
  /** `SVC_EGRESS_ALLOWED_CIDRS`: ranges that are the outside for this deployment, though not public. */
  allowedCidrs: readonly string[];
  /** The resolver (the system's unless a test gives another). */
  lookup?: HostLookup | undefined;
}

/** Parses one `SVC_EGRESS_REFUSED` entry: `10.0.0.0/8`, `db.internal`, `db.internal:5432`, `[fd00::1]:4222`. */
export function parseRefusedEntry(entry: string): ControlPlaneEndpoint {
  const withPort = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(entry.trim());
  return withPort ? { what: 'SVC_EGRESS_REFUSED', host: withPort[1]!, port: Number(withPort[2]) } : { what: 'SVC_EGRESS_REFUSED', host: entry.trim() };
}

/**
 * The address check of egress tunnels: the one webhooks use (libs/service-kit), over the
 * endpoints the gateway knows. Each is resolved once, here, and refused on its port (every port
 * for a bare host or a CIDR) whatever any rule says; one on a local address is refused on every
 * local address, since a listener on 0.0.0.0 answers on all of them.
 */
export function createEgressAddressCheck(options: EgressAddressOptions): Promise<OutboundAddressCheck> {
  return createOutboundAddressCheck({
    allowedCidrs: options.allowedCidrs,
    controlPlane: [
      ...(options.natsUrl ? endpointsOfUrls('NATS', options.natsUrl, 'nats') : []),
      ...(options.databaseUrl ? endpointsOfUrls('the store', options.databaseUrl, 'postgres') : []),
      // Its public name may lead to a shared address (a CDN's): that address is not refused, only the name.
      ...(options.publicUrl ? endpointsOfUrls('the gateway', options.publicUrl).map((endpoint) => ({ ...endpoint, publicAddresses: false })) : []),
      ...options.ownPorts.map((port) => ({ what: "the gateway's own port", host: '127.0.0.1', port })),
      ...options.refused.map(parseRefusedEntry),
    ],
    ...(options.lookup ? { lookup: options.lookup } : {}),
  });
}
