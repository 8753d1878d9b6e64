import { closeSync, constants, fstatSync, lstatSync, openSync, readFileSync } from 'node:fs';

/** The largest record of its conversation an agent keeps that is read back: past it, what the agent took is not known. */
const AGENT_RECORD_MAX_BYTES = 64 * 1024 * 1024;

/**
 * The lines of a file an agent keeps of its conversation (Claude Code's transcript, Codex's
 * rollout), or undefined when it cannot be read as the agent writes it: its directory not a real
 * one, the file not there, not a regular file (a link, a FIFO, a directory: the sandbox's files
 * are the agent's to play with), or too large.
 */
export function agentRecordLines(directory: string, file: string): string[] | undefined {
  let fd: number | undefined;
  try {
    if (!lstatSync(directory).isDirectory()) return undefined;
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    const stat = fstatSync(fd);
    if (!stat.isFile() || stat.size > AGENT_RECORD_MAX_BYTES) return undefined;
    return readFileSync(fd, 'utf8').split('\n');
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
