import fp from 'fastify-plugin';
import type { GatewaySettings } from '../config.js';
import { checkStreamLimits, DEFAULT_STREAM_LIMITS, type StreamLimits } from '../stream-limits.js';

/** The settings as the gateway's parts read them (`app.settings`). */
export type AppSettings = Omit<GatewaySettings, keyof StreamLimits> & {
  /** This replica's name (`GET /v1/status` shows it). */
  instance: string;
  /** The bounds on streams and open connections, defaults filled in and checked (docs/event-stream.md, "Bounds"). */
  streamLimits: StreamLimits;
};

declare module 'fastify' {
  interface FastifyInstance {
    settings: AppSettings;
  }
}

const STREAM_LIMIT_KEYS: readonly string[] = Object.keys(DEFAULT_STREAM_LIMITS);

/** The stream bounds are checked here, once: marks out of order stop the gateway before it serves anything. */
function appSettingsOf(settings: GatewaySettings, instance: string): AppSettings {
  const entries = Object.entries(settings);
  const rest = Object.fromEntries(entries.filter(([key]) => !STREAM_LIMIT_KEYS.includes(key))) as Omit<GatewaySettings, keyof StreamLimits>;
  const limits = Object.fromEntries(entries.filter(([key, value]) => STREAM_LIMIT_KEYS.includes(key) && value !== undefined)) as Partial<StreamLimits>;
  return { ...rest, instance, streamLimits: checkStreamLimits({ ...DEFAULT_STREAM_LIMITS, ...limits }) };
}

/** `app.settings`: what `buildGatewayApp` was given; a part fills in its own default for what is unset. */
export const settingsPlugin = fp<{ settings: GatewaySettings; instance: string }>(
  async (app, { settings, instance }) => {
    app.decorate('settings', appSettingsOf(settings, instance));
  },
  { name: 'svc-settings', fastify: '5.x' },
);
