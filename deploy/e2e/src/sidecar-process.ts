import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ListResponseOf, Session, StoredEvent } from '@svc/protocol';
import { dieWithParent } from '@svc/service-kit';
import { waitFor } from '@svc/test-support';

/** The single executable the session service ships into sandboxes (`nx run @svc/sidecar:executable`). */
const SIDECAR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../sidecar/executable/svc-sidecar');

export interface SidecarProcess {
  pid: number;
  exited: Promise<number | null>;
  stderr(): string;
}

/** Runs svc-sidecar with the config file, as a sandbox would. */
export function startSidecar(configFile: string): SidecarProcess {
  // It ends with the test's process even when that is killed (its agent is its own process group: a
  // sidecar started again on the same state kills what a killed one left).
  const launch = dieWithParent(SIDECAR, []);
  const child = spawn(launch.command, launch.args, { env: { ...process.env, SVC_SIDECAR_CONFIG: configFile }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return { pid: child.pid!, exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))), stderr: () => stderr };
}

/** Writes the config to `<dir>/<name>.json` (its state in `<dir>/<name>-state`) and runs svc-sidecar on it. */
export async function startSidecarWith(dir: string, name: string, config: Record<string, unknown>): Promise<SidecarProcess> {
  const file = path.join(dir, `${name}.json`);
  await writeFile(file, JSON.stringify({ state_dir: path.join(dir, `${name}-state`), ...config }));
  return startSidecar(file);
}

/** What a person does through the API while an agent runs: read its events and open requests, decide. */
export function controlClient(gatewayUrl: string, userToken: string) {
  const get = async <T>(url: string) => (await (await fetch(`${gatewayUrl}${url}`, { headers: { authorization: `Bearer ${userToken}` } })).json()) as T;
  return {
    get,
    /** A POST as the user (a JSON body when one is given): `…/messages`, `…/interrupt`. */
    post: (url: string, body?: unknown) =>
      fetch(`${gatewayUrl}${url}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${userToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }),
    events: (workerId: string) => get<ListResponseOf<StoredEvent>>(`/v1/workers/${workerId}/sdk-events?limit=1000`).then((page) => page.items),
    openRequests: (workerId: string) =>
      get<ListResponseOf<StoredEvent<'control_request'>>>(`/v1/workers/${workerId}/control/requests?state=open`).then((page) => page.items),
    decide: (workerId: string, body: Record<string, unknown>) =>
      fetch(`${gatewayUrl}/v1/workers/${workerId}/control`, {
        method: 'POST',
        headers: { authorization: `Bearer ${userToken}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }),
    /** `POST /v1/sessions`, expecting 201. */
    async createSession(body: Record<string, unknown>): Promise<Session> {
      const created = await fetch(`${gatewayUrl}/v1/sessions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${userToken}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (created.status !== 201) throw new Error(`POST /v1/sessions answered ${created.status}: ${await created.text()}`);
      return (await created.json()) as Session;
    },
    /** The worker's one open request, once it is there; on a timeout the error shows the worker's events. */
    async oneOpenRequest(workerId: string): Promise<StoredEvent<'control_request'>> {
      const open = () => get<ListResponseOf<StoredEvent<'control_request'>>>(`/v1/workers/${workerId}/control/requests?state=open`).then((page) => page.items);
      const [request] = await waitFor('the open request', async () => ((await open()).length === 1 ? open() : undefined), 60_000, 100).catch(
        async (err: unknown) => {
          const events = await get<ListResponseOf<StoredEvent>>(`/v1/workers/${workerId}/sdk-events?limit=1000`);
          throw new Error(`${String(err)}\n${JSON.stringify(events.items, null, 1)}`);
        },
      );
      return request!;
    },
  };
}
