import { createConnection, createServer, type Socket } from 'node:net';

export interface TcpProxy {
  /** Where clients connect (`127.0.0.1:<port>`). */
  port: number;
  /**
   * The network between the clients and the server fails without a word: the connections open
   * now carry nothing more in either direction and are never closed (as across a lost node or
   * a partition: no FIN, no RST). Connections made afterwards work.
   */
  silenceOpenConnections(): void;
  /** Connections made through it so far. */
  readonly connections: number;
  stop(): Promise<void>;
}

/**
 * A TCP proxy in front of a local server, for tests of a network that fails silently; a closed
 * connection or a stopped server is better shown with the server itself.
 */
export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  const open = new Set<{ client: Socket; server: Socket; silenced: boolean }>();
  let connections = 0;
  const proxy = createServer((client) => {
    connections += 1;
    const server = createConnection({ host: '127.0.0.1', port: targetPort });
    const pair = { client, server, silenced: false };
    open.add(pair);
    const forward = (from: Socket, to: Socket) => from.on('data', (chunk) => pair.silenced || to.write(chunk));
    forward(client, server);
    forward(server, client);
    const close = () => {
      if (pair.silenced) return;
      open.delete(pair);
      client.destroy();
      server.destroy();
    };
    for (const socket of [client, server]) {
      socket.on('error', close);
      socket.on('close', close);
    }
  });
  await new Promise<void>((resolve, reject) => {
    proxy.once('error', reject);
    proxy.listen(0, '127.0.0.1', resolve);
  });
  const address = proxy.address();
  if (typeof address !== 'object' || !address) throw new Error('the proxy has no port');
  return {
    port: address.port,
    silenceOpenConnections() {
      for (const pair of open) pair.silenced = true;
    },
    get connections() {
      return connections;
    },
    async stop() {
      for (const { client, server } of open) {
        client.destroy();
        server.destroy();
      }
      open.clear();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    },
  };
}
