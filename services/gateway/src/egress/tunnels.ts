import type { Server } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import type { WorkerDirectory } from '@svc/auth';
import type { NatsConnection } from '@svc/bus';
import type { OutboundAddressCheck } from '@svc/service-kit';
import type { LiveFeeds } from '../live-feeds.js';
import { createComponentRecords } from '../raised-requests.js';
import { createTunnelAuthentication } from './tunnel-authentication.js';
import { createTunnelPolicy } from './tunnel-policy.js';
import { acceptTunnels } from './tunnel-sockets.js';

export interface EgressTunnelOptions {
  /** The listeners whose CONNECT requests are tunnels (the worker port, and the public one for sidecars that call it). */
  servers: readonly Server[];
  nc: NatsConnection;
  workers: WorkerDirectory;
  live: LiveFeeds;
  /** Resolves a target once and refuses the control plane's own endpoints (refused-addresses.ts). */
  addresses: OutboundAddressCheck;
  logger: FastifyBaseLogger;
}

/**
 * Egress tunnels (docs/egress.md): a sidecar's `CONNECT host:port` with its worker token. The
 * gateway, not the sandbox, decides, on the target's name and the addresses it resolves to (once):
 * the control plane's own endpoints are refused whatever any rule says; then the template decides
 * what it names (egress-rules.ts), which alone opens an address that is not the outside; then the
 * rules people added with "always", and — for anything else — a person, through a
 * `control_request` with tool `network` (held open until decided or its deadline passes), or the
 * policy at once for an autonomous worker. The agent holds the worker token too, so a tunnel it
 * asks for directly is decided the same way. Every tunnel, opened or refused, is recorded in the
 * worker's history.
 *
 * Who asks is tunnel-authentication.ts; what may be reached and how it is decided,
 * tunnel-policy.ts; the CONNECT itself, its piping and closing, tunnel-sockets.ts; the history,
 * tunnel-records.ts.
 */
export function serveEgressTunnels(options: EgressTunnelOptions): { close(): void } {
  const log = options.logger.child({ component: 'egress' });
  const records = createComponentRecords(options.nc, 'egress', log);
  const tunnels = acceptTunnels(
    options.servers,
    {
      authenticate: createTunnelAuthentication(options.workers),
      addresses: options.addresses,
      policy: createTunnelPolicy({ nc: options.nc, live: options.live, records }),
      records,
    },
    log,
  );
  return {
    close() {
      tunnels.close();
      records.close();
    },
  };
}
