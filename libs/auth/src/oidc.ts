import {
  createLocalJWKSet,
  createRemoteJWKSet,
  errors,
  jwtVerify,
  type JSONWebKeySet,
  type JWSHeaderParameters,
  type JWTPayload,
  type FlattenedJWSInput,
} from 'jose';
import type { UserPrincipal } from './principal.js';
import { rememberAtMost } from './remembered.js';

/** Signature algorithms we accept: asymmetric only. `none` and HMAC never verify a user. */
const USER_TOKEN_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;

export class AuthenticationError extends Error {
  override readonly name = 'AuthenticationError';
}

export interface OidcVerifierOptions {
  /** The issuer URL; `<issuer>/.well-known/openid-configuration` names the JWKS. */
  issuer: string;
  audience: string;
  /** Allowed clock skew for `exp`/`nbf`, in seconds. */
  clockToleranceSeconds?: number;
  /** The claim that makes a user an admin when it is `true` (or lists "admin"). */
  adminClaim?: string;
  /** The claim that lists the user's groups (an array of strings, or one string); default `groups`. */
  groupsClaim?: string;
  /** How soon an unknown `kid` may trigger another JWKS fetch, in ms. */
  jwksCooldownMs?: number;
  /** The issuer's keys, when they are known here (the built-in issuer): no discovery then. */
  keys?: JSONWebKeySet;
  /**
   * How many verified tokens to remember, and for how long at most (never past their `exp`).
   * A signature check costs far more than the rest of a request; a remembered token skips it.
   * The price: a token whose signing key the issuer withdraws stays accepted up to `cacheTtlMs`.
   */
  cacheSize?: number;
  cacheTtlMs?: number;
}

export interface OidcVerifier {
  /** Verifies a bearer JWT and returns the user, or throws `AuthenticationError` (message safe to show). */
  verify(token: string): Promise<UserPrincipal>;
  /** The user of a token verified recently and not yet expired, without waiting; else undefined (call `verify`). */
  remembered(token: string): UserPrincipal | undefined;
}

interface DiscoveryDocument {
  issuer?: string;
  jwks_uri?: string;
}

/**
 * Verifies user JWTs against an OIDC issuer: discovers `jwks_uri`, caches the keys (refetching
 * on an unknown `kid`), and checks signature, algorithm, `iss`, `aud`, `exp` and `nbf`.
 */
export function createOidcVerifier(options: OidcVerifierOptions): OidcVerifier {
  const issuer = options.issuer.replace(/\/+$/, '');
  let keySet: Promise<ReturnType<typeof createRemoteJWKSet>> | undefined;

  const localKeys = options.keys ? createLocalJWKSet(options.keys) : undefined;

  function keys(): Promise<(header: JWSHeaderParameters, input: FlattenedJWSInput) => ReturnType<ReturnType<typeof createRemoteJWKSet>>> {
    if (localKeys) return Promise.resolve(localKeys);
    keySet ??= discover(issuer)
      .then((jwksUri) => createRemoteJWKSet(new URL(jwksUri), { cooldownDuration: options.jwksCooldownMs ?? 5_000, timeoutDuration: 5_000 }))
      .catch((err: unknown) => {
        keySet = undefined; // try discovery again on the next request
        throw err;
      });
    return keySet;
  }

  const cacheSize = options.cacheSize ?? 10_000;
  const cacheTtlMs = options.cacheTtlMs ?? 60_000;
  const verified = new Map<string, { principal: UserPrincipal; until: number }>();

  function remember(token: string, principal: UserPrincipal, expiresAtSeconds: number): void {
    rememberAtMost(verified, token, { principal, until: Math.min(expiresAtSeconds * 1000, Date.now() + cacheTtlMs) }, cacheSize);
  }

  function remembered(token: string): UserPrincipal | undefined {
    const cached = verified.get(token);
    if (!cached) return undefined;
    if (Date.now() < cached.until) return cached.principal;
    verified.delete(token);
    return undefined;
  }

  return {
    remembered,
    async verify(token) {
      const cached = remembered(token);
      if (cached) return cached;
      const getKey = await keys().catch((err: unknown) => {
        throw new AuthenticationError('the identity provider could not be reached', { cause: err });
      });
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, (header: JWSHeaderParameters, input: FlattenedJWSInput) => getKey(header, input), {
          issuer: [issuer, `${issuer}/`],
          audience: options.audience,
          algorithms: [...USER_TOKEN_ALGORITHMS],
          clockTolerance: options.clockToleranceSeconds ?? 30,
          requiredClaims: ['sub', 'exp'],
        }));
      } catch (err) {
        throw new AuthenticationError(describeJoseError(err), { cause: err });
      }
      const adminClaim = options.adminClaim ?? 'svc_admin';
      const admin = payload[adminClaim] === true || (Array.isArray(payload[adminClaim]) && (payload[adminClaim] as unknown[]).includes('admin'));
      const principal: UserPrincipal = {
        kind: 'user',
        sub: payload.sub!,
        groups: groupsOf(payload[options.groupsClaim ?? DEFAULT_GROUPS_CLAIM]),
        admin,
        ...(typeof payload['name'] === 'string' ? { name: payload['name'] } : {}),
        ...(typeof payload['email'] === 'string' ? { email: payload['email'] } : {}),
      };
      remember(token, principal, payload.exp!);
      return principal;
    },
  };
}

/** The claim a token's groups are read from unless `SVC_OIDC_GROUPS_CLAIM` names another. */
export const DEFAULT_GROUPS_CLAIM = 'groups';
/** The most groups taken from one token: a claim listing more is cut there. */
const MAX_GROUPS = 256;

/** A group claim's value as names: an array of strings (others left out), or one string; anything else none. */
function groupsOf(claim: unknown): string[] {
  const names = typeof claim === 'string' ? [claim] : Array.isArray(claim) ? claim.filter((name): name is string => typeof name === 'string') : [];
  return names.filter((name) => name !== '' && name.length <= 256).slice(0, MAX_GROUPS);
}

async function discover(issuer: string): Promise<string> {
  const response = await fetch(`${issuer}/.well-known/openid-configuration`, { signal: AbortSignal.timeout(5_000) });
  if (!response.ok) throw new Error(`OIDC discovery at ${issuer} answered ${response.status}`);
  const document = (await response.json()) as DiscoveryDocument;
  if (!document.jwks_uri) throw new Error(`OIDC discovery at ${issuer} names no jwks_uri`);
  return document.jwks_uri;
}

/** A message for the caller that says what was wrong with the token, never the token itself. */
function describeJoseError(err: unknown): string {
  if (err instanceof errors.JWTExpired) return 'the token has expired';
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === 'nbf') return 'the token is not valid yet';
    return `the token's "${err.claim}" claim is not accepted`;
  }
  if (err instanceof errors.JOSEAlgNotAllowed) return "the token's signing algorithm is not accepted";
  if (err instanceof errors.JWKSNoMatchingKey) return 'the token was signed with an unknown key';
  if (err instanceof errors.JWSSignatureVerificationFailed) return "the token's signature is invalid";
  if (err instanceof errors.JWTInvalid || err instanceof errors.JWSInvalid) return 'the token is malformed';
  return 'the token is not valid';
}
