import { randomBytes } from 'node:crypto';
import { errors, jwtVerify, SignJWT } from 'jose';
import { CodedError } from '@svc/protocol';

/** Who a decision link is for: a JWT audience no other token of svc carries. */
const LINK_AUDIENCE = 'svc-decision-link';
/** The shortest key accepted (HMAC-SHA256 wants at least 256 bits). */
const DECISION_LINK_KEY_MIN_LENGTH = 32;

/** What a decision link decides, and as whom (the notified subscription's owner). */
export interface DecisionLinkClaims {
  workerId: string;
  requestId: string;
  decision: 'allow' | 'deny';
  /** The person the decision is recorded as. */
  decidedBy: string;
}

const keyOf = (key: string) => {
  if (key.length < DECISION_LINK_KEY_MIN_LENGTH) throw new Error(`a decision-link key needs at least ${DECISION_LINK_KEY_MIN_LENGTH} characters`);
  return new TextEncoder().encode(key);
};

/**
 * A signed, expiring token for one decision (docs/webhooks.md): an HS256 JWT the gateway checks
 * before it shows or takes the decision. It is single-use because a request is decided once: a
 * second use finds it decided.
 */
export async function signDecisionLink(key: string, claims: DecisionLinkClaims, expiresAt: Date): Promise<string> {
  return new SignJWT({ wid: claims.workerId, rid: claims.requestId, dec: claims.decision })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(claims.decidedBy)
    .setAudience(LINK_AUDIENCE)
    .setJti(randomBytes(12).toString('base64url'))
    .setIssuedAt()
    .setExpirationTime(Math.floor(expiresAt.getTime() / 1000))
    .sign(keyOf(key));
}

/** The link's claims; `link_expired` or `invalid_link` (a tampered or foreign token) otherwise. */
export async function verifyDecisionLink(key: string, token: string): Promise<DecisionLinkClaims> {
  try {
    const { payload } = await jwtVerify(token, keyOf(key), { audience: LINK_AUDIENCE, algorithms: ['HS256'], clockTolerance: 0 });
    const { wid, rid, dec, sub } = payload as { wid?: unknown; rid?: unknown; dec?: unknown; sub?: unknown };
    if (typeof wid !== 'string' || typeof rid !== 'string' || (dec !== 'allow' && dec !== 'deny') || typeof sub !== 'string')
      throw new CodedError('invalid_link', 'this decision link does not say what it decides');
    return { workerId: wid, requestId: rid, decision: dec, decidedBy: sub };
  } catch (err) {
    if (err instanceof CodedError) throw err;
    if (err instanceof errors.JWTExpired) throw new CodedError('link_expired', 'this decision link has expired; decide in the console instead');
    throw new CodedError('invalid_link', 'this decision link is not valid (its signature does not match)');
  }
}
