import { choiceSetting, integerSetting, optionalStringSetting, stringSetting } from './config.js';

/** Settings every control-plane process reads. */
export const commonSettings = {
  /** The NATS server, or several comma-separated (a cluster's members). */
  natsUrl: stringSetting('SVC_NATS_URL', { default: 'nats://127.0.0.1:4222' }),
  /** This service's NATS user and password (docs/nats-security.md): the server refuses a client without them. */
  natsUser: optionalStringSetting('SVC_NATS_USER'),
  natsPassword: optionalStringSetting('SVC_NATS_PASSWORD'),
  logLevel: choiceSetting('SVC_LOG_LEVEL', ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'], { default: 'info' }),
  /** Which replica this is, in logs and health answers (a Pod name in Kubernetes). */
  instance: stringSetting('SVC_INSTANCE', { default: process.env['HOSTNAME'] ?? `pid-${process.pid}` }),
  /** A port for the Kubernetes probes `/healthz` and `/readyz` (0: none). */
  healthPort: integerSetting('SVC_HEALTH_PORT', { default: 0, min: 0, max: 65535 }),
};
