import { randomBytes } from 'node:crypto';
import { createSigner, createVerifier, TokenError } from 'fast-jwt';
import { CodedError, PERSON_CHANNELS, type PersonChannel } from '@svc/protocol';
import type { Setting } from '@svc/service-kit';

/** Who a user assertion is for: a JWT audience no other token of svc carries. */
const ASSERTION_AUDIENCE = 'svc-user-assertion';
/** The shortest key accepted (HMAC-SHA256 wants at least 256 bits). */
const USER_ASSERTION_KEY_MIN_LENGTH = 32;
/** How long an assertion is good for: one RPC's flight, with room for the clocks of two hosts. */
export const USER_ASSERTION_TTL_S = 60;

/**
 * The person behind a decision, as the gateway authenticated them, and the one decision it is
 * for: an assertion says nothing about any other worker or request.
 */
export interface UserAssertion {
  sub: string;
  name?: string | undefined;
  email?: string | undefined;
  /** Their groups: which requests they may decide depends on them (docs/teams.md). */
  groups: readonly string[];
  admin: boolean;
  /** How the person decided: the source of the decision is `user:<channel>:<sub>`. */
  channel: PersonChannel;
  workerId: string;
  /** The control request decided on. */
  requestId: string;
}

const checkedKey = (key: string) => {
  if (key.length < USER_ASSERTION_KEY_MIN_LENGTH) throw new Error(`a user-assertion key needs at least ${USER_ASSERTION_KEY_MIN_LENGTH} characters`);
  return key;
};

/**
 * Signers by key: one assertion is signed and checked on every person's decision, so this is
 * fast-jwt's synchronous HMAC rather than jose's WebCrypto, which leaves the event loop for the
 * thread pool on each (docs/benchmarks.md#control-rtt).
 */
const signers = new Map<string, (payload: Record<string, unknown>) => string>();
const signerOf = (key: string) => {
  let signer = signers.get(key);
  if (!signer) signers.set(key, (signer = createSigner({ key: checkedKey(key), algorithm: 'HS256' })));
  return signer;
};
const verifierOptions = (key: string) => ({ key, algorithms: ['HS256' as const], allowedAud: ASSERTION_AUDIENCE, clockTolerance: 0 });
const verifiers = new Map<string, (token: string) => Record<string, unknown>>();
const verifierOf = (key: string, at: Date | undefined) => {
  // A check "as of" a given time is a test's: its verifier is made for that time only.
  if (at) return createVerifier({ ...verifierOptions(checkedKey(key)), clockTimestamp: at.getTime() });
  let verifier = verifiers.get(key);
  if (!verifier) verifiers.set(key, (verifier = createVerifier(verifierOptions(checkedKey(key)))));
  return verifier;
};

/**
 * `SVC_USER_ASSERTION_KEY` (docs/nats-security.md): the key the gateway signs user assertions
 * with and the control service checks them with, the same on both. Unset: undefined, and no
 * person's decision is taken.
 */
export const userAssertionKeySetting: Setting<string | undefined> = {
  variable: 'SVC_USER_ASSERTION_KEY',
  read: (raw) =>
    raw === undefined || raw === ''
      ? { value: undefined }
      : raw.length < USER_ASSERTION_KEY_MIN_LENGTH
        ? { problem: `SVC_USER_ASSERTION_KEY needs at least ${USER_ASSERTION_KEY_MIN_LENGTH} characters (e.g. openssl rand -base64 32)` }
        : { value: raw },
};

/**
 * A compact HS256 JWT that says who decides what, signed by the gateway after it authenticated
 * the person, checked by the control service: the identity in a decide RPC is this, never a
 * field of the payload (which any holder of a NATS password could write). It expires
 * `USER_ASSERTION_TTL_S` after `at`.
 */
export async function signUserAssertion(key: string, assertion: UserAssertion, at: Date = new Date()): Promise<string> {
  const issuedAt = Math.floor(at.getTime() / 1000);
  return signerOf(key)({
    sub: assertion.sub,
    ...(assertion.name === undefined ? {} : { name: assertion.name }),
    ...(assertion.email === undefined ? {} : { email: assertion.email }),
    grp: assertion.groups,
    adm: assertion.admin,
    chn: assertion.channel,
    wid: assertion.workerId,
    rid: assertion.requestId,
    aud: ASSERTION_AUDIENCE,
    jti: randomBytes(12).toString('base64url'),
    iat: issuedAt,
    exp: issuedAt + USER_ASSERTION_TTL_S,
  });
}

const refused = (why: string) => new CodedError('forbidden', `the decision is refused: ${why}`);

/**
 * The person an assertion names, once its signature, expiry and decision (`expected`) are
 * checked; `forbidden`, saying which check failed, when it is missing, forged, expired or made
 * for another decision.
 */
export async function verifyUserAssertion(
  key: string,
  token: string | undefined,
  expected: { workerId: string; requestId: string },
  at?: Date,
): Promise<UserAssertion> {
  if (!token) throw refused('it carries no user assertion (the gateway signs one for the person it authenticated)');
  let payload: Record<string, unknown>;
  try {
    payload = verifierOf(key, at)(token);
  } catch (err) {
    if (err instanceof TokenError && err.code === TokenError.codes.expired) throw refused('its user assertion has expired');
    throw refused('its user assertion is not valid (its signature does not match, or it is not one)');
  }
  const { sub, name, email, grp, adm, chn, wid, rid } = payload;
  if (
    typeof sub !== 'string' ||
    sub === '' ||
    !Array.isArray(grp) ||
    !grp.every((group) => typeof group === 'string') ||
    typeof adm !== 'boolean' ||
    !(PERSON_CHANNELS as readonly unknown[]).includes(chn) ||
    typeof wid !== 'string' ||
    typeof rid !== 'string' ||
    (name !== undefined && typeof name !== 'string') ||
    (email !== undefined && typeof email !== 'string')
  )
    throw refused('its user assertion does not say who decides, how, and on what');
  if (wid !== expected.workerId || rid !== expected.requestId)
    throw refused(`its user assertion is for request ${rid} of worker ${wid}, not request ${expected.requestId} of worker ${expected.workerId}`);
  return { sub, name, email, groups: grp as string[], admin: adm, channel: chn as PersonChannel, workerId: wid, requestId: rid };
}
