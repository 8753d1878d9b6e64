import { WEBHOOK_ATTEMPT_INTERRUPTED, type CreateWebhookRequestType, type Webhook, type WebhookAttempt, type WebhookKind } from '@svc/protocol';
import {
  sql,
  type Database,
  type Expression,
  type ExpressionBuilder,
  type Kysely,
  type Selectable,
  type SqlBool,
  type WebhookAttemptsTable,
  type WebhooksTable,
} from '@svc/store';

/** Attempts listed per subscription, newest last; older ones are still stored. */
const ATTEMPTS_LISTED = 1000;

/** A subscription as the delivery needs it: with its secret. */
export interface WebhookWithSecret extends Webhook {
  secret: string;
}

function toWebhook(row: Selectable<WebhooksTable>): WebhookWithSecret {
  return {
    id: row.id,
    owner: row.owner,
    url: row.url,
    kinds: row.kinds as WebhookKind[],
    format: row.format as Webhook['format'],
    scope: row.scope as Webhook['scope'],
    created_at: row.created_at.toISOString(),
    disabled_at: row.disabled_at?.toISOString() ?? null,
    disabled_reason: row.disabled_reason,
    secret: row.secret,
  };
}

function toAttempt(row: Selectable<WebhookAttemptsTable>): WebhookAttempt {
  return {
    webhook_id: row.webhook_id,
    message_id: row.message_id,
    kind: row.kind as WebhookKind,
    attempt: row.attempt,
    at: row.at.toISOString(),
    status: row.status,
    // A try the receiver answered is told by its status alone: rows written before issue 34 kept
    // the first 200 characters of the answer here, which are never shown.
    error: row.status === null ? row.error : null,
    delivered: row.delivered,
  };
}

/** Without the secret: what the API shows after creation. */
export function publicWebhook({ secret: _secret, ...webhook }: WebhookWithSecret): Webhook {
  return webhook;
}

/** Whose subscriptions hear of a worker's fact: its owner's, or a routed request's deciders' (a `user:` named, or a creator then in a `group:` named). */
function toldOf(eb: ExpressionBuilder<Database, 'webhooks'>, owner: string, deciders: readonly string[] | undefined): Array<Expression<SqlBool>> {
  if (deciders === undefined) return [eb('owner', '=', owner)];
  const named = (kind: 'user' | 'group') =>
    deciders.filter((principal) => principal.startsWith(`${kind}:`)).map((principal) => principal.slice(kind.length + 1));
  const [users, groups] = [named('user'), named('group')];
  return [...(users.length > 0 ? [eb('owner', 'in', users)] : []), ...(groups.length > 0 ? [sql<SqlBool>`owner_groups ?| ${sql.val(groups)}::text[]`] : [])];
}

/** Webhook subscriptions and their delivery attempts: the `webhooks` and `webhook_attempts` tables (docs/webhooks.md). */
export function createWebhookStore(db: Kysely<Database>) {
  return {
    async create(
      id: string,
      owner: { owner: string; groups: readonly string[] },
      request: CreateWebhookRequestType,
      secret: string,
    ): Promise<WebhookWithSecret> {
      const row = await db
        .insertInto('webhooks')
        .values({
          id,
          owner: owner.owner,
          owner_groups: JSON.stringify(owner.groups),
          url: request.url,
          kinds: JSON.stringify(request.kinds),
          format: request.format ?? 'standard',
          scope: request.scope ?? 'own',
          secret,
          created_at: new Date(),
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      return toWebhook(row);
    },
    /** `owner` undefined: all of them. */
    async list(owner: string | undefined): Promise<WebhookWithSecret[]> {
      let query = db.selectFrom('webhooks').selectAll().orderBy('created_at');
      if (owner !== undefined) query = query.where('owner', '=', owner);
      return (await query.execute()).map(toWebhook);
    },
    async get(id: string): Promise<WebhookWithSecret | undefined> {
      const row = await db.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirst();
      return row && toWebhook(row);
    },
    /** Deletes it and its attempts; false when there was none. */
    async delete(id: string): Promise<boolean> {
      const result = await db.deleteFrom('webhooks').where('id', '=', id).executeTakeFirst();
      return result.numDeletedRows > 0n;
    },
    /**
     * The subscriptions told of `kind` for a worker of `owner`, enabled ones only; for a routed
     * request (`deciders`, docs/teams.md), those of the people it is routed to instead: made by a
     * `user:` it names, or by someone then in a `group:` it names. Admins' `all` always.
     */
    async subscribersOf(kind: WebhookKind, owner: string, deciders?: readonly string[]): Promise<WebhookWithSecret[]> {
      const rows = await db
        .selectFrom('webhooks')
        .selectAll()
        .where('disabled_at', 'is', null)
        .where((eb) => eb.or([eb('scope', '=', 'all'), ...toldOf(eb, owner, deciders)]))
        .execute();
      return rows.map(toWebhook).filter((webhook) => webhook.kinds.includes(kind));
    },
    /** Stops deliveries to it, saying why (kept, listed, until its owner deletes it). */
    async disable(id: string, reason: string): Promise<void> {
      await db
        .updateTable('webhooks')
        .set({ disabled_at: new Date(), disabled_reason: reason })
        .where('id', '=', id)
        .where('disabled_at', 'is', null)
        .execute();
    },
    /**
     * Records a try before it is made, as interrupted (what it stays if the service stops before
     * `finishAttempt`: every try is listed, even one cut short); returns its key.
     */
    async startAttempt(attempt: Omit<WebhookAttempt, 'status' | 'error' | 'delivered'>): Promise<string> {
      const row = await db
        .insertInto('webhook_attempts')
        .values({ ...attempt, at: new Date(attempt.at), status: null, error: WEBHOOK_ATTEMPT_INTERRUPTED, delivered: false })
        .returning('seq')
        .executeTakeFirstOrThrow();
      return String(row.seq);
    },
    /** The try's outcome: the receiver's status, or why there was none (never the receiver's body). */
    async finishAttempt(seq: string, outcome: Pick<WebhookAttempt, 'status' | 'error' | 'delivered'>): Promise<void> {
      await db.updateTable('webhook_attempts').set(outcome).where('seq', '=', seq).execute();
    },
    async attempts(webhookId: string): Promise<WebhookAttempt[]> {
      const rows = await db
        .selectFrom('webhook_attempts')
        .selectAll()
        .where('webhook_id', '=', webhookId)
        .orderBy('seq', 'desc')
        .limit(ATTEMPTS_LISTED)
        .execute();
      return rows.reverse().map(toAttempt);
    },
  };
}

export type WebhookStore = ReturnType<typeof createWebhookStore>;
