import { jetstreamManager } from '@nats-io/jetstream';
import { connectBus, natsAuthorization, type NatsCredentials } from '@svc/bus';
import { launchNatsServer, type NatsServerProcess as LaunchedNatsServer } from '@svc/nats-server';
import { createLogger } from '@svc/service-kit';
import { freePort } from './postgres.js';
import { waitFor } from './wait.js';

/** A nats-server with svc's users. */
export type NatsServerProcess = LaunchedNatsServer<NatsCredentials>;

/**
 * A throwaway `nats-server -js` for one test file: random port, temporary store directory,
 * removed by `stop()`, credentials for every service (`server.credentials`; a client without
 * them is refused). A missing binary fails with the command that installs it.
 */
export function startNatsServer(options: { port?: number; credentials?: NatsCredentials } = {}): Promise<NatsServerProcess> {
  return launchNatsServer({ ...(options.port === undefined ? {} : { port: options.port }), authorization: natsAuthorization(options.credentials) });
}

/** A JetStream cluster of local nats-servers, each with its own store and port, the same users on all. */
export interface NatsCluster {
  /** Every member's client URL, comma-separated (as `SVC_NATS_URL` takes them). */
  url: string;
  credentials: NatsCredentials;
  /** The members, by the server names JetStream reports (`cluster.leader` of a stream's info). */
  servers: ReadonlyMap<string, NatsServerProcess>;
  permissionViolations(): string[];
  stop(): Promise<void>;
}

/**
 * Starts `size` nats-servers with JetStream that route to each other (one cluster, as three
 * Pods of the official chart), and resolves once JetStream answers: its meta leader elected.
 */
export async function startNatsCluster(options: { size?: number } = {}): Promise<NatsCluster> {
  const size = options.size ?? 3;
  const authorization = natsAuthorization();
  const routePorts = await Promise.all(Array.from({ length: size }, () => freePort()));
  const routes = routePorts.map((port) => `nats://127.0.0.1:${port}`);
  const members = await Promise.allSettled(
    routePorts.map((routePort, index) => launchNatsServer({ authorization, cluster: { name: 'svc-test', serverName: `nats-${index}`, routePort, routes } })),
  );
  const started = members.flatMap((member) => (member.status === 'fulfilled' ? [member.value] : []));
  const stop = async () => void (await Promise.all(started.map((server) => server.stop())));
  const failed = members.find((member): member is PromiseRejectedResult => member.status === 'rejected');
  if (failed) {
    await stop();
    throw failed.reason;
  }
  const url = started.map((server) => server.url).join(',');
  const nc = await connectBus({
    servers: url,
    name: 'cluster-check',
    logger: createLogger({ name: 'test', level: 'silent' }),
    credentials: authorization.credentials.operator,
  });
  try {
    // Not checked at creation: before the election, JetStream's API does not answer at all.
    const jsm = await jetstreamManager(nc, { checkAPI: false });
    await waitFor(
      'the JetStream cluster to elect its meta leader',
      () =>
        jsm.getAccountInfo().then(
          () => true,
          () => false,
        ),
      30_000,
      200,
    );
  } catch (err) {
    await stop();
    throw err;
  } finally {
    await nc.close();
  }
  return {
    url,
    credentials: authorization.credentials,
    servers: new Map(started.map((server, index) => [`nats-${index}`, server])),
    permissionViolations: () => started.flatMap((server) => server.permissionViolations()),
    stop,
  };
}
