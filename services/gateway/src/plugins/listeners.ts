import http, { type IncomingMessage } from 'node:http';
import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { CodedError } from '@svc/protocol';

declare module 'fastify' {
  interface FastifyInstance {
    /** The worker port's server (not listening: `start` listens). */
    workerListener: http.Server;
  }
}

/** Marks a request that came in through the worker port. */
const VIA_WORKER_PORT = Symbol('svc.viaWorkerPort');

/** Whether the request came through the worker port (the sandboxes' listener). */
export function viaWorkerPort(request: FastifyRequest | IncomingMessage): boolean {
  const raw = 'raw' in request ? request.raw : request;
  return (raw as IncomingMessage & { [VIA_WORKER_PORT]?: true })[VIA_WORKER_PORT] === true;
}

/**
 * The worker port (docs/gateway.md, "Two listeners"): a second HTTP server whose requests go
 * through this same app — the same middleware chain and routes — but reach only the routes a
 * sidecar calls (its own token, `auth: 'worker'`); every other path answers 404 as if it did not
 * exist. A sandbox's one channel leads here, never to the public listener.
 */
function createWorkerListener(app: FastifyInstance): http.Server {
  const listener = http.createServer((request, response) => {
    (request as IncomingMessage & { [VIA_WORKER_PORT]?: true })[VIA_WORKER_PORT] = true;
    app.routing(request, response);
  });
  // A WebSocket (a terminal's sandbox end) is upgraded where @fastify/websocket listens: the public server's upgrade handler, marked as the worker port's.
  listener.on('upgrade', (request: IncomingMessage, socket, head) => {
    (request as IncomingMessage & { [VIA_WORKER_PORT]?: true })[VIA_WORKER_PORT] = true;
    app.server.emit('upgrade', request, socket, head);
  });
  return listener;
}

/** The names the public listener answers to: a browser's Host header must be one (DNS rebinding). */
interface AllowedHosts {
  /** Any name (`SVC_GATEWAY_ALLOWED_HOSTS=*`). */
  any: boolean;
  names: ReadonlySet<string>;
}

/** Loopback names a local gateway always answers to. */
const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]'];

/** The allowed names: the configured ones, the public URL's host and the loopback names. */
function allowedHostsOf(configured: readonly string[], publicUrl: string | undefined): AllowedHosts {
  const names = new Set([...LOOPBACK_NAMES, ...configured.map((name) => name.trim().toLowerCase()).filter((name) => name !== '' && name !== '*')]);
  if (publicUrl) names.add(new URL(publicUrl).hostname.toLowerCase());
  return { any: configured.includes('*'), names };
}

/** The name of a Host header, without its port (`[::1]:8080` → `[::1]`). */
function hostName(header: string): string {
  const name = header.trim().toLowerCase();
  if (name.startsWith('[')) return name.slice(0, name.indexOf(']') + 1);
  const colon = name.lastIndexOf(':');
  return colon >= 0 ? name.slice(0, colon) : name;
}

/**
 * Keeps each listener to its own: through the worker port only the sidecar's routes exist (a
 * `worker-or-user` route takes the worker's token there); on the public listener the Host header
 * must name this gateway, so a web page cannot reach it under a name of its own (DNS rebinding).
 */
export const listenersPlugin = fp(
  async (app) => {
    const allowedHosts = allowedHostsOf(app.settings.allowedHosts ?? [], app.settings.publicUrl);
    app.addHook('onRequest', (request, _reply, done) => {
      if (viaWorkerPort(request)) {
        const auth = request.routeOptions.config.auth;
        if (request.is404 || (auth !== 'worker' && auth !== 'worker-or-user'))
          return done(new CodedError('not_found', `no route ${request.method} ${request.url.split('?')[0]!}`));
        return done();
      }
      const host = request.headers.host;
      if (!allowedHosts.any && (host === undefined || !allowedHosts.names.has(hostName(host))))
        return done(
          new CodedError(
            'forbidden',
            `this gateway does not answer to the name ${JSON.stringify(host ?? '')}; add it to SVC_GATEWAY_ALLOWED_HOSTS if it is one of its names`,
          ),
        );
      done();
    });
  },
  { name: 'svc-listeners', fastify: '5.x', dependencies: ['svc-errors', 'svc-settings'] },
);

/**
 * `app.workerListener`, closed with the app. Registered after the routes: close hooks run
 * last-registered first, so the sandboxes' connections go before the parts their routes use
 * (the model proxy's usage, the events' publisher).
 */
export const workerPortPlugin = fp(
  async (app) => {
    const workerListener = createWorkerListener(app);
    app.decorate('workerListener', workerListener);
    app.addHook('onClose', async () => {
      workerListener.closeAllConnections();
      if (workerListener.listening) await new Promise<void>((resolve) => workerListener.close(() => resolve()));
    });
  },
  { name: 'svc-worker-port', fastify: '5.x', dependencies: ['svc-listeners'] },
);
