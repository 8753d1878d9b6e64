import http, { type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import { CodedError, type WorkerWorkspace } from '@svc/protocol';
import { credentialFor, gitAuthorization, type GitCredentials } from '@svc/service-kit';

/** Headers of git's requests that the remote is given (never the worker's token). */
const FORWARDED_REQUEST_HEADERS = ['content-type', 'accept', 'content-encoding', 'git-protocol', 'user-agent', 'accept-encoding'];

export function pickHeaders(headers: IncomingMessage['headers'], names: readonly string[]): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const name of names) if (headers[name] !== undefined) out[name] = headers[name];
  return out;
}

/** The workers' repositories as the git proxy reaches them: over kept-alive connections, with the control plane's credentials. */
export function createGitRemotes(credentials: GitCredentials) {
  const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };
  /** The remote's answer to one smart-HTTP request, with the control plane's credential; a refusal or failure is a 502 that says so (never a 401, which git would take as its own credential's). */
  function answer(worker: { workspace: WorkerWorkspace }, suffix: string, request: IncomingMessage, body?: Readable): Promise<IncomingMessage> {
    const repo = new URL(worker.workspace.repo);
    const target = new URL(`${repo.href.replace(/\/$/, '')}/${suffix}`);
    const token = credentialFor(credentials, repo);
    const headers = { ...pickHeaders(request.headers, FORWARDED_REQUEST_HEADERS), ...(token ? { authorization: gitAuthorization(token) } : {}) };
    if (body) delete headers['content-encoding'];
    const transport = target.protocol === 'https:' ? https : http;
    return new Promise((resolve, reject) => {
      const outgoing = transport.request(target, { method: request.method, headers, agent: target.protocol === 'https:' ? agents.https : agents.http });
      outgoing.on('response', (answer) => {
        if (answer.statusCode === 401 || answer.statusCode === 403) {
          answer.resume();
          return reject(
            new CodedError('repository_unreachable', `${repo.host} refused the control plane's credential for ${repo.pathname} (${answer.statusCode})`),
          );
        }
        resolve(answer);
      });
      outgoing.on('error', (err: NodeJS.ErrnoException) =>
        reject(new CodedError('repository_unreachable', `${repo.host} could not be reached (${err.code ?? err.message})`, undefined, { cause: err })),
      );
      (body ?? request).pipe(outgoing);
    });
  }

  return {
    answer,
    close() {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}
