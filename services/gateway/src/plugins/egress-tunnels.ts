import fp from 'fastify-plugin';
import { createEgressAddressCheck } from '../egress/refused-addresses.js';
import { serveEgressTunnels } from '../egress/tunnels.js';

/**
 * Egress `CONNECT`s on both listeners (docs/egress.md), refused for the control plane's own
 * endpoints: NATS, the store, this gateway's ports, and what `SVC_EGRESS_REFUSED` names.
 */
export const egressTunnelsPlugin = fp(
  async (app) => {
    const { settings } = app;
    const tunnels = serveEgressTunnels({
      servers: [app.server, app.workerListener],
      nc: app.bus,
      workers: app.workers,
      live: app.liveFeeds,
      logger: app.log,
      addresses: await createEgressAddressCheck({
        natsUrl: settings.natsUrl,
        databaseUrl: settings.databaseUrl,
        publicUrl: settings.publicUrl,
        refused: settings.egressRefused ?? [],
        allowedCidrs: settings.egressAllowedCidrs ?? [],
        ownPorts: [settings.port, settings.workerPort, settings.healthPort].filter((port): port is number => port !== undefined && port > 0),
      }),
    });
    app.addHook('onClose', async () => tunnels.close());
  },
  {
    name: 'svc-egress-tunnels',
    fastify: '5.x',
    dependencies: ['svc-settings', 'svc-bus', 'svc-worker-directory', 'svc-live-feeds', 'svc-worker-port'],
  },
);
