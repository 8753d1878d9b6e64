import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { ControlPlaneClient } from './http-client.js';

export interface EgressProxy {
  /** The variables the agent gets: the proxy for HTTPS (and HTTP), and no proxy for loopback. */
  agentEnv: Record<string, string>;
  close(): Promise<void>;
}

/**
 * The agent's way to everything but its model: an HTTP CONNECT proxy on the sandbox's loopback.
 * Each CONNECT becomes a tunnel through the gateway, which decides it (the template's list, a
 * person, or the policy; never the control plane's own addresses) and records it; this proxy
 * only carries the answer. A refusal reaches the agent as a refused CONNECT (403) with the reason.
 * Plain-HTTP proxy requests are refused (501): only tunnels are carried.
 */
export async function startEgressProxy(options: { workerId: string; client: ControlPlaneClient; warn(message: string): void }): Promise<EgressProxy> {
  const tunnels = new Set<Socket>();
  const server = http.createServer((_request, response) => {
    response.writeHead(501, { 'content-type': 'text/plain' }).end('svc egress proxy: only CONNECT tunnels (HTTPS) are carried\n');
  });
  server.on('connect', (request: http.IncomingMessage, agentSocket: Socket, head: Buffer) => {
    const target = request.url ?? '';
    tunnels.add(agentSocket);
    agentSocket.on('close', () => tunnels.delete(agentSocket));
    agentSocket.on('error', () => agentSocket.destroy());
    options.client.tunnel(options.workerId, target).then(
      ({ status, socket, head: upstreamHead }) => {
        if (status !== 200) {
          // The gateway's refusal (its reason is the body) goes to the agent as it is.
          let reason = upstreamHead.toString();
          socket.on('data', (chunk: Buffer) => (reason += chunk.toString()));
          socket.on('close', () =>
            agentSocket.end(`HTTP/1.1 ${status} Refused\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n${reason.trim() || 'refused by svc'}\n`),
          );
          socket.on('error', () => agentSocket.destroy());
          socket.resume();
          return;
        }
        tunnels.add(socket);
        socket.on('close', () => tunnels.delete(socket));
        agentSocket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        if (upstreamHead.length > 0) agentSocket.write(upstreamHead);
        if (head.length > 0) socket.write(head);
        socket.pipe(agentSocket).pipe(socket);
        socket.on('error', () => agentSocket.destroy());
        agentSocket.on('close', () => socket.destroy());
        socket.on('close', () => agentSocket.destroy());
      },
      (err: NodeJS.ErrnoException) => {
        options.warn(`egress proxy: the control plane could not be reached for ${target} (${err.code ?? err.message})`);
        agentSocket.end('HTTP/1.1 502 Bad Gateway\r\nconnection: close\r\n\r\n');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    agentEnv: {
      HTTPS_PROXY: url,
      https_proxy: url,
      HTTP_PROXY: url,
      http_proxy: url,
      NO_PROXY: '127.0.0.1,localhost,::1',
      no_proxy: '127.0.0.1,localhost,::1',
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of tunnels) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
