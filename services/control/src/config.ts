import { userAssertionKeySetting } from '@svc/auth';
import { AUDIT_KEY_MIN_LENGTH } from '@svc/protocol';
import { cidrListSetting, commonSettings, decisionWaitSettings, integerSetting, optionalStringSetting, type Setting } from '@svc/service-kit';
import { storeSettings } from '@svc/store';

/**
 * Where webhooks may point (docs/webhooks.md, "Where a webhook may point"): the ranges an
 * operator allows, and the control plane's own endpoints, which no webhook reaches (with the
 * gateway's public URL, `SVC_GATEWAY_PUBLIC_URL`, among the control service's own settings).
 */
const webhookAddressSettings = {
  /** Ranges a webhook may reach though they are loopback, private or link-local (an in-cluster receiver's). Default: none. */
  webhookAllowedCidrs: cidrListSetting('SVC_WEBHOOK_ALLOWED_CIDRS'),
  /** NATS and the store are control-plane endpoints: read here so that no webhook reaches them. */
  natsUrl: commonSettings.natsUrl,
  databaseUrl: storeSettings.databaseUrl,
};

const tooShort = (variable: string) => `${variable} needs keys of at least ${AUDIT_KEY_MIN_LENGTH} characters (e.g. openssl rand -base64 32)`;

/** A key of `AUDIT_KEY_MIN_LENGTH` characters or more; unset: undefined. */
function auditKeySetting(variable: string): Setting<string | undefined> {
  return {
    variable,
    read: (raw) =>
      raw === undefined || raw === '' ? { value: undefined } : raw.length < AUDIT_KEY_MIN_LENGTH ? { problem: tooShort(variable) } : { value: raw },
  };
}

/** Keys, comma-separated, each of `AUDIT_KEY_MIN_LENGTH` characters or more; unset: none. */
function auditKeyListSetting(variable: string): Setting<string[]> {
  return {
    variable,
    read(raw) {
      const keys = (raw ?? '')
        .split(',')
        .map((key) => key.trim())
        .filter((key) => key !== '');
      return keys.some((key) => key.length < AUDIT_KEY_MIN_LENGTH) ? { problem: tooShort(variable) } : { value: keys };
    },
  };
}

/** The audit trail's key and published heads (docs/audit.md, "Keys and heads"). */
export const auditSettings = {
  /**
   * Seals each audit record with an HMAC, with a key kept outside the database (a Kubernetes
   * Secret in the chart). Unset: records are written unkeyed, with a warning; a trail already
   * keyed refuses to start without it.
   */
  auditKey: auditKeySetting('SVC_AUDIT_KEY'),
  /** Keys used before `SVC_AUDIT_KEY`, comma-separated: records sealed with them still verify. */
  auditPreviousKeys: auditKeyListSetting('SVC_AUDIT_PREVIOUS_KEYS'),
  /** How often the trail's head is published to JetStream when it moved (and at shutdown), in seconds. */
  auditHeadIntervalS: integerSetting('SVC_AUDIT_HEAD_INTERVAL_S', { default: 60, min: 1, max: 3600 }),
};

/**
 * Who decides (docs/nats-security.md): the key the gateway signs user assertions with, the same
 * as the gateway's. Unset: every person's decision is refused (`forbidden`), with a warning at start.
 */
const userAssertionSettings = {
  userAssertionKey: userAssertionKeySetting,
};

/** The control service's settings (docs/configuration.md). */
export const controlSettings = {
  /** Webhooks (docs/webhooks.md): the pause after a delivery's first failed try; it doubles after each. */
  webhookRetryFirstMs: integerSetting('SVC_WEBHOOK_RETRY_FIRST_MS', { default: 5_000, min: 10 }),
  /** The longest pause between two tries. */
  webhookRetryMaxMs: integerSetting('SVC_WEBHOOK_RETRY_MAX_MS', { default: 10 * 60_000, min: 10 }),
  /** How long a failing delivery is retried before its subscription is disabled. */
  webhookRetryWindowS: integerSetting('SVC_WEBHOOK_RETRY_WINDOW_S', { default: 24 * 60 * 60, min: 1 }),
  /** Signs the decision links of notifications; the gateway has the same key. Unset: no links. */
  decisionLinkKey: optionalStringSetting('SVC_DECISION_LINK_KEY'),
  /** The gateway's address as people reach it, which links point to. Unset: no links. */
  publicUrl: optionalStringSetting('SVC_GATEWAY_PUBLIC_URL'),
  ...webhookAddressSettings,
  ...auditSettings,
  ...userAssertionSettings,
  ...decisionWaitSettings,
};
