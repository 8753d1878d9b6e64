import type { WorkerActivity } from '@svc/protocol';

/** How many lines of a tool's result the history shows (SPEC "Limits"). */
const TOOL_RESULT_LINES = 3;

const FILE_TOOLS = new Set(['Read', 'Write', 'Edit', 'MultiEdit', 'NotebookEdit']);

/** One line that says what a tool call does: the command, the file, the pattern, else compact JSON. */
export function summarizeInput(tool: string, input: Record<string, unknown>, width = 100): string {
  let text: string;
  if (typeof input['command'] === 'string') text = input['command'];
  else if (FILE_TOOLS.has(tool) && typeof input['file_path'] === 'string') text = input['file_path'];
  else if (typeof input['pattern'] === 'string') text = `${input['pattern']}${typeof input['path'] === 'string' ? ` in ${input['path']}` : ''}`;
  else if (typeof input['url'] === 'string') text = input['url'];
  else text = JSON.stringify(input);
  const oneLine = text.replace(/\s*\n\s*/g, ' ⏎ ');
  return oneLine.length > width ? `${oneLine.slice(0, width - 1)}…` : oneLine;
}

/** The first lines of a result, and how many more there are. */
export function firstLines(content: string, count = TOOL_RESULT_LINES): { lines: string[]; more: number } {
  const all = content.replace(/\n+$/, '').split('\n');
  return { lines: all.slice(0, count), more: Math.max(0, all.length - count) };
}

export function formatCost(usd: number): string {
  return `$${usd.toFixed(usd < 1 ? 4 : 2)}`;
}

export function formatCount(n: number): string {
  return n.toLocaleString('en-US');
}

const ACTIVITY_TEXT: Record<WorkerActivity, string> = {
  working: 'working',
  waiting_for_decision: 'waiting for a decision',
  idle: 'idle: waiting for a message',
  suspended: 'suspended: a message resumes it',
};

/** The agent's activity for a person to read (the status bar, the console's badge). */
export function activityText(activity: WorkerActivity): string {
  return ACTIVITY_TEXT[activity];
}
