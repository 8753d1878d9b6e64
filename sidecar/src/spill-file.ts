import { appendFileSync, closeSync, existsSync, openSync, readSync, renameSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import type { IncomingEvent } from '@svc/protocol';

const READ_CHUNK_BYTES = 1024 * 1024;

/**
 * The outbox's events on disk (`outbox.jsonl`, one JSON event a line), read back in order a chunk
 * at a time. Found at start, it holds what a previous sidecar could not send.
 */
export class SpillFile {
  /** Bytes already read back. */
  private readOffset = 0;
  private spilledBytes: number;

  constructor(readonly path: string) {
    this.spilledBytes = existsSync(path) ? statSync(path).size : 0;
  }

  /** Events are on disk that have not been read back. */
  get waiting(): boolean {
    return this.spilledBytes > this.readOffset;
  }

  get bytesWaiting(): number {
    return this.spilledBytes - this.readOffset;
  }

  append(event: IncomingEvent): void {
    const line = `${JSON.stringify(event)}\n`;
    appendFileSync(this.path, line);
    this.spilledBytes += Buffer.byteLength(line);
  }

  /** The next events on disk, in order (none while only part of a line is there); the file is emptied once all are read. */
  readNext(): IncomingEvent[] {
    const events: IncomingEvent[] = [];
    const fd = openSync(this.path, 'r');
    try {
      const chunk = Buffer.alloc(Math.min(READ_CHUNK_BYTES, this.bytesWaiting));
      const read = readSync(fd, chunk, 0, chunk.length, this.readOffset);
      const lastNewline = chunk.lastIndexOf(10, read - 1);
      if (lastNewline < 0) return events;
      for (const line of chunk.subarray(0, lastNewline).toString('utf8').split('\n')) {
        if (line.trim() !== '') events.push(JSON.parse(line) as IncomingEvent);
      }
      this.readOffset += lastNewline + 1;
    } finally {
      closeSync(fd);
    }
    if (this.readOffset >= this.spilledBytes) {
      truncateSync(this.path, 0);
      this.readOffset = 0;
      this.spilledBytes = 0;
    }
    return events;
  }

  /** Rewrites the file as `first`, then the part not read back yet (atomically: written aside, then renamed). */
  rewrite(first: readonly IncomingEvent[]): void {
    let rest = Buffer.alloc(0);
    if (this.waiting) {
      const fd = openSync(this.path, 'r');
      try {
        rest = Buffer.alloc(this.bytesWaiting);
        readSync(fd, rest, 0, rest.length, this.readOffset);
      } finally {
        closeSync(fd);
      }
    }
    const temporary = `${this.path}.tmp`;
    writeFileSync(temporary, Buffer.concat([Buffer.from(first.map((event) => `${JSON.stringify(event)}\n`).join('')), rest]));
    renameSync(temporary, this.path);
  }
}
