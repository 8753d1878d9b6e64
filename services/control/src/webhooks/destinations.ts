import { createOutboundAddressCheck, endpointsOfUrls, type HostLookup, type OutboundAddressCheck } from '@svc/service-kit';

/** What the webhook address check needs of the control service's configuration (config.ts). */
export interface WebhookDestinationsConfig {
  /** `SVC_WEBHOOK_ALLOWED_CIDRS`. */
  webhookAllowedCidrs: readonly string[];
  natsUrl: string;
  databaseUrl: string | undefined;
  /** The gateway's public URL, when known. */
  publicUrl: string | undefined;
}

/**
 * Where a webhook may point (docs/webhooks.md): outside addresses, and the ranges the operator
 * allows; never NATS, the store or the gateway. `lookup` is the system resolver unless a test
 * gives another.
 */
export function createWebhookDestinations(config: WebhookDestinationsConfig, lookup?: HostLookup): Promise<OutboundAddressCheck> {
  return createOutboundAddressCheck({
    allowedCidrs: config.webhookAllowedCidrs,
    controlPlane: [
      ...endpointsOfUrls('NATS', config.natsUrl, 'nats'),
      ...(config.databaseUrl ? endpointsOfUrls('the store', config.databaseUrl, 'postgres') : []),
      ...(config.publicUrl ? endpointsOfUrls('the gateway', config.publicUrl) : []),
    ],
    ...(lookup ? { lookup } : {}),
  });
}

/** The port a webhook URL is reached on. */
export function portOf(url: URL): number {
  return url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
}
