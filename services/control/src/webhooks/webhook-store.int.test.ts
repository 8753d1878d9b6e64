import { describe, expect, it } from 'vitest';
import { WEBHOOK_ATTEMPT_INTERRUPTED } from '@svc/protocol';
import { migrateToLatest, openDatabase } from '@svc/store';
import { createWebhookStore } from './webhook-store.js';

describe('webhook attempts — every try listed, even one cut short', () => {
  it('a try is listed as interrupted from before it is made, and with its outcome once it has one', async () => {
    const database = await openDatabase({});
    try {
      await migrateToLatest(database.db, 'control');
      const webhooks = createWebhookStore(database.db);
      await webhooks.create('wh_1', { owner: 'someone', groups: [] }, { url: 'http://127.0.0.1:1/hook', kinds: ['worker.ended'] }, 'secret');
      const tried = { webhook_id: 'wh_1', message_id: 'msg_1', kind: 'worker.ended' as const, at: new Date().toISOString() };
      const first = await webhooks.startAttempt({ ...tried, attempt: 1 });
      // The service dies here: the try stays, saying so.
      await webhooks.startAttempt({ ...tried, attempt: 2 }).then((second) => webhooks.finishAttempt(second, { status: 200, error: null, delivered: true }));
      expect((await webhooks.attempts('wh_1')).map(({ attempt, status, error, delivered }) => ({ attempt, status, error, delivered }))).toEqual([
        { attempt: 1, status: null, error: WEBHOOK_ATTEMPT_INTERRUPTED, delivered: false },
        { attempt: 2, status: 200, error: null, delivered: true },
      ]);
      expect(first).toMatch(/^\d+$/);
    } finally {
      await database.close();
    }
  });

  it("an answered try is listed by its status alone: an answer's text stored before issue 34 is not shown", async () => {
    const database = await openDatabase({});
    try {
      await migrateToLatest(database.db, 'control');
      const webhooks = createWebhookStore(database.db);
      await webhooks.create('wh_2', { owner: 'someone', groups: [] }, { url: 'https://hooks.example.com/x', kinds: ['worker.ended'] }, 'secret');
      const tried = { webhook_id: 'wh_2', message_id: 'msg_2', kind: 'worker.ended' as const, at: new Date().toISOString() };
      // As the delivering service wrote it until issue 34: the first 200 characters of the answer.
      await webhooks
        .startAttempt({ ...tried, attempt: 1 })
        .then((seq) => webhooks.finishAttempt(seq, { status: 500, error: 'root:x:0:0:root', delivered: false }));
      await webhooks
        .startAttempt({ ...tried, attempt: 2 })
        .then((seq) => webhooks.finishAttempt(seq, { status: null, error: 'not sent: 127.0.0.1 is a loopback address', delivered: false }));
      expect((await webhooks.attempts('wh_2')).map(({ attempt, status, error }) => ({ attempt, status, error }))).toEqual([
        { attempt: 1, status: 500, error: null },
        { attempt: 2, status: null, error: 'not sent: 127.0.0.1 is a loopback address' },
      ]);
    } finally {
      await database.close();
    }
  });
});
