import { describe, expect, it } from 'vitest';
import { egressRuleMatches, parseEgressTarget } from './egress.js';

describe('egress targets and rules', () => {
  it('egress — a target is host:port (IPv6 in brackets), port 1-65535; anything else is none', () => {
    expect(parseEgressTarget('registry.npmjs.org:443')).toEqual({ host: 'registry.npmjs.org', port: 443, target: 'registry.npmjs.org:443' });
    expect(parseEgressTarget('[::1]:8080')).toEqual({ host: '::1', port: 8080, target: '[::1]:8080' });
    expect(parseEgressTarget('Example.COM:80')?.target).toBe('example.com:80');
    for (const bad of ['example.com', 'example.com:0', 'example.com:70000', 'http://example.com:80', 'a b:80', ':443', 'example.com:443/path'])
      expect(parseEgressTarget(bad), bad).toBeUndefined();
  });

  it('egress — rules glob the host or the port, and match the whole target', () => {
    expect(egressRuleMatches('registry.npmjs.org:443', 'registry.npmjs.org:443')).toBe(true);
    expect(egressRuleMatches('registry.npmjs.org:443', 'registry.npmjs.org:80')).toBe(false);
    expect(egressRuleMatches('*.github.com:443', 'api.github.com:443')).toBe(true);
    expect(egressRuleMatches('*.github.com:443', 'github.com.evil.example:443')).toBe(false);
    expect(egressRuleMatches('example.com:*', 'example.com:8443')).toBe(true);
    expect(egressRuleMatches('example.com:*', 'example.com.evil:8443')).toBe(false);
    expect(egressRuleMatches('EXAMPLE.com:443', 'example.com:443')).toBe(true);
  });
});
