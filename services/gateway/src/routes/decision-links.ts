import type { FastifyReply } from 'fastify';
import Type from 'typebox';
import { signUserAssertion, verifyDecisionLink, type DecisionLinkClaims } from '@svc/auth';
import { requestJson } from '@svc/bus';
import {
  CodedError,
  isEndedStatus,
  isVoteAnswer,
  statusOfErrorCode,
  subjects,
  type ControlRequestsRpcType,
  type DecideAnswer,
  type DecideRequestType,
  type ListResponseOf,
  type StoredEvent,
} from '@svc/protocol';
import { decideThroughControl } from './control.js';
import { routePlugin } from './route-plugin.js';

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** A small page (no script, no style: it passes any Content-Security-Policy). */
function page(reply: FastifyReply, status: number, title: string, body: string): FastifyReply {
  return reply
    .code(status)
    .type('text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('referrer-policy', 'no-referrer')
    .send(
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title></head><body><main><h1>${escapeHtml(title)}</h1>${body}</main></body></html>`,
    );
}

function refusal(reply: FastifyReply, err: unknown): FastifyReply {
  if (!(err instanceof CodedError)) throw err;
  return page(reply, statusOfErrorCode(err.code), 'Nothing was decided', `<p>${escapeHtml(err.message)}</p>`);
}

const verb = (claims: DecisionLinkClaims) => (claims.decision === 'allow' ? 'Allow' : 'Deny');

/** What a link's person is shown once their decision is taken: decided, or their vote counted toward a quorum. */
function decidedPage(reply: FastifyReply, claims: { requestId: string; decision: string }, answer: DecideAnswer): FastifyReply {
  const request = `<code>${escapeHtml(claims.requestId)}</code>`;
  if (isVoteAnswer(answer))
    return page(
      reply,
      202,
      'Vote counted',
      `<p>Your allow of request ${request} is counted: ${answer.allows} of the ${answer.quorum} people it needs. The agent goes on once enough have allowed it.</p>`,
    );
  return page(reply, 200, claims.decision === 'allow' ? 'Allowed' : 'Denied', `<p>Request ${request} is decided; the agent goes on.</p>`);
}

/**
 * `/v1/links?token=…` (docs/webhooks.md): the signed decision links of notifications. A GET only
 * shows what will be decided and asks to confirm (link previewers and mail scanners follow GETs);
 * the confirmation's POST decides, as the notified person, through the `link` channel. The token
 * is the credential: no other is asked for. The links are checked with `SVC_DECISION_LINK_KEY`;
 * who decides is signed with `SVC_USER_ASSERTION_KEY` (the link's person, through the `link` channel).
 */
export const decisionLinkRoutes = routePlugin('svc-decision-link-routes', ['svc-settings', 'svc-bus', 'svc-worker-directory'], async (app) => {
  const { decisionLinkKey, userAssertionKey } = app.settings;
  // The confirmation is an HTML form: its body (empty) is not read.
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, _body, done) => done(null, undefined));

  async function claimsOf(token: string): Promise<DecisionLinkClaims> {
    if (!decisionLinkKey) throw new CodedError('not_found', 'decision links are not configured on this gateway (SVC_DECISION_LINK_KEY)');
    return verifyDecisionLink(decisionLinkKey, token);
  }

  async function openRequest(claims: DecisionLinkClaims, requestId: string): Promise<StoredEvent<'control_request'>> {
    const record = await app.workers.get(claims.workerId);
    if (!record) throw new CodedError('worker_not_found', `worker ${claims.workerId} does not exist`);
    if (isEndedStatus(record.status)) throw new CodedError('worker_ended', `worker ${claims.workerId} is ${record.status}; it takes no more decisions`);
    const rpc: ControlRequestsRpcType = { worker_id: claims.workerId, state: 'all' };
    const requests = await requestJson<ListResponseOf<StoredEvent<'control_request'>>>(app.bus, subjects.rpc.controlRequests, rpc, { requestId });
    const found = requests.items.find((request) => request.data.request_id === claims.requestId);
    if (!found) throw new CodedError('request_not_found', `worker ${claims.workerId} has no request ${claims.requestId}`);
    return found;
  }

  // The token is long (a signed JWT): a query parameter, not a path segment (those are kept short).
  const schema = {
    tags: ['webhooks'],
    querystring: Type.Object({ token: Type.String({ minLength: 1, maxLength: 4096, description: 'The signed link token.' }) }),
  } as const;
  app.get<{ Querystring: { token: string } }>(
    '/v1/links',
    {
      config: { auth: 'public' },
      schema: {
        ...schema,
        summary: 'A decision link: shows what it decides and asks to confirm (decides nothing)',
        description: 'HTML. 401 `invalid_link` (tampered), 410 `link_expired`, 404 when the request is gone; an open request shows a form that POSTs here.',
      },
    },
    async (request, reply) => {
      try {
        const claims = await claimsOf(request.query.token);
        const found = await openRequest(claims, request.id);
        const input = JSON.stringify(found.data.input, null, 2);
        return page(
          reply,
          200,
          `${verb(claims)} ${found.data.tool_name}?`,
          `<p>Worker <code>${escapeHtml(claims.workerId)}</code> asks to use <strong>${escapeHtml(found.data.tool_name)}</strong> with:</p>` +
            `<pre>${escapeHtml(input.length > 4000 ? `${input.slice(0, 4000)}…` : input)}</pre>` +
            `<p>This decides request <code>${escapeHtml(claims.requestId)}</code> as <strong>${escapeHtml(claims.decidedBy)}</strong>. Nothing is decided until you confirm.</p>` +
            `<form method="post"><button type="submit">${verb(claims)}</button></form>`,
        );
      } catch (err) {
        return refusal(reply, err);
      }
    },
  );

  app.post<{ Querystring: { token: string } }>(
    '/v1/links',
    {
      config: { auth: 'public' },
      schema: {
        ...schema,
        summary: "A decision link's confirmation: decides, once, as the notified person (channel `link`)",
        description:
          'HTML. 200 decided; 409 `already_decided` or `request_closed` (a link is used once: a second use finds the request decided); 401 `invalid_link`; 410 `link_expired`.',
      },
    },
    async (request, reply) => {
      try {
        const claims = await claimsOf(request.query.token);
        await openRequest(claims, request.id);
        if (!userAssertionKey)
          throw new CodedError('unavailable', 'this gateway cannot vouch for who decides (SVC_USER_ASSERTION_KEY is not set): decide in the console');
        // The link's token proved who it is for; the control service believes only this assertion of it.
        const assertion = await signUserAssertion(userAssertionKey, {
          sub: claims.decidedBy,
          // A link grants this one decision, nothing an admin may do, nothing a group may.
          groups: [],
          admin: false,
          channel: 'link',
          workerId: claims.workerId,
          requestId: claims.requestId,
        });
        const decide: DecideRequestType = {
          worker_id: claims.workerId,
          decision: { request_id: claims.requestId, decision: claims.decision },
          assertion,
        };
        return decidedPage(reply, claims, await decideThroughControl(app, decide, request.id));
      } catch (err) {
        return refusal(reply, err);
      }
    },
  );
});
