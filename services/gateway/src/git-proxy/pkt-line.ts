/**
 * Git's pkt-line framing (gitprotocol-common(5)): four hex digits of length (themselves included),
 * then the data; `0000` is a flush. Only what the git proxy reads and writes of a push.
 */

export const FLUSH = Buffer.from('0000');

/** One pkt-line holding `data`. */
export function pktLine(data: string | Buffer): Buffer {
  const payload = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  return Buffer.concat([Buffer.from((payload.length + 4).toString(16).padStart(4, '0')), payload]);
}

/** A pkt-line read: its data (undefined for a flush) and where the next begins. */
interface ReadLine {
  data: Buffer | undefined;
  next: number;
}

/** Reads the pkt-line at `offset`; undefined when `buffer` does not hold all of it yet. Throws on a malformed length. */
function readPktLine(buffer: Buffer, offset: number): ReadLine | undefined {
  if (buffer.length < offset + 4) return undefined;
  const text = buffer.toString('latin1', offset, offset + 4);
  if (!/^[0-9a-f]{4}$/.test(text)) throw new Error(`not a pkt-line length: ${JSON.stringify(text)}`);
  const length = parseInt(text, 16);
  if (length === 0) return { data: undefined, next: offset + 4 };
  if (length < 4) throw new Error(`a pkt-line length of ${length} is not one a push sends`);
  if (buffer.length < offset + length) return undefined;
  return { data: buffer.subarray(offset + 4, offset + length), next: offset + length };
}

/** One ref a push updates. */
interface PushCommand {
  old: string;
  new: string;
  ref: string;
}

/** What a `git-receive-pack` request says before its pack. */
export interface PushRequestHead {
  commands: PushCommand[];
  /** The capabilities the client asked for (on its first command). */
  capabilities: string[];
  /** Where the pack (or nothing, for deletions only) begins. */
  packOffset: number;
}

/** The most refs one push may update (each is a request someone may have to decide). */
const MAX_PUSHED_REFS = 32;

const COMMAND = /^([0-9a-f]{40}|[0-9a-f]{64}) ([0-9a-f]{40}|[0-9a-f]{64}) (refs\/[^\s\0]+)$/;

/**
 * Reads a push's commands (gitprotocol-pack(5), "Reference Update Request"): `shallow` lines,
 * then `old new ref` lines (the first with `\0` and the capabilities), a flush, and with
 * `push-options` their lines and a flush. Undefined while `buffer` does not hold them all yet; a
 * signed push (`push-cert`) or a line that is none of these throws.
 */
export function readPushRequestHead(buffer: Buffer): PushRequestHead | undefined {
  const commands: PushCommand[] = [];
  let capabilities: string[] = [];
  let offset = 0;
  for (;;) {
    const line = readPktLine(buffer, offset);
    if (!line) return undefined;
    offset = line.next;
    if (line.data === undefined) break;
    let text = line.data.toString('utf8').replace(/\n$/, '');
    if (text.startsWith('shallow ')) continue;
    if (text.startsWith('push-cert')) throw new Error('a signed push (push-cert) is not taken by the git proxy');
    const nul = text.indexOf('\0');
    if (nul >= 0) {
      if (commands.length === 0)
        capabilities = text
          .slice(nul + 1)
          .split(' ')
          .filter(Boolean);
      text = text.slice(0, nul);
    }
    const match = COMMAND.exec(text);
    if (!match) throw new Error(`not a ref update: ${JSON.stringify(text.slice(0, 120))}`);
    commands.push({ old: match[1]!, new: match[2]!, ref: match[3]! });
  }
  if (commands.length === 0) throw new Error('a push that updates no ref');
  if (commands.length > MAX_PUSHED_REFS) throw new Error(`a push of ${commands.length} refs; the git proxy takes at most ${MAX_PUSHED_REFS} in one push`);
  if (capabilities.includes('push-options')) {
    for (;;) {
      const line = readPktLine(buffer, offset);
      if (!line) return undefined;
      offset = line.next;
      if (line.data === undefined) break;
    }
  }
  return { commands, capabilities, packOffset: offset };
}

/**
 * The receive-pack advertisement (`GET info/refs?service=git-receive-pack`) with `no-thin` added
 * to the server's capabilities: the client then sends a pack that holds every object it needs, so
 * the proxy can read the commits and files a push carries without the remote's objects.
 */
export function withNoThin(advertisement: Buffer): Buffer {
  const parts: Buffer[] = [];
  let offset = 0;
  let done = false;
  for (;;) {
    const line = readPktLine(advertisement, offset);
    if (!line) break;
    const raw = advertisement.subarray(offset, line.next);
    offset = line.next;
    const nul = line.data?.indexOf(0) ?? -1;
    if (!done && line.data && nul >= 0) {
      const capabilities = line.data
        .subarray(nul + 1)
        .toString('utf8')
        .replace(/\n$/, '');
      const added = capabilities.split(' ').includes('no-thin') ? capabilities : `${capabilities} no-thin`;
      parts.push(pktLine(Buffer.concat([line.data.subarray(0, nul + 1), Buffer.from(`${added}\n`)])));
      done = true;
    } else parts.push(raw);
  }
  parts.push(advertisement.subarray(offset));
  return Buffer.concat(parts);
}

/**
 * The answer to a refused push (gitprotocol-pack(5), "Report Status"): `unpack ok` and an `ng`
 * line per ref with its reason, which git prints; in side-band 1 when the client asked for
 * side-band, with the reason said on band 2 too (git shows it as `remote: …`).
 */
export function refusedPushReport(head: PushRequestHead, reasons: ReadonlyMap<string, string>, said: string): Buffer {
  const oneLine = (text: string) => text.replace(/[\r\n\0]+/g, ' ').slice(0, 400);
  const report = Buffer.concat([
    pktLine('unpack ok\n'),
    ...head.commands.map((command) => pktLine(`ng ${command.ref} ${oneLine(reasons.get(command.ref) ?? 'not pushed')}\n`)),
    FLUSH,
  ]);
  const sideband = head.capabilities.includes('side-band-64k') || head.capabilities.includes('side-band');
  if (!sideband) return report;
  return Buffer.concat([
    pktLine(Buffer.concat([Buffer.from([2]), Buffer.from(`${oneLine(said)}\n`)])),
    pktLine(Buffer.concat([Buffer.from([1]), report])),
    FLUSH,
  ]);
}
