import { randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { decodeJwt, exportJWK, generateKeyPair, importJWK, SignJWT, type JWK } from 'jose';
import { LOCAL_SIGN_IN_CODE_FILE } from '@svc/protocol';
import { DEFAULT_GROUPS_CLAIM } from './oidc.js';

/**
 * The built-in OIDC issuer of the local stack (off unless enabled): an ES256 key kept in the
 * state directory, a discovery document and a JWKS to serve over HTTP, and user tokens minted
 * for `svc login`, so the stack works with nothing else installed.
 */
export interface LocalIssuer {
  issuer: string;
  /** The body of `/.well-known/openid-configuration`. */
  discoveryDocument(): {
    issuer: string;
    jwks_uri: string;
    id_token_signing_alg_values_supported: string[];
    subject_types_supported: string[];
    response_types_supported: string[];
  };
  /** The body of the JWKS: the public key only. */
  jwks(): { keys: JWK[] };
  /**
   * Whether `code` is this stack's sign-in code: a secret in a 0600 file of the state directory
   * (`LOCAL_SIGN_IN_CODE_FILE`), which only the person at the machine can read. Tokens are given
   * for it, never for being a loopback caller (a sandbox's channel arrives from loopback too).
   */
  isSignInCode(code: string): boolean;
  /** The sign-in code, for the launcher to print (never logged). */
  signInCode: string;
  /** A user token for this issuer. */
  mintUserToken(claims: {
    sub: string;
    audience: string;
    name?: string;
    email?: string;
    admin?: boolean;
    /** Its groups, in the group claim (docs/teams.md). */
    groups?: readonly string[];
    ttlSeconds?: number;
    /** When the person signed in with the code (OIDC `auth_time`, seconds); a renewal carries it on. */
    authTime?: number;
  }): Promise<string>;
}

export const LOCAL_ISSUER_KEY_FILE = 'local-issuer-key.json';

export async function createLocalIssuer(options: { stateDir: string; issuer: string; adminClaim?: string; groupsClaim?: string }): Promise<LocalIssuer> {
  const keyFile = path.join(options.stateDir, LOCAL_ISSUER_KEY_FILE);
  let privateJwk: JWK;
  if (existsSync(keyFile)) {
    privateJwk = JSON.parse(await readFile(keyFile, 'utf8')) as JWK;
  } else {
    const { privateKey } = await generateKeyPair('ES256', { extractable: true });
    privateJwk = { ...(await exportJWK(privateKey)), alg: 'ES256', use: 'sig', kid: `local-${Date.now().toString(36)}` };
    await mkdir(options.stateDir, { recursive: true });
    await writeFile(keyFile, JSON.stringify(privateJwk), { mode: 0o600 });
    await chmod(keyFile, 0o600);
  }
  const signInCode = await readOrCreateSecret(options.stateDir, LOCAL_SIGN_IN_CODE_FILE);
  const expectedCode = Buffer.from(signInCode);
  const { d: _private, ...publicJwk } = privateJwk;
  const signingKey = await importJWK(privateJwk, 'ES256');
  const issuer = options.issuer.replace(/\/+$/, '');
  const adminClaim = options.adminClaim ?? 'svc_admin';

  return {
    issuer,
    discoveryDocument: () => ({
      issuer,
      jwks_uri: `${issuer}/.well-known/jwks.json`,
      id_token_signing_alg_values_supported: ['ES256'],
      subject_types_supported: ['public'],
      response_types_supported: ['id_token'],
    }),
    jwks: () => ({ keys: [publicJwk] }),
    signInCode,
    isSignInCode(code) {
      const given = Buffer.from(code);
      return given.length === expectedCode.length && timingSafeEqual(given, expectedCode);
    },
    mintUserToken: (claims) =>
      new SignJWT({
        ...(claims.name ? { name: claims.name } : {}),
        ...(claims.email ? { email: claims.email } : {}),
        ...(claims.admin ? { [adminClaim]: true } : {}),
        ...(claims.groups?.length ? { [options.groupsClaim ?? DEFAULT_GROUPS_CLAIM]: [...claims.groups] } : {}),
        ...(claims.authTime === undefined ? {} : { auth_time: claims.authTime }),
      })
        .setProtectedHeader({ alg: 'ES256', kid: publicJwk.kid!, typ: 'JWT' })
        .setIssuer(issuer)
        .setAudience(claims.audience)
        .setSubject(claims.sub)
        .setIssuedAt()
        .setExpirationTime(`${claims.ttlSeconds ?? 12 * 3600}s`)
        .sign(signingKey),
  };
}

/** When the person behind a token (already verified) signed in: its `auth_time`, if it has one. */
export function signedInAt(token: string): number | undefined {
  const authTime = decodeJwt(token).auth_time;
  return typeof authTime === 'number' ? authTime : undefined;
}

/** A random secret kept in `file` of the state directory (0600), made on first use. */
async function readOrCreateSecret(stateDir: string, file: string): Promise<string> {
  const secretFile = path.join(stateDir, file);
  if (existsSync(secretFile)) {
    const kept = (await readFile(secretFile, 'utf8')).trim();
    if (kept.length >= 32) return kept;
  }
  const secret = randomBytes(32).toString('base64url');
  await mkdir(stateDir, { recursive: true });
  await writeFile(secretFile, `${secret}\n`, { mode: 0o600 });
  await chmod(secretFile, 0o600);
  return secret;
}
