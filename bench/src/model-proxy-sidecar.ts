/**
 * The sidecar's model proxy as a process of its own, for bench/model-proxy (so its CPU is its
 * own): `node model-proxy-sidecar.js <gateway url> <worker id> <worker token>` prints the
 * Anthropic base URL the agent would get, then serves until killed.
 */
import { createControlPlaneClient, startModelProxy } from '@svc/sidecar';

const [gatewayUrl, workerId, token] = process.argv.slice(2);
if (!gatewayUrl || !workerId || !token) {
  process.stderr.write('usage: model-proxy-sidecar.js <gateway url> <worker id> <worker token>\n');
  process.exit(2);
}
const client = createControlPlaneClient(gatewayUrl, token);
const proxy = await startModelProxy({ apis: ['anthropic'], workerId, client, warn: (message) => process.stderr.write(`${message}\n`) });
process.stdout.write(`${proxy.baseUrl('anthropic')}\n`);
process.on('SIGTERM', () => void proxy.close().then(() => process.exit(0)));
