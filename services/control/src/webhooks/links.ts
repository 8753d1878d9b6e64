import { signDecisionLink } from '@svc/auth';
import { apiPaths } from '@svc/protocol';
import type { LinksFor } from './notifications.js';

/** How long a link lives when its request has no deadline to end it sooner. */
const LINK_LIFETIME_MS = 60 * 60 * 1000;

/**
 * The links of a "needs a decision" notification (docs/webhooks.md): allow and deny, each signed
 * for the subscription's owner and valid until the request's deadline (at most an hour), and the
 * worker's console page. Following one shows a confirmation; only its POST decides.
 */
export function createLinksFor(key: string, publicUrl: string): LinksFor {
  const base = publicUrl.replace(/\/+$/, '');
  return async (workerId, requestId, subscriber, deadline) => {
    const expiresAt = new Date(Math.min(Date.now() + LINK_LIFETIME_MS, deadline ? Date.parse(deadline) : Infinity));
    const link = async (decision: 'allow' | 'deny') =>
      `${base}${apiPaths.decisionLink(await signDecisionLink(key, { workerId, requestId, decision, decidedBy: subscriber }, expiresAt))}`;
    return { allow: await link('allow'), deny: await link('deny'), console: `${base}/workers/${workerId}`, expires_at: expiresAt.toISOString() };
  };
}
