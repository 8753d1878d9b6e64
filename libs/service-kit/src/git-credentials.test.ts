import { describe, expect, it } from 'vitest';
import { credentialFor, parseGitCredentials } from './git-credentials.js';

describe('SVC_GIT_CREDENTIALS', () => {
  it('host (or host:port) → token; a repository takes its host:port one first, then its host one', () => {
    const credentials = parseGitCredentials('{"git.example.com": "t-host", "git.example.com:8443": "t-port", "Other.Example": "t-other"}');
    expect(credentialFor(credentials, new URL('https://git.example.com/org/app.git'))).toBe('t-host');
    expect(credentialFor(credentials, new URL('https://git.example.com:8443/org/app.git'))).toBe('t-port');
    expect(credentialFor(credentials, new URL('https://git.example.com:9000/org/app.git'))).toBe('t-host');
    expect(credentialFor(credentials, new URL('https://other.example/x.git'))).toBe('t-other');
    expect(credentialFor(credentials, new URL('https://elsewhere.example/x.git'))).toBeUndefined();
    expect(parseGitCredentials(undefined).size).toBe(0);
    expect(parseGitCredentials('  ').size).toBe(0);
  });

  it('a malformed value is refused naming the variable, never echoing what it holds', () => {
    for (const raw of ['not json s3cret', '["s3cret"]', '{"git.example.com": 42}', '{"git.example.com": "s3cret\\nmore"}', '{"git.example.com": ""}']) {
      let message = '';
      try {
        parseGitCredentials(raw);
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message, raw).toMatch(/^SVC_GIT_CREDENTIALS/);
      expect(message).not.toContain('s3cret');
    }
  });
});
