import path from 'node:path';
import type { AnyMessage, ContentBlock } from '@agentclientprotocol/sdk';
import { createAcpPermissions } from './acp-permissions.js';
import { AcpSession } from './acp-session.js';
import { AcpToolCalls, createAcpUpdates } from './acp-updates.js';
import { codexProviderArgs } from './codex-provider.js';
import { jsonLine, type Adapter, type AgentEvent, type AgentLaunch, type MessageForAgent } from './adapter.js';

/** A person's message as ACP prompt content: its text, then its images where the agent takes them. */
function promptOf(message: MessageForAgent, takesImages: boolean): ContentBlock[] {
  const images = takesImages ? (message.images ?? []) : [];
  return [
    ...(message.text === '' && images.length > 0 ? [] : [{ type: 'text' as const, text: message.text }]),
    ...images.map((image) => ({ type: 'image' as const, mimeType: image.media_type, data: image.data })),
  ];
}

/**
 * Any agent that speaks the Agent Client Protocol (JSON-RPC over stdio; docs/sidecar.md, "ACP"),
 * through the protocol's own library, the sidecar the client (`acp-session.ts`): `initialize`,
 * `session/new` (or `session/load` of the conversation to resume, where the agent can), the
 * prompt and each person's message as a `session/prompt` (one turn at a time), an interrupt as
 * `session/cancel`. `session/update`s become events (`acp-updates.ts`);
 * `session/request_permission` a `control_request` the permission engine and people decide
 * (`acp-permissions.ts`); it serves `fs/*` (`acp-files.ts`) and `terminal/*` (`acp-terminals.ts`) inside the workspace.
 */
export function createAcpAdapter(): Adapter {
  /** Tags this run's request ids: an agent started again counts its JSON-RPC ids from 0 again. */
  const runTag = Date.now().toString(36);
  const calls = new AcpToolCalls();
  let emitTo: ((event: AgentEvent) => void) | undefined;
  const emit = (event: AgentEvent) => emitTo?.(event);
  let launched: AgentLaunch | undefined;
  const permissions = createAcpPermissions({ emit, calls, runTag });
  const session = new AcpSession({
    emit,
    calls,
    updates: createAcpUpdates(emit, calls),
    permissions,
    cwd: () => launched?.cwd ?? process.cwd(),
  });

  return {
    name: 'acp',
    endsAfterResult: true,
    resumes: true,
    turns: { messageStartsTurn: () => true },
    get takesImages() {
      return session.takesImages();
    },

    launch(launch) {
      launched = launch;
      // Codex's ACP build reads its model provider from its config, as Codex does: it is given the
      // sidecar's model proxy the same way (its config takes no base URL from the environment).
      const provider = path.basename(launch.command).startsWith('codex-acp') ? codexProviderArgs(launch) : [];
      return { command: launch.command, args: [...provider, ...launch.args], stdinLines: [] };
    },

    connect(io) {
      emitTo = io.emit;
      session.connect(io, launched!, runTag);
    },

    parseLine(line, stream) {
      const read = jsonLine(line, stream);
      if ('events' in read) return read.events;
      session.receive(read.object as AnyMessage);
      return [];
    },

    formatDecision(decision, request) {
      const answered = permissions.decide(decision, request);
      return answered && decision.decision === 'deny' && decision.interrupt ? session.cancel() : '';
    },

    formatMessage(message) {
      session.prompt(promptOf(message, session.takesImages()));
      return '';
    },

    formatInterrupt: () => session.cancel(),
  };
}
