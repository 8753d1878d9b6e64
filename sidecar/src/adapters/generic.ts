import type { Adapter, AgentEvent, AgentLaunch, AgentStream, LaunchPlan } from './adapter.js';

/**
 * Any program: each line of stdout and stderr becomes a `system` event (stderr at level `warn`),
 * marked with its stream. The agent cannot ask for permission, so decisions have no bytes; a
 * person's message is written to its stdin as it is.
 */
export const genericAdapter: Adapter = {
  name: 'generic',
  endsAfterResult: false,
  interruptsBySignal: true,
  launch(launch: AgentLaunch): LaunchPlan {
    return { command: launch.command, args: [...launch.args], stdinLines: launch.prompt === undefined ? [] : [launch.prompt] };
  },
  parseLine(line: string, stream: AgentStream): AgentEvent[] {
    return [{ type: 'system', data: { level: stream === 'stderr' ? 'warn' : 'info', message: line, stream } }];
  },
  formatDecision(): string {
    return '';
  },
  /** The text and a newline: a line-reading agent reads a message as its lines. */
  formatMessage({ text }): string {
    return `${text}\n`;
  },
};
