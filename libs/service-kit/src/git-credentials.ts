import { jsonObjectSetting, optionalStringSetting } from './config.js';

/**
 * The tokens the control plane holds for git hosts (`SVC_GIT_CREDENTIALS`, docs/workspace.md): a
 * JSON object of `host` (or `host:port`) → token. The session service clones with them and pushes
 * a person's changes; the gateway's git proxy adds them to the agent's fetches and pushes. None
 * ever enters a sandbox.
 */
export type GitCredentials = ReadonlyMap<string, string>;

/** Reads `SVC_GIT_CREDENTIALS`; a malformed value stops the start, naming the variable (never echoing a token). */
export function parseGitCredentials(raw: string | undefined): GitCredentials {
  const parsed = jsonObjectSetting('SVC_GIT_CREDENTIALS', raw, 'host → token, {"git.example.com": "<token>"}');
  const credentials = new Map<string, string>();
  for (const [host, token] of Object.entries(parsed ?? {})) {
    if (typeof token !== 'string' || token === '' || /[\r\n]/.test(token))
      throw new Error(`SVC_GIT_CREDENTIALS: the token for ${host} must be a non-empty string on one line`);
    credentials.set(host.toLowerCase(), token);
  }
  return credentials;
}

/** The token for a repository's host (`host:port` first, then the host alone), if the control plane holds one. */
export function credentialFor(credentials: GitCredentials, repo: URL): string | undefined {
  return credentials.get(repo.host.toLowerCase()) ?? credentials.get(repo.hostname.toLowerCase());
}

/** The setting both the session service and the gateway read. */
export const gitCredentialSettings = {
  /** JSON host → token (docs/workspace.md); none enters a sandbox. */
  gitCredentials: optionalStringSetting('SVC_GIT_CREDENTIALS'),
};

/** The `Authorization` header a forge takes for a token over smart HTTP (basic auth, the token as password). */
export function gitAuthorization(token: string): string {
  return `Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`;
}
