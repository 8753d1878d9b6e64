import { createServer, type Server } from 'node:http';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';

interface SigningKey {
  kid: string;
  alg: 'RS256' | 'ES256';
  privateKey: CryptoKey;
  publicJwk: JWK;
}

export interface TestIssuer {
  /** The issuer URL (also the base of the discovery document). */
  issuer: string;
  audience: string;
  /** The public JWK of the first RS256 key (an attacker knows it too). */
  publicJwk: JWK;
  /** How many times the JWKS was fetched. */
  jwksFetches(): number;
  /** Signs a token with the current key; `claims` override the valid defaults (sub, iss, aud, exp). */
  sign(claims?: JWTPayload, options?: { kid?: string; alg?: 'RS256' | 'ES256' }): Promise<string>;
  /** Adds a new signing key (and publishes it), returning its kid: key rotation. */
  rotate(alg?: 'RS256' | 'ES256'): Promise<string>;
  stop(): Promise<void>;
}

async function newKey(alg: 'RS256' | 'ES256', kid: string): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { kid, alg, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

/**
 * A real OIDC issuer over HTTP for tests: a discovery document and a JWKS on a random port, and
 * helpers to sign valid (or deliberately wrong) tokens.
 */
export async function startTestIssuer(audience = 'svc-test'): Promise<TestIssuer> {
  const keys: SigningKey[] = [await newKey('RS256', 'key-1')];
  let fetches = 0;
  let issuer = '';
  const server: Server = createServer((request, response) => {
    const send = (body: unknown) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify(body));
    };
    if (request.url === '/.well-known/openid-configuration')
      return send({ issuer, jwks_uri: `${issuer}/jwks`, id_token_signing_alg_values_supported: ['RS256', 'ES256'] });
    if (request.url === '/jwks') {
      fetches++;
      return send({ keys: keys.map((k) => k.publicJwk) });
    }
    response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('test issuer has no port');
  issuer = `http://127.0.0.1:${address.port}`;

  return {
    issuer,
    audience,
    publicJwk: keys[0]!.publicJwk,
    jwksFetches: () => fetches,
    async sign(claims = {}, options = {}) {
      const key = keys.find((k) => (options.kid ? k.kid === options.kid : true)) ?? keys[0]!;
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ sub: 'user-1', iss: issuer, aud: audience, iat: now, exp: now + 300, ...claims })
        .setProtectedHeader({ alg: options.alg ?? key.alg, kid: options.kid ?? key.kid, typ: 'JWT' })
        .sign(key.privateKey);
    },
    async rotate(alg = 'ES256') {
      const key = await newKey(alg, `key-${keys.length + 1}`);
      keys.unshift(key);
      return key.kid;
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
