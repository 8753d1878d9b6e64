import fp from 'fastify-plugin';
import { createDurablePublisher, createEventCoalescer, type CoalescingSettings, type EventCoalescer } from '@svc/bus';
import { DEFAULT_COALESCING } from '../config.js';
import type { AppSettings } from './settings.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Events for the workers' one writers (event-ingest), durable in JetStream once published: the agents' and people's messages. */
    incomingEvents: EventCoalescer;
  }
}

/** Room left in a message for its headers and the JSON around the events. */
const MESSAGE_OVERHEAD_BYTES = 64 * 1024;

/** Coalescing: how POSTs' events are gathered into JetStream messages (`SVC_GATEWAY_COALESCE_*`). */
function coalescingOf(settings: AppSettings): CoalescingSettings {
  return {
    windowMs: settings.coalesceWindowMs ?? DEFAULT_COALESCING.windowMs,
    maxEvents: settings.coalesceMaxEvents ?? DEFAULT_COALESCING.maxEvents,
    maxBytes: settings.coalesceMaxBytes ?? DEFAULT_COALESCING.maxBytes,
  };
}

/** `app.incomingEvents`: one coalescer, in order on one connection, for every route that writes events. */
export const incomingEventsPlugin = fp(
  async (app) => {
    const coalescing = coalescingOf(app.settings);
    const publisher = createDurablePublisher(app.bus);
    const serverMaxPayload = app.bus.info?.max_payload ?? 1024 * 1024;
    app.decorate(
      'incomingEvents',
      createEventCoalescer(publisher, { ...coalescing, maxBytes: Math.min(coalescing.maxBytes, serverMaxPayload - MESSAGE_OVERHEAD_BYTES) }),
    );
    app.addHook('onClose', async () => publisher.close());
  },
  { name: 'svc-incoming-events', fastify: '5.x', dependencies: ['svc-settings', 'svc-bus'] },
);
