import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import { createLocalIssuer, LOCAL_ISSUER_KEY_FILE } from './local-issuer.js';

describe('auth — the local issuer', () => {
  const dirs: string[] = [];
  afterAll(() => Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true }))));

  it('mints ES256 user tokens that verify against its own JWKS, and keeps its key across restarts', async () => {
    const stateDir = await mkdtemp(path.join(tmpdir(), 'svc-issuer-'));
    dirs.push(stateDir);
    const first = await createLocalIssuer({ stateDir, issuer: 'http://127.0.0.1:8080/' });
    expect(first.discoveryDocument()).toMatchObject({ issuer: 'http://127.0.0.1:8080', jwks_uri: 'http://127.0.0.1:8080/.well-known/jwks.json' });
    expect(first.jwks().keys[0]).not.toHaveProperty('d');
    expect((await stat(path.join(stateDir, LOCAL_ISSUER_KEY_FILE))).mode & 0o777).toBe(0o600);

    const token = await first.mintUserToken({ sub: 'local-user', audience: 'svc', name: 'Local', admin: true });
    const second = await createLocalIssuer({ stateDir, issuer: 'http://127.0.0.1:8080' });
    const { payload, protectedHeader } = await jwtVerify(token, createLocalJWKSet(second.jwks()), { issuer: second.issuer, audience: 'svc' });
    expect(protectedHeader.alg).toBe('ES256');
    expect(payload).toMatchObject({ sub: 'local-user', name: 'Local', svc_admin: true });
  });
});
