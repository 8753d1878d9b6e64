import { CodedError, type PullRequestRecord, type PullRequestRpcType, type WorkerWorkspace } from '@svc/protocol';
import { credentialFor, type GitCredentials } from '@svc/service-kit';

/** A forge's API for a git host: how pull requests are opened there. Only GitHub's REST API for now. */
interface Forge {
  type: 'github';
  /** The API's base URL (`https://api.github.com`, or a GitHub Enterprise server's `https://ghe.example.com/api/v3`). */
  api_url: string;
}

export type Forges = ReadonlyMap<string, Forge>;

/** github.com needs no configuration. */
const KNOWN_FORGES: Record<string, Forge> = { 'github.com': { type: 'github', api_url: 'https://api.github.com' } };

/** Reads `SVC_GIT_FORGES` (JSON host → `{type: "github", api_url}`); a malformed value stops the start, naming the variable. */
export function parseForges(raw: string | undefined): Forges {
  const forges = new Map<string, Forge>(Object.entries(KNOWN_FORGES));
  if (raw === undefined || raw.trim() === '') return forges;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new Error('SVC_GIT_FORGES must be a JSON object of host → {"type": "github", "api_url": "https://…"}: it is not JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('SVC_GIT_FORGES must be a JSON object of host → forge');
  for (const [host, forge] of Object.entries(parsed as Record<string, unknown>)) {
    const { type, api_url: apiUrl } = (forge ?? {}) as Record<string, unknown>;
    if (type !== 'github') throw new Error(`SVC_GIT_FORGES: the forge of ${host} must have "type": "github" (the one kind svc speaks to)`);
    if (typeof apiUrl !== 'string' || !/^https?:\/\/\S+$/.test(apiUrl)) throw new Error(`SVC_GIT_FORGES: the forge of ${host} needs an http(s) "api_url"`);
    forges.set(host.toLowerCase(), { type, api_url: apiUrl.replace(/\/$/, '') });
  }
  return forges;
}

/** `owner/name` of a repository URL as a forge names it (`https://github.com/org/app.git` → `org`, `app`). */
function ownerAndName(repo: URL): { owner: string; name: string } {
  const parts = repo.pathname
    .replace(/\.git$/, '')
    .split('/')
    .filter(Boolean);
  if (parts.length < 2) throw new CodedError('forge_not_configured', `${repo.href} does not name a repository as owner/name`);
  return { owner: parts[parts.length - 2]!, name: parts[parts.length - 1]! };
}

/** One call of the forge's API: its JSON answer, or a coded error saying what the forge said. */
async function callForge(url: string, token: string | undefined, init: { method: string; body?: unknown }): Promise<Record<string, unknown>> {
  let response: Response;
  try {
    response = await fetch(url, {
      method: init.method,
      headers: {
        accept: 'application/vnd.github+json',
        'x-github-api-version': '2022-11-28',
        'user-agent': 'svc',
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
      signal: AbortSignal.timeout(30_000),
    });
  } catch (err) {
    throw new CodedError('forge_failed', `the forge's API could not be reached (${(err as Error).message})`, undefined, { cause: err });
  }
  const answer = (await response.json().catch(() => ({}))) as Record<string, unknown>;
  if (response.ok) return answer;
  const said = typeof answer['message'] === 'string' ? answer['message'] : response.statusText;
  const errors = Array.isArray(answer['errors']) ? ` (${JSON.stringify(answer['errors']).slice(0, 300)})` : '';
  // 422: GitHub's word for a request it understood and refused (a pull request of that branch exists, nothing to compare).
  throw new CodedError(response.status === 422 ? 'conflict' : 'forge_failed', `the forge refused: ${response.status} ${said}${errors}`);
}

/**
 * Opens a pull request of the pushed work branch through the repository's forge (GitHub's REST
 * API: `POST /repos/{owner}/{repo}/pulls`), with the control plane's token for the host. The
 * base is the one asked for, else the repository's default branch.
 */
export async function openPullRequest(
  forges: Forges,
  credentials: GitCredentials,
  workspace: WorkerWorkspace,
  request: PullRequestRpcType,
): Promise<PullRequestRecord> {
  const repo = new URL(workspace.repo);
  const forge = forges.get(repo.host.toLowerCase()) ?? forges.get(repo.hostname.toLowerCase());
  if (!forge) throw new CodedError('forge_not_configured', `no forge is configured for ${repo.host} (SVC_GIT_FORGES): a pull request cannot be opened there`);
  const token = credentialFor(credentials, repo);
  const { owner, name } = ownerAndName(repo);
  const api = `${forge.api_url}/repos/${encodeURIComponent(owner)}/${encodeURIComponent(name)}`;
  const base = request.base ?? String((await callForge(api, token, { method: 'GET' }))['default_branch'] ?? 'main');
  const made = await callForge(`${api}/pulls`, token, {
    method: 'POST',
    body: { title: request.title, head: request.head, base, ...(request.body !== undefined ? { body: request.body } : {}) },
  });
  if (typeof made['html_url'] !== 'string' || typeof made['number'] !== 'number')
    throw new CodedError('forge_failed', "the forge's answer names no pull request");
  return {
    url: made['html_url'],
    number: made['number'],
    head: request.head,
    base,
    title: request.title,
    by: request.caller.sub,
    at: new Date().toISOString(),
  };
}
