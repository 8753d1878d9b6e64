import type { FastifyReply, FastifyRequest } from 'fastify';
import { requestJson } from '@svc/bus';
import {
  AuditVerificationSchema,
  CHANNEL_HEADER,
  CodedError,
  ListAuditQuery,
  ListAuditResponse,
  subjects,
  type AuditChannel,
  type AuditRecord,
  type AuditVerification,
  type ListAuditRpcType,
  type ListResponseOf,
} from '@svc/protocol';
import { errorResponses, routePlugin } from './route-plugin.js';

/** The channel a person came through: what the CLI and the console say they are (`X-Svc-Channel`), else the API. */
export function channelOf(request: FastifyRequest): AuditChannel {
  const named = request.headers[CHANNEL_HEADER];
  return named === 'cli' || named === 'console' ? named : 'api';
}

const errors = errorResponses(400, 401, 403, 429, 503, 504);

/** The control service reads and checks the whole trail: far longer than a query, within what an HTTP client waits. */
const VERIFY_TIMEOUT_MS = 4 * 60_000;

function requireAdmin(request: FastifyRequest): void {
  if (request.principal?.kind !== 'user' || !request.principal.admin) throw new CodedError('forbidden', 'the audit trail is for admins');
}

/** `GET /v1/audit` (admins): the audit trail, paged, filtered, or exported as JSON lines; `GET /v1/audit/verify`: checked (docs/audit.md). */
export const auditRoutes = routePlugin('svc-audit-routes', ['svc-bus'], async (app) => {
  app.get(
    '/v1/audit',
    {
      schema: {
        tags: ['audit'],
        summary: 'The audit trail: who decided what, when, through which channel; sessions started and stopped; rules added (admins)',
        description:
          'Records after `after_seq`, in chain order. Each carries the hash of the one before it and its own (`svc audit verify` checks the chain). `format=jsonl` answers `application/x-ndjson`, one record per line, for export.',
        querystring: ListAuditQuery,
        response: { 200: ListAuditResponse, ...errors },
      },
    },
    async (request, reply) => {
      requireAdmin(request);
      const { after_seq: afterSeq = 0, limit, actor, action, channel, worker_id: workerId, format } = request.query;
      const rpc: ListAuditRpcType = {
        after_seq: afterSeq,
        limit,
        ...(actor === undefined ? {} : { actor }),
        ...(action === undefined ? {} : { action }),
        ...(channel === undefined ? {} : { channel }),
        ...(workerId === undefined ? {} : { worker_id: workerId }),
      };
      const page = await requestJson<ListResponseOf<AuditRecord>>(app.bus, subjects.rpc.listAudit, rpc, { requestId: request.id, retries: 1 });
      if (format !== 'jsonl') return page;
      // Text, past the route's JSON schema (which describes the default format).
      return (reply as unknown as FastifyReply)
        .type('application/x-ndjson')
        .serializer((body: string) => body)
        .send(page.items.map((record) => `${JSON.stringify(record)}\n`).join(''));
    },
  );

  app.get(
    '/v1/audit/verify',
    {
      schema: {
        tags: ['audit'],
        summary: 'Check the audit trail: every record against its key, every published head against the records (admins)',
        description:
          'The control service, which holds the key (`SVC_AUDIT_KEY`), reads the whole chain from #1 and the heads published to JetStream. `ok: false` names the first record that fails (`seq`) and why (`problem`): a record changed (its HMAC or hash), missing, stripped of its key, not the head published for its place, or a published head beyond the end (the newest records deleted).',
        response: { 200: AuditVerificationSchema, ...errors },
      },
    },
    async (request) => {
      requireAdmin(request);
      return requestJson<AuditVerification>(app.bus, subjects.rpc.verifyAudit, {}, { requestId: request.id, timeoutMs: VERIFY_TIMEOUT_MS });
    },
  );
});
