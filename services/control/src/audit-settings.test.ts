import { describe, expect, it } from 'vitest';
import { ConfigError, readConfig } from '@svc/service-kit';
import { auditSettings } from './config.js';

const KEY = 'k'.repeat(32);

describe('control — the audit settings', () => {
  it('audit settings — unset: no key, no previous keys, a head a minute', () => {
    expect(readConfig(auditSettings, {})).toEqual({ auditKey: undefined, auditPreviousKeys: [], auditHeadIntervalS: 60 });
  });

  it('audit settings — a key, previous keys comma-separated, an interval', () => {
    expect(
      readConfig(auditSettings, { SVC_AUDIT_KEY: KEY, SVC_AUDIT_PREVIOUS_KEYS: ` ${'a'.repeat(40)}, ${'b'.repeat(32)},`, SVC_AUDIT_HEAD_INTERVAL_S: '5' }),
    ).toEqual({ auditKey: KEY, auditPreviousKeys: ['a'.repeat(40), 'b'.repeat(32)], auditHeadIntervalS: 5 });
  });

  it('audit settings — a key shorter than 32 characters, in either variable, or an interval out of range: start-up stops naming each', () => {
    const read = () => readConfig(auditSettings, { SVC_AUDIT_KEY: 'short', SVC_AUDIT_PREVIOUS_KEYS: `${KEY},short`, SVC_AUDIT_HEAD_INTERVAL_S: '0' });
    expect(read).toThrow(ConfigError);
    expect(read).toThrow(
      [
        'invalid configuration:',
        '  - SVC_AUDIT_KEY needs keys of at least 32 characters (e.g. openssl rand -base64 32)',
        '  - SVC_AUDIT_PREVIOUS_KEYS needs keys of at least 32 characters (e.g. openssl rand -base64 32)',
        '  - SVC_AUDIT_HEAD_INTERVAL_S must be an integer from 1 to 3600, got "0"',
      ].join('\n'),
    );
  });
});
