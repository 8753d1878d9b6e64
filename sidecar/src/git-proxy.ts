import { execFile } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { apiPaths, MODEL_PROXY_UNFORWARDED_HEADERS, type SidecarWorkspace } from '@svc/protocol';
import type { ControlPlaneClient } from './http-client.js';
import { forwardToControlPlane } from './loopback-forward.js';

const run = promisify(execFile);

/** The hop's own headers and any credential git sends: never forwarded (the worker token is added). */
const DROPPED = new Set(MODEL_PROXY_UNFORWARDED_HEADERS);

/** Where the sandbox's git finds the proxy: `http://127.0.0.1:<port>/git`. */
const PROXY_PATH = '/git';

export interface GitProxy {
  /** The URL git is pointed at instead of the repository's. */
  url: string;
  close(): Promise<void>;
}

/**
 * The repository's remote on the sandbox's loopback (docs/workspace.md "Fetch and push"): git's
 * smart-HTTP requests are forwarded, streamed, to the gateway's git proxy with the worker token;
 * the gateway adds the credential and decides pushes. The workspace's git configuration sends the
 * repository's URL here (`url.<proxy>.insteadOf`), so `git fetch`, `git pull` and `git push` to
 * `origin` (or to the URL itself) work as they would outside, and no credential is ever in the sandbox.
 */
export async function startGitProxy(options: {
  workspace: SidecarWorkspace;
  workerId: string;
  client: ControlPlaneClient;
  warn(message: string): void;
}): Promise<GitProxy> {
  const { workspace, workerId, client } = options;
  const server = http.createServer((request, response) => {
    const url = request.url ?? '/';
    if (!url.startsWith(`${PROXY_PATH}/`)) {
      response.writeHead(404, { 'content-type': 'text/plain' }).end(`svc git proxy: only ${workspace.repo} is served here, under ${PROXY_PATH}/\n`);
      return;
    }
    forwardToControlPlane({
      client,
      path: `${apiPaths.gitProxy(workerId)}${url.slice(PROXY_PATH.length)}`,
      request,
      response,
      dropped: DROPPED,
      unreachable(reason) {
        options.warn(`git proxy: the control plane could not be reached (${reason})`);
        response.writeHead(502, { 'content-type': 'text/plain' }).end(`svc git proxy: the control plane could not be reached (${reason})\n`);
      },
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const proxyUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}${PROXY_PATH}`;
  await pointGitAtProxy(workspace, proxyUrl).catch((err: Error) => options.warn(`git proxy: the workspace's git could not be pointed at it (${err.message})`));
  return {
    url: proxyUrl,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Sets `url.<proxy>.insteadOf = <repository>` in the workspace's `.git/config`, first removing
 * what an earlier run of the sidecar set (its port is gone).
 */
async function pointGitAtProxy(workspace: SidecarWorkspace, proxyUrl: string): Promise<void> {
  const git = (...args: string[]) => run('git', ['-C', workspace.path, ...args], { timeout: 10_000, env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' } });
  const earlier = await git('config', '--local', '--get-regexp', `^url\\.http://127\\.0\\.0\\.1:[0-9]+${PROXY_PATH}\\.insteadof$`).then(
    ({ stdout }) => stdout,
    () => '',
  );
  for (const line of earlier.split('\n').filter(Boolean)) {
    const key = line.slice(0, line.indexOf(' '));
    await git('config', '--local', '--remove-section', key.slice(0, key.lastIndexOf('.')));
  }
  await git('config', '--local', `url.${proxyUrl}.insteadOf`, workspace.repo);
}
