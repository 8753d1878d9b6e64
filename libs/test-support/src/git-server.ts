import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** Where Debian's git keeps its smart-HTTP server (a CGI program). */
const HTTP_BACKEND = '/usr/lib/git-core/git-http-backend';

/** A git server on loopback, as a forge serves repositories: smart HTTP, basic auth. */
export interface GitServer {
  /** `http://127.0.0.1:<port>`: a repository is `${url}/<name>.git`. */
  url: string;
  /** The password every request must carry (any user name), as a forge's token. */
  token: string;
  /** The bare repositories' directory on the host, to look at what was pushed. */
  root: string;
  /** Makes a bare repository `<name>.git` with one commit on `main` holding `files`; resolves with that commit. */
  createRepository(name: string, files: Readonly<Record<string, string>>): string;
  /** Every request, as `METHOD path?query` with whether it was authorized. */
  requests(): Array<{ line: string; authorized: boolean }>;
  stop(): Promise<void>;
}

function git(args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = {}): string {
  const run = spawnSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: cwd, ...env } });
  if (run.status !== 0) throw new Error(`git ${args.join(' ')} exited with ${run.status}: ${run.stderr}`);
  return run.stdout.trim();
}

/**
 * `git http-backend` behind a node HTTP server (the CGI environment it needs, the request body
 * piped in, its headers and body piped out), with basic auth on every request — the stand-in
 * for a forge that the real git client talks to over the network. Pushes are served too.
 */
export async function startGitServer(): Promise<GitServer> {
  const root = await mkdtemp(path.join(tmpdir(), 'svc-git-server-'));
  const token = `git-token-${Math.random().toString(36).slice(2)}`;
  const seen: Array<{ line: string; authorized: boolean }> = [];
  const server = http.createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://git');
    const [scheme, encoded] = (request.headers.authorization ?? '').split(' ');
    const password = scheme === 'Basic' && encoded ? Buffer.from(encoded, 'base64').toString('utf8').split(':').slice(1).join(':') : '';
    const authorized = password === token;
    seen.push({ line: `${request.method} ${url.pathname}${url.search}`, authorized });
    if (!authorized) {
      response.writeHead(401, { 'www-authenticate': 'Basic realm="git"' });
      return void response.end('authentication required\n');
    }
    const cgi = spawn(HTTP_BACKEND, [], {
      env: {
        PATH: process.env['PATH'],
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: '1',
        REMOTE_USER: 'svc-test',
        REQUEST_METHOD: request.method ?? 'GET',
        PATH_INFO: decodeURIComponent(url.pathname),
        QUERY_STRING: url.search.slice(1),
        CONTENT_TYPE: request.headers['content-type'] ?? '',
        ...(request.headers['content-encoding'] ? { HTTP_CONTENT_ENCODING: request.headers['content-encoding'] } : {}),
        ...(request.headers['git-protocol'] ? { GIT_PROTOCOL: String(request.headers['git-protocol']) } : {}),
      },
      // What it says of a refused request (a repository that is not there) is the test's to judge, not its output's.
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    request.pipe(cgi.stdin);
    relayCgi(cgi.stdout, response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    token,
    root,
    createRepository(name, files) {
      const bare = path.join(root, `${name}.git`);
      const work = `${bare}-work`;
      spawnSync('mkdir', ['-p', work]);
      git(['init', '--bare', '--initial-branch=main', bare], root);
      git(['config', 'http.receivepack', 'true'], bare);
      git(['init', '--initial-branch=main', work], root);
      for (const [file, content] of Object.entries(files)) {
        spawnSync('mkdir', ['-p', path.dirname(path.join(work, file))]);
        spawnSync('sh', ['-c', 'cat > "$1"', 'sh', path.join(work, file)], { input: content });
      }
      git(['add', '-A'], work);
      git(['-c', 'user.name=Test', '-c', 'user.email=test@example.com', 'commit', '-m', 'first'], work);
      git(['push', bare, 'main'], work);
      return git(['rev-parse', 'HEAD'], work);
    },
    requests: () => seen,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(root, { recursive: true, force: true });
    },
  };
}

/** Relays a CGI program's answer: its header lines (a `Status:` among them) until the blank line, then its body. */
function relayCgi(output: NodeJS.ReadableStream, response: http.ServerResponse): void {
  let head = Buffer.alloc(0);
  let headersDone = false;
  output.on('data', (chunk: Buffer) => {
    if (headersDone) return void response.write(chunk);
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf('\r\n\r\n') >= 0 ? head.indexOf('\r\n\r\n') : head.indexOf('\n\n');
    if (end < 0) return;
    const separator = head.indexOf('\r\n\r\n') === end ? 4 : 2;
    const headers: Record<string, string> = {};
    let status = 200;
    for (const line of head.subarray(0, end).toString('utf8').split(/\r?\n/)) {
      const colon = line.indexOf(':');
      if (colon < 0) continue;
      const name = line.slice(0, colon).trim();
      const value = line.slice(colon + 1).trim();
      if (name.toLowerCase() === 'status') status = Number(value.split(' ')[0]);
      else headers[name] = value;
    }
    headersDone = true;
    response.writeHead(status, headers);
    response.write(head.subarray(end + separator));
  });
  output.on('end', () => response.end());
}
