import Type, { type Static } from 'typebox';

export const SERVICE_NAMES = ['gateway', 'event-ingest', 'control', 'session'] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

/** What a service answers on its health subject. */
const ServiceHealthSchema = Type.Object(
  {
    service: Type.Enum(SERVICE_NAMES),
    status: Type.Enum(['up', 'down']),
    version: Type.String(),
    instance: Type.String({ description: 'Which replica answered.' }),
    uptime_s: Type.Number({ minimum: 0 }),
    store: Type.Optional(Type.Enum(['up', 'down'], { description: 'Whether this service reaches its database (services that have one).' })),
  },
  { additionalProperties: false },
);
export type ServiceHealth = Static<typeof ServiceHealthSchema>;

/** `GET /v1/status`. */
export const StatusResponse = Type.Object(
  {
    status: Type.Enum(['ok', 'degraded']),
    version: Type.String(),
    nats: Type.Enum(['up', 'down']),
    store: Type.Enum(['up', 'down']),
    services: Type.Array(ServiceHealthSchema),
  },
  { additionalProperties: false },
);
export type StatusResponseType = Static<typeof StatusResponse>;
