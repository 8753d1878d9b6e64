import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { readPublishedAuditHeads, serveRpc, type NatsConnection } from '@svc/bus';
import {
  actionHash,
  AuditFactsSchema,
  createChecker,
  decidedByOf,
  importAuditKey,
  ListAuditRpc,
  subjects,
  verifyAuditChain,
  VerifyAuditRpc,
  type AuditChannel,
  type AuditFacts,
  type AuditKey,
  type AuditRecord,
  type AuditVerification,
  type ListAuditRpcType,
  type ListResponseOf,
  type StoredEvent,
} from '@svc/protocol';
import type { ConfigOf, Logger } from '@svc/service-kit';
import type { Database, Kysely } from '@svc/store';
import { startHeadPublisher } from './audit-heads.js';
import { AuditKeyRequiredError, createAuditLog, type AuditLog } from './audit-log.js';
import type { auditSettings } from './config.js';

/** Appending a fact is tried this often before it is given up (and logged as lost). */
const ATTEMPTS = 5;
const RETRY_MS = 500;

/**
 * What the control service writes to the audit trail (docs/audit.md): every decision (a person's,
 * with the channel they came through; the deadline's; the sidecar rules'), every rule a person
 * added with "always", and what other services report (sessions started and stopped).
 */
function createAuditRecorder(log: AuditLog, logger: Logger) {
  const logs = logger.child({ component: 'audit' });

  async function append(facts: AuditFacts): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await log.append(facts);
        return;
      } catch (err) {
        if (attempt >= ATTEMPTS) {
          logs.error({ err, audit_id: facts.id }, 'an audit record could not be written');
          throw err;
        }
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS * attempt));
      }
    }
  }

  return {
    append,

    /** A stored decision on `request`: the decision, and the rule it added with "always". */
    async decision(request: StoredEvent<'control_request'>, decision: StoredEvent<'control_response'>, channel: AuditChannel): Promise<void> {
      const { tool_name: toolName, input } = request.data;
      const { data } = decision;
      const common = {
        at: decision.ts,
        actor: decidedByOf(decision),
        channel,
        worker_id: decision.worker_id,
        request_id: data.request_id,
        decision: data.decision,
        action_hash: await actionHash(toolName, input),
      };
      await append({
        id: `decision:${decision.worker_id}:${data.request_id}`,
        action: 'decision',
        ...common,
        details: { tool_name: toolName, ...(data.scope ? { scope: data.scope } : {}), ...(data.message ? { message: data.message } : {}) },
      });
      if (data.scope === 'always')
        await append({
          id: `rule:${decision.worker_id}:${data.request_id}`,
          action: 'rule_added',
          ...common,
          details: {
            tool_name: toolName,
            ...(data.input_pattern ? { input_pattern: data.input_pattern } : {}),
            ...(data.rule_scope ? { rule_scope: data.rule_scope, rule_key: data.rule_key } : {}),
          },
        });
    },
  };
}

export type AuditRecorder = ReturnType<typeof createAuditRecorder>;

export interface AuditTrailDeps {
  nc: NatsConnection;
  db: Kysely<Database>;
  logger: Logger;
  instance: string;
  config: ConfigOf<typeof auditSettings>;
  /** The queue group of the control replicas' RPCs. */
  queue: string;
}

export interface AuditTrail {
  /** Where decisions and reported facts are written. */
  recorder: AuditRecorder;
  /** Publishes the head a last time and stops answering. */
  stop(): Promise<void>;
}

/**
 * The control service's audit trail (docs/audit.md): the log, sealed with `SVC_AUDIT_KEY`; its
 * head published to JetStream; the RPCs that append (`audit.append`), list (`audit.list`) and
 * check it (`audit.verify`: the service that holds the key checks every record and every
 * published head, and fails when there is no head to check against). A trail already keyed does
 * not start without a key: the records it would add could not be told from a rewrite.
 */
export async function startAuditTrail(deps: AuditTrailDeps): Promise<AuditTrail> {
  const logs = deps.logger.child({ component: 'audit' });
  const key = deps.config.auditKey === undefined ? undefined : await importAuditKey(deps.config.auditKey);
  const keys: AuditKey[] = [...(key ? [key] : []), ...(await Promise.all(deps.config.auditPreviousKeys.map(importAuditKey)))];
  const log = createAuditLog(deps.db, { key });
  const end = await log.end();
  if (!key && end?.key_id)
    throw new AuditKeyRequiredError(
      `the audit trail is keyed (record #${end.seq}, key ${end.key_id}) but SVC_AUDIT_KEY is not set: set the key it was written with (docs/audit.md)`,
    );
  if (!key)
    logs.warn(
      "SVC_AUDIT_KEY is not set: audit records are written without a key, and whoever holds the database's password can rewrite them unseen (docs/audit.md)",
    );
  else if (end?.key_id && !keys.some((known) => known.id === end.key_id))
    logs.error(
      { key_id: key.id, last_key_id: end.key_id },
      'SVC_AUDIT_KEY is not the key the audit trail was last written with, nor one of SVC_AUDIT_PREVIOUS_KEYS: the records sealed with that key will not verify (docs/audit.md)',
    );

  const recorder = createAuditRecorder(log, deps.logger);
  const heads = startHeadPublisher({ nc: deps.nc, log, instance: deps.instance, intervalMs: deps.config.auditHeadIntervalS * 1000, logger: deps.logger });
  const options = { logger: deps.logger, queue: deps.queue };
  /**
   * The heads, read before the chain: every one published so far is at or before the chain's end
   * as read after. A trail with records and no head yet (its first interval, or a publish that
   * failed) gets its head published first, what the next interval would do: a missing stream
   * is not made again here (that would hide that it was deleted), and stays a failure.
   */
  async function headsToVerifyAgainst() {
    const published = await readPublishedAuditHeads(deps.nc);
    if (published === 'missing' || published.length > 0 || !(await log.end())) return published;
    await heads.publishNow();
    return readPublishedAuditHeads(deps.nc);
  }
  const rpcs = [
    serveRpc<AuditFacts, { recorded: true }>(
      deps.nc,
      subjects.rpc.appendAudit,
      async (facts) => {
        await recorder.append(facts);
        return { recorded: true };
      },
      { ...options, checker: createChecker(AuditFactsSchema) },
    ),
    serveRpc<ListAuditRpcType, ListResponseOf<AuditRecord>>(deps.nc, subjects.rpc.listAudit, (query) => log.list(query), {
      ...options,
      checker: createChecker(ListAuditRpc),
    }),
    serveRpc<Record<string, never>, AuditVerification>(
      deps.nc,
      subjects.rpc.verifyAudit,
      async () => verifyAuditChain(log.chain(), { keys, heads: await headsToVerifyAgainst() }),
      { ...options, checker: createChecker(VerifyAuditRpc) },
    ),
  ];
  return {
    recorder,
    async stop() {
      for (const rpc of rpcs) rpc.unsubscribe();
      await heads.stop();
    },
  };
}

/** The name of the local stack's audit key, in its state directory. */
export const LOCAL_AUDIT_KEY_FILE = 'audit-key';

/**
 * The local stack's audit key: read from `<stateDir>/audit-key`, or made there (random, 0600)
 * the first time. It lives beside the stack's embedded database, as long as its records.
 */
export async function localAuditKey(stateDir: string): Promise<string> {
  const file = path.join(stateDir, LOCAL_AUDIT_KEY_FILE);
  const existing = await readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });
  if (existing !== undefined && existing.trim() !== '') return existing.trim();
  const key = randomBytes(32).toString('base64url');
  await mkdir(stateDir, { recursive: true });
  await writeFile(file, `${key}\n`, { mode: 0o600 });
  await chmod(file, 0o600);
  return key;
}
