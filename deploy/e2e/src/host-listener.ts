import net from 'node:net';

/** A listener on the host that a sandbox must not reach: it counts the connections it accepts (and closes them). */
export interface HostListener {
  port: number;
  accepted(): number;
  close(): Promise<void>;
}

export async function listenOnHost(host: string): Promise<HostListener> {
  let accepted = 0;
  const server = net.createServer((socket) => {
    accepted++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    accepted: () => accepted,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
