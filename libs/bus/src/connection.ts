import { CodedError } from '@svc/protocol';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { ConfigError, type Logger } from '@svc/service-kit';

export type { NatsConnection } from '@nats-io/transport-node';

export interface BusConnectionOptions {
  /** One server's URL, several comma-separated (`SVC_NATS_URL`), or a list: the members of a cluster, tried in turn. */
  servers: string | string[];
  /** Shown in the server's connection list, e.g. "gateway-0". */
  name: string;
  logger: Logger;
  /** How long to keep trying the first connection, in ms (a server starting beside us may be late). */
  connectTimeoutMs?: number;
  /** This service's NATS user (docs/nats-security.md); without one the server refuses the connection. */
  credentials?: { user: string; password: string } | undefined;
}

/**
 * Connects to NATS, reconnecting forever after a drop (with jittered waits) and logging each
 * connection change, so a NATS restart is a pause, not an outage.
 */
export async function connectBus(options: BusConnectionOptions): Promise<NatsConnection> {
  const log = options.logger.child({ component: 'bus' });
  const deadline = Date.now() + (options.connectTimeoutMs ?? 10_000);
  for (;;) {
    try {
      const nc = await connect({
        servers: typeof options.servers === 'string' ? options.servers.split(',').map((url) => url.trim()) : options.servers,
        name: options.name,
        ...(options.credentials ? { user: options.credentials.user, pass: options.credentials.password } : {}),
        maxReconnectAttempts: -1,
        reconnectTimeWait: 250,
        reconnectJitter: 250,
        pingInterval: 10_000,
        waitOnFirstConnect: false,
        // Otherwise every request and JetStream publish builds two Error objects (stack traces
        // included) in advance, in case it times out: a large share of a busy gateway's CPU
        // (docs/benchmarks.md#ingest).
        // Our errors carry the subject instead (requestJson).
        noAsyncTraces: true,
      });
      void watchStatus(nc, log);
      log.info({ server: nc.getServer() }, 'connected to NATS');
      return nc;
    } catch (err) {
      // Wrong or missing credentials do not get better by waiting.
      if (/authorization violation|authentication/i.test(String((err as Error).message))) {
        throw new Error(
          `NATS at ${String(options.servers)} refused ${options.credentials ? `the credentials of user ${options.credentials.user}` : 'a connection without credentials'} (set SVC_NATS_USER and SVC_NATS_PASSWORD)`,
          { cause: err },
        );
      }
      if (Date.now() >= deadline) throw new Error(`cannot connect to NATS at ${String(options.servers)}`, { cause: err });
      log.warn({ err }, 'NATS not reachable yet; retrying');
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

async function watchStatus(nc: NatsConnection, log: Logger): Promise<void> {
  for await (const status of nc.status()) {
    switch (status.type) {
      case 'disconnect':
        log.warn({ server: status.server }, 'disconnected from NATS');
        break;
      case 'reconnect':
        log.info({ server: status.server }, 'reconnected to NATS');
        break;
      case 'error':
        log.error({ err: status.error }, 'NATS error');
        break;
      case 'slowConsumer':
        log.warn({ subject: status.sub.getSubject() }, 'slow NATS consumer');
        break;
      default:
        break;
    }
  }
}

/** Whether the connection is up right now (false while it is reconnecting, draining or closed). */
export function trackConnection(nc: NatsConnection): { connected(): boolean } {
  let connected = !nc.isClosed();
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === 'disconnect' || status.type === 'reconnecting') connected = false;
      else if (status.type === 'reconnect') connected = true;
    }
  })();
  return { connected: () => connected && !nc.isClosed() && !nc.isDraining() };
}

/**
 * Whether `err` says NATS (or JetStream behind it) cannot be reached right now, as opposed to a
 * request it refused: worth waiting out at start.
 */
export function isBusUnavailable(err: unknown): boolean {
  if (err instanceof CodedError) return err.code === 'bus_unavailable' || err.code === 'unavailable' || err.code === 'timeout';
  if (!(err instanceof Error)) return false;
  return (
    ['TimeoutError', 'NoRespondersError', 'ConnectionError', 'RequestError', 'ClosedConnectionError'].includes(err.name) ||
    /timeout|no responders|disconnect|connection closed|503/i.test(err.message)
  );
}

/** A service's NATS credentials from its settings (`SVC_NATS_USER`, `SVC_NATS_PASSWORD`), if it has any. */
export function natsCredentialsOf(config: {
  natsUser?: string | undefined;
  natsPassword?: string | undefined;
}): { user: string; password: string } | undefined {
  if (config.natsUser === undefined && config.natsPassword === undefined) return undefined;
  if (!config.natsUser || !config.natsPassword)
    throw new ConfigError(["SVC_NATS_USER and SVC_NATS_PASSWORD go together: set both (the service's NATS user and its password) or neither"]);
  return { user: config.natsUser, password: config.natsPassword };
}
