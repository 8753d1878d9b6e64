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

const DECISION_WAIT_DEFAULTS = { decisionWaitMs: 10_000, decisionTryMs: 2_000 } as const;

/**
 * How a decision waits for its worker's one writer (docs/architecture.md, "A decision"): while
 * the event-ingest replica owning the worker's partition is away, the control service asks again
 * for at most `SVC_DECISION_WAIT_MS`, each try waiting `SVC_DECISION_TRY_MS`, then answers 503.
 * The gateway reads them too, to wait for that answer rather than give up first.
 */
export const decisionWaitSettings = {
  decisionWaitMs: integerSetting('SVC_DECISION_WAIT_MS', { default: DECISION_WAIT_DEFAULTS.decisionWaitMs, min: 100, max: 120_000 }),
  decisionTryMs: integerSetting('SVC_DECISION_TRY_MS', { default: DECISION_WAIT_DEFAULTS.decisionTryMs, min: 50, max: 60_000 }),
};

/**
 * How long a caller of the control service's `decide` waits for its answer: past the last try's
 * end, so a decision stored late is still answered 201 to the person who made it, not 504 (after
 * which their next try would be refused as decided already, by them).
 */
export function decisionAnswerWithinMs(settings: { decisionWaitMs?: number; decisionTryMs?: number }): number {
  const { decisionWaitMs, decisionTryMs } = { ...DECISION_WAIT_DEFAULTS, ...settings };
  return decisionWaitMs + decisionTryMs + 1_000;
}
