import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { text as readAll } from 'node:stream/consumers';
import type { PostMessageBodyType } from '@svc/protocol';
import { createApi } from '../api.js';
import { interruptTurn, sendMessage } from '../conversation-api.js';
import { CliError, EXIT } from '../exit-codes.js';
import { printJson } from '../output.js';
import { resolveConnection } from '../settings.js';
import { CONNECTION_HELP, connectionFlags, type Command } from './command.js';

const sendFlags = {
  ...connectionFlags,
  json: { type: 'boolean', default: false },
  image: { type: 'string', isMultiple: true },
  id: { type: 'string' },
} as const;

/** The image kinds a message takes, by file extension. */
type MessageImage = NonNullable<PostMessageBodyType['images']>[number];
const IMAGE_TYPES: Record<string, MessageImage['media_type']> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
};

async function imageOf(file: string): Promise<MessageImage> {
  const mediaType = IMAGE_TYPES[path.extname(file).toLowerCase()];
  if (!mediaType) throw new CliError(`--image takes a PNG, JPEG, GIF or WebP file; "${file}" is none of these by its name`, EXIT.usage);
  const bytes = await readFile(file).catch((err: NodeJS.ErrnoException) => {
    throw new CliError(`cannot read --image ${file}: ${err.code ?? err.message}`, EXIT.usage);
  });
  return { media_type: mediaType, data: bytes.toString('base64') };
}

/** `svc send <worker> [text]`: a message to a worker's agent (docs/conversations.md). */
export const sendCommand: Command<typeof sendFlags> = {
  name: 'send',
  summary: "send a message to a worker's agent",
  help: `  svc send <worker-id> [text …] [--image <file> …] [--id <client-message-id>]

With no text, the message is read from stdin (a script's output, a file).

Flags
  --image <file>   attach a PNG, JPEG, GIF or WebP (repeatable)
  --id <id>        your own id for the message: sent again, it is stored once
  --json           print the API's JSON
${CONNECTION_HELP}

Examples
  $ svc send wrk_AbC123 "now run the tests"
  $ git diff | svc send wrk_AbC123 --id review-1
  $ svc send wrk_AbC123 "what is wrong here?" --image screenshot.png --json`,
  flags: sendFlags,
  async run(cli) {
    const [workerId, ...words] = cli.input.slice(1);
    if (!workerId) throw new CliError('svc send needs a worker id (svc sessions list shows them)', EXIT.usage);
    const text = words.length > 0 ? words.join(' ') : (await readAll(process.stdin)).replace(/\n$/, '');
    const images = await Promise.all((cli.flags.image ?? []).map(imageOf));
    const api = createApi(await resolveConnection(cli.flags));
    const sent = await sendMessage(api, workerId, {
      text,
      ...(images.length > 0 ? { images } : {}),
      ...(cli.flags.id !== undefined ? { client_message_id: cli.flags.id } : {}),
    });
    if (cli.flags.json) printJson(sent);
    else process.stdout.write(`sent ${sent.message_id} to ${sent.worker_id}\n`);
    return EXIT.ok;
  },
};

const interruptFlags = { ...connectionFlags, json: { type: 'boolean', default: false } } as const;

/** `svc interrupt <worker>`: ends the agent's current turn, not the worker. */
export const interruptCommand: Command<typeof interruptFlags> = {
  name: 'interrupt',
  summary: "end a worker's current turn (the worker stays)",
  help: `  svc interrupt <worker-id>

Flags
  --json           print the API's JSON
${CONNECTION_HELP}

Examples
  $ svc interrupt wrk_AbC123
  $ svc interrupt wrk_AbC123 --json`,
  flags: interruptFlags,
  async run(cli) {
    const [workerId] = cli.input.slice(1);
    if (!workerId) throw new CliError('svc interrupt needs a worker id (svc sessions list shows them)', EXIT.usage);
    const api = createApi(await resolveConnection(cli.flags));
    const sent = await interruptTurn(api, workerId);
    if (cli.flags.json) printJson(sent);
    else process.stdout.write(`interrupt ${sent.interrupt_id} sent to ${sent.worker_id}\n`);
    return EXIT.ok;
  },
};
