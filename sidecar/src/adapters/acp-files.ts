import { constants } from 'node:fs';
import { mkdir, open, realpath, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import {
  RequestError,
  type ReadTextFileRequest,
  type ReadTextFileResponse,
  type WriteTextFileRequest,
  type WriteTextFileResponse,
} from '@agentclientprotocol/sdk';

/** The most of a file `fs/read_text_file` reads, and `fs/write_text_file` writes. */
const ACP_FILE_MAX_BYTES = 16 * 1024 * 1024;

/** The directory itself if it exists, else its nearest ancestor that does. */
async function nearestExisting(directory: string): Promise<string> {
  for (let at = directory; ; at = path.dirname(at)) {
    if (
      await realpath(at).then(
        () => true,
        () => false,
      )
    )
      return at;
    if (path.dirname(at) === at) return at;
  }
}

/** Whether `inner` is `root` or below it. */
const within = (root: string, inner: string) => inner === root || inner.startsWith(`${root}${path.sep}`);

/**
 * The client's file system for an ACP agent (`fs/read_text_file`, `fs/write_text_file`), inside
 * the workspace only: a path must be absolute and, links resolved, within the workspace's root;
 * a link as the file itself is not followed. A file that is not there reads as empty. A write to
 * a file no allowed call of this turn names is asked like a tool call first (`ask`: the
 * permission engine, or a person).
 */
export function createAcpFiles(options: {
  /** The workspace's root (the agent's working directory). */
  root(): string;
  ask(file: string): Promise<boolean>;
}) {
  /** The file's path, checked to be in the workspace (its directory resolved, links and all); a JSON-RPC error otherwise. */
  async function placeOf(file: string): Promise<string> {
    if (typeof file !== 'string' || !path.isAbsolute(file)) throw RequestError.invalidParams(undefined, `${JSON.stringify(file)} is not an absolute path`);
    const root = await realpath(options.root());
    const wanted = path.resolve(file);
    if (!within(root, wanted)) throw RequestError.invalidParams(undefined, `${wanted} is outside the workspace (${root}): svc serves files inside it only`);
    const directory = await realpath(path.dirname(wanted)).catch(() => undefined);
    if (directory !== undefined && !within(root, directory))
      throw RequestError.invalidParams(undefined, `${wanted} leads outside the workspace (${root}) through a link`);
    return wanted;
  }

  /** The opened file is where it was checked to be (its real path now, whatever a link race did), a regular file, and no hard link to elsewhere. */
  async function checkOpened(handle: FileHandle, file: string): Promise<void> {
    const root = await realpath(options.root());
    const opened = await realpath(`/proc/self/fd/${handle.fd}`).catch(() => file);
    if (!within(root, opened)) throw RequestError.invalidParams(undefined, `${file} leads outside the workspace (${root})`);
    const stat = await handle.stat();
    if (!stat.isFile()) throw RequestError.invalidParams(undefined, `${file} is not a regular file`);
    if (stat.nlink > 1) throw RequestError.invalidParams(undefined, `${file} has other names (hard links): svc serves a file with one name only`);
  }

  /** At most `ACP_FILE_MAX_BYTES`, however the file grows while it is read. */
  async function readBounded(handle: FileHandle, file: string): Promise<string> {
    const buffer = Buffer.alloc(ACP_FILE_MAX_BYTES + 1);
    let length = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length > ACP_FILE_MAX_BYTES) throw RequestError.invalidParams(undefined, `${file} is larger than ${ACP_FILE_MAX_BYTES} bytes`);
    }
    return buffer.subarray(0, length).toString('utf8');
  }

  return {
    async read(params: ReadTextFileRequest): Promise<ReadTextFileResponse> {
      const file = await placeOf(params.path);
      const handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch((err: NodeJS.ErrnoException) => {
        // A file not there yet reads as empty: Gemini CLI takes an error here for an unreadable
        // file and then writes it without asking (research notes: its write_file's check).
        if (err.code === 'ENOENT') return undefined;
        throw RequestError.resourceNotFound(`${file}: ${err.code ?? err.message}`);
      });
      if (!handle) return { content: '' };
      try {
        await checkOpened(handle, file);
        const text = await readBounded(handle, file);
        const from = Math.max(1, params.line ?? 1) - 1;
        if (from === 0 && params.limit == null) return { content: text };
        const lines = text.split('\n');
        return { content: lines.slice(from, params.limit == null ? undefined : from + Math.max(0, params.limit)).join('\n') };
      } finally {
        await handle.close();
      }
    },

    async write(params: WriteTextFileRequest, allowed: (file: string) => boolean): Promise<WriteTextFileResponse> {
      const file = await placeOf(params.path);
      if (Buffer.byteLength(params.content) > ACP_FILE_MAX_BYTES)
        throw RequestError.invalidParams(undefined, `the content is larger than ${ACP_FILE_MAX_BYTES} bytes`);
      if (!allowed(file) && !(await options.ask(file))) throw new RequestError(-32000, `writing ${file} was refused by svc's permission decision`);
      // Its directories made only below what is checked to be inside (a link higher up is not followed out).
      const root = await realpath(options.root());
      if (!within(root, await realpath(await nearestExisting(path.dirname(file)))))
        throw RequestError.invalidParams(undefined, `${file} leads outside the workspace (${root}) through a link`);
      await mkdir(path.dirname(file), { recursive: true });
      // Re-checked after the wait for the decision: the agent may have put a link in its place meanwhile.
      await placeOf(file);
      const handle = await open(file, constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o644);
      try {
        // Emptied only once the opened file is known to be the one checked.
        await checkOpened(handle, file);
        await handle.truncate(0);
        await handle.writeFile(params.content);
      } finally {
        await handle.close();
      }
      return {};
    },
  };
}
