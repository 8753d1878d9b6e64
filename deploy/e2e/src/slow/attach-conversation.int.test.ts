import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { EventData, ListResponseOf, Session, StoredEvent } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { fastDemoConversation, writeOneShotDemo } from '../built-in-templates.js';
import { SVC, svcIn } from '../svc-binary.js';
import { startStack, type E2eStack } from '../stack.js';
import { openTerminal, type Terminal } from '../tmux.js';

describe('svc and a conversation: attach in a real terminal (tmux), send and interrupt in a script, against the stack', () => {
  let stack: E2eStack;
  let env: Record<string, string>;
  let stateDir: string;
  const terminals: Terminal[] = [];

  beforeAll(async () => {
    stateDir = await mkdtemp(path.join(tmpdir(), 'svc-e2e-attach-talk-'));
    await writeFile(path.join(stateDir, 'demo-talk.toml'), fastDemoConversation());
    await writeOneShotDemo(stateDir);
    stack = await startStack({ ingestReplicas: 1, sessionEnv: { SVC_TEMPLATES_DIR: stateDir } });
    env = { SVC_URL: stack.gatewayUrl, SVC_TOKEN: await stack.userToken('e2e-talk'), SVC_CONFIG: path.join(stateDir, 'config.json') };
  }, 120_000);
  afterEach(async () => {
    for (const terminal of terminals.splice(0)) await terminal.close();
  });
  afterAll(async () => {
    await stack?.stop();
    if (stateDir) await rm(stateDir, { recursive: true, force: true });
  });

  const svc = svcIn(() => env);
  const createSession = async (template: string) => {
    const created = await svc('sessions', 'create', '--template', template, '--wait', '--json');
    expect(created.code, created.stderr).toBe(0);
    return JSON.parse(created.stdout) as Session;
  };
  const eventsOf = async (workerId: string) => {
    const response = await fetch(`${stack.gatewayUrl}/v1/workers/${workerId}/sdk-events?limit=1000`, {
      headers: { authorization: `Bearer ${env['SVC_TOKEN']}` },
    });
    return ((await response.json()) as ListResponseOf<StoredEvent>).items;
  };
  const systemOf = (events: StoredEvent[], subtype: string) =>
    events.filter((e) => e.type === 'system' && (e.data as EventData<'system'>).subtype === subtype) as Array<StoredEvent<'system'>>;
  const answers = async (workerId: string) =>
    (await eventsOf(workerId)).filter((e) => e.type === 'result').map((e) => (e.data as EventData<'result'>).text ?? '');

  it("attach a conversation: m opens the composer, the message typed (y and q in it are text), Enter: the agent's answer on screen; x interrupts the turn", async () => {
    const session = await createSession('demo-talk');
    const terminal = await openTerminal({ name: 'talk', command: [process.execPath, SVC, 'attach', session.worker_id], env });
    terminals.push(terminal);
    const first = await terminal.waitForText('✔ turn complete', 30_000);
    expect(first).toContain('m message · x interrupt');

    await terminal.keys('m');
    await terminal.waitForText('enter send · esc cancel');
    await terminal.keys('-l', 'yes, quit now');
    await terminal.waitForText('message › yes, quit now');
    await terminal.keys('Enter');
    const answered = await terminal.waitForText('You said: "yes, quit now"', 30_000);
    expect(answered).not.toContain('message ›');
    const [asked] = systemOf(await eventsOf(session.worker_id), 'person_message');
    expect(asked).toMatchObject({ source: 'user:cli:e2e-talk', data: { message: 'yes, quit now' } });
    expect(asked!.data.details?.['client_message_id']).toMatch(/^[A-Za-z0-9._:-]+$/);

    await terminal.keys('x');
    const interrupt = await waitFor(
      'the interrupt in the history',
      async () => systemOf(await eventsOf(session.worker_id), 'person_interrupt')[0],
      30_000,
      100,
    );
    expect(interrupt.source).toBe('user:cli:e2e-talk');
    await terminal.waitForText("Interrupt: end the agent's current turn.");
    // Out of the composer, q is the quit key again; the worker keeps running.
    await terminal.keys('q');
    await waitFor('q to quit the attach', () => terminal.exited(), 5_000);
    expect(JSON.parse((await svc('sessions', 'get', session.id, '--json')).stdout)).toMatchObject({ status: 'running' });
    await svc('sessions', 'delete', session.id);
  }, 120_000);

  it('svc send and svc interrupt --json in a script: the message answered (sent again with its id, stored once), the interrupt in the history; a one-shot worker refuses a message', async () => {
    const session = await createSession('demo-talk');
    await waitFor('the first turn ended', async () => (await answers(session.worker_id)).length === 1, 30_000, 100);
    const sent = await svc('send', session.worker_id, 'what', 'now?', '--id', 'script-1', '--json');
    expect(sent.code, sent.stderr).toBe(0);
    const message = JSON.parse(sent.stdout) as { message_id: string };
    expect(message).toEqual({ message_id: expect.any(String) as unknown as string, worker_id: session.worker_id, client_message_id: 'script-1' });
    const again = await svc('send', session.worker_id, 'what', 'now?', '--id', 'script-1', '--json');
    expect(JSON.parse(again.stdout)).toEqual(message);
    await waitFor('the answer', async () => (await answers(session.worker_id)).length === 2, 30_000, 100);
    expect((await answers(session.worker_id))[1]).toContain('You said: "what now?"');
    expect(systemOf(await eventsOf(session.worker_id), 'person_message')).toHaveLength(1);

    const interrupted = await svc('interrupt', session.worker_id, '--json');
    expect(interrupted.code, interrupted.stderr).toBe(0);
    const interrupt = JSON.parse(interrupted.stdout) as { interrupt_id: string; worker_id: string };
    expect(interrupt.worker_id).toBe(session.worker_id);
    const [stored] = systemOf(await eventsOf(session.worker_id), 'person_interrupt');
    expect(stored).toMatchObject({ source: 'user:cli:e2e-talk', data: { details: { interrupt_id: interrupt.interrupt_id } } });
    await svc('sessions', 'delete', session.id);

    const oneShot = await createSession('demo-once');
    const refused = await svc('send', oneShot.worker_id, 'hello?');
    expect(refused).toMatchObject({ code: 1, stderr: expect.stringMatching(/^error: .* \(not_conversational\)\n$/) as unknown as string });
    await svc('sessions', 'delete', oneShot.id);
  }, 120_000);
});
