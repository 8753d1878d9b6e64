import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { apiPaths, LOCAL_SIGN_IN_CODE_FILE } from '@svc/protocol';

/** The local stack's sign-in code, as the person at the machine reads it from its state directory. */
export async function localSignInCode(stateDir: string): Promise<string> {
  return (await readFile(path.join(stateDir, LOCAL_SIGN_IN_CODE_FILE), 'utf8')).trim();
}

/** A token of the local stack's user, got as `svc login` gets one: for the sign-in code in `stateDir`. */
export async function localUserToken(gatewayUrl: string, stateDir: string): Promise<string> {
  const response = await fetch(`${gatewayUrl}${apiPaths.localToken}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ code: await localSignInCode(stateDir) }),
  });
  if (!response.ok) throw new Error(`the local issuer refused a token: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { token: string }).token;
}
