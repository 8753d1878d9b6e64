import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { exportJWK, generateKeyPair, importJWK, SignJWT, type JWK } from 'jose';

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
  /** A user token for this issuer. */
  mintUserToken(claims: { sub: string; audience: string; name?: string; email?: string; admin?: boolean; ttlSeconds?: number }): Promise<string>;
}

export const LOCAL_ISSUER_KEY_FILE = 'local-issuer-key.json';

export async function createLocalIssuer(options: { stateDir: string; issuer: string; adminClaim?: string }): Promise<LocalIssuer> {
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
    mintUserToken: (claims) =>
      new SignJWT({
        ...(claims.name ? { name: claims.name } : {}),
        ...(claims.email ? { email: claims.email } : {}),
        ...(claims.admin ? { [adminClaim]: true } : {}),
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
