import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A pull request the stand-in was asked to open, as it received it. */
interface OpenedPullRequest {
  owner: string;
  repo: string;
  title: string;
  head: string;
  base: string;
  body?: string;
}

export interface GitHubApiStandIn {
  /** The API's base URL, as `api_url` of a forge (`SVC_GIT_FORGES`). */
  url: string;
  /** Every pull request opened, in order. */
  pulls: OpenedPullRequest[];
  /** Requests refused for their token. */
  refused(): number;
  stop(): Promise<void>;
}

/**
 * The part of GitHub's REST API svc calls, as GitHub answers it: `GET /repos/{owner}/{repo}`
 * (its `default_branch`, `main`) and `POST /repos/{owner}/{repo}/pulls` (201 with `number` and
 * `html_url`; 422 for a second one of the same head, or head equal to base), each checking
 * the bearer token (401 otherwise), on loopback.
 */
export async function startGitHubApi(token: string): Promise<GitHubApiStandIn> {
  const pulls: OpenedPullRequest[] = [];
  let refused = 0;
  const answer = (response: http.ServerResponse, status: number, body: unknown) =>
    response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.headers.authorization !== `Bearer ${token}`) {
        refused++;
        return answer(response, 401, { message: 'Bad credentials' });
      }
      const match = /^\/repos\/([^/]+)\/([^/]+)(\/pulls)?$/.exec(new URL(request.url ?? '/', 'http://api').pathname);
      if (!match) return answer(response, 404, { message: 'Not Found' });
      const [, owner, repo, pullsPath] = match as unknown as [string, string, string, string | undefined];
      if (request.method === 'GET' && !pullsPath) return answer(response, 200, { name: repo, full_name: `${owner}/${repo}`, default_branch: 'main' });
      if (request.method !== 'POST' || !pullsPath) return answer(response, 404, { message: 'Not Found' });
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Partial<OpenedPullRequest>;
      if (!body.title || !body.head || !body.base)
        return answer(response, 422, { message: 'Validation Failed', errors: [{ resource: 'PullRequest', code: 'missing_field' }] });
      if (body.head === body.base || pulls.some((pull) => pull.head === body.head && pull.base === body.base))
        return answer(response, 422, {
          message: 'Validation Failed',
          errors: [{ resource: 'PullRequest', code: 'custom', message: `A pull request already exists for ${owner}:${body.head}.` }],
        });
      pulls.push({ owner, repo, title: body.title, head: body.head, base: body.base, ...(body.body !== undefined ? { body: body.body } : {}) });
      const number = pulls.length;
      answer(response, 201, {
        number,
        state: 'open',
        html_url: `https://github.example/${owner}/${repo}/pull/${number}`,
        head: { ref: body.head },
        base: { ref: body.base },
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    pulls,
    refused: () => refused,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
