import { describe, expect, it } from 'vitest';
import { booleanSetting, choiceSetting, ConfigError, integerSetting, listSetting, optionalStringSetting, readConfig, stringSetting } from './config.js';

const settings = {
  natsUrl: stringSetting('SVC_NATS_URL', { description: 'the NATS server URL' }),
  port: integerSetting('SVC_PORT', { default: 8080, min: 1, max: 65535 }),
  debug: booleanSetting('SVC_DEBUG', { default: false }),
  mode: choiceSetting('SVC_MODE', ['single', 'distributed'], { default: 'single' }),
  origins: listSetting('SVC_CORS_ORIGINS', { default: [] }),
  databaseUrl: optionalStringSetting('SVC_DATABASE_URL'),
};

describe('service-kit config', () => {
  it('reads typed values and applies defaults', () => {
    const config = readConfig(settings, { SVC_NATS_URL: 'nats://127.0.0.1:4222', SVC_DEBUG: 'yes', SVC_CORS_ORIGINS: 'http://a, http://b,' });
    expect(config).toEqual({
      natsUrl: 'nats://127.0.0.1:4222',
      port: 8080,
      debug: true,
      mode: 'single',
      origins: ['http://a', 'http://b'],
      databaseUrl: undefined,
    });
  });

  it('a missing required variable stops start-up with a message naming it', () => {
    expect(() => readConfig(settings, {})).toThrow(/SVC_NATS_URL is required \(the NATS server URL\)/);
  });

  it('every invalid variable is named in one error', () => {
    try {
      readConfig(settings, { SVC_NATS_URL: 'x', SVC_PORT: '80a', SVC_DEBUG: 'maybe', SVC_MODE: 'cluster' });
      expect.unreachable('readConfig accepted invalid values');
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      const problems = (err as ConfigError).problems;
      expect(problems).toEqual([
        'SVC_PORT must be an integer from 1 to 65535, got "80a"',
        'SVC_DEBUG must be true or false, got "maybe"',
        'SVC_MODE must be one of single, distributed, got "cluster"',
      ]);
    }
  });

  it('an integer out of range is refused', () => {
    expect(() => readConfig({ port: integerSetting('SVC_PORT', { min: 1, max: 65535 }) }, { SVC_PORT: '70000' })).toThrow(
      /SVC_PORT must be an integer from 1 to 65535, got "70000"/,
    );
  });

  it('a string that does not match its pattern is refused', () => {
    const pattern = { url: stringSetting('SVC_URL', { pattern: /^https?:\/\// }) };
    expect(() => readConfig(pattern, { SVC_URL: 'ftp://x' })).toThrow(/SVC_URL must match/);
  });
});
