import type { IncomingEvent } from '@svc/protocol';

/**
 * The baseline of the store benchmarks: a plain multi-row INSERT into the same `events` table,
 * ids supplied by the caller (no lock, no duplicate check, no transaction of our own).
 */
export function rawInsertSql(rows: number): string {
  const values = Array.from({ length: rows }, (_, r) => `($${r * 6 + 1}, $${r * 6 + 2}, $${r * 6 + 3}, $${r * 6 + 4}, $${r * 6 + 5}, $${r * 6 + 6})`);
  return `INSERT INTO events (worker_id, id, uid, type, ts, data) VALUES ${values.join(', ')}`;
}

export function rawParameters(workerId: string, firstId: number, events: IncomingEvent[]): unknown[] {
  return events.flatMap((e, i) => [workerId, String(firstId + i), e.uid, e.type, e.ts, JSON.stringify(e.data)]);
}

export const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
