// Writes helm/svc/files/nats-permissions.json from libs/bus's NATS_PERMISSIONS (the one place
// that says which subjects each service may use). Run after changing them:
//   npx nx run @svc/bus:build && node deploy/helm-tests/scripts/write-nats-permissions.mjs
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { natsPermissionsFile } from '@svc/bus';

const target = fileURLToPath(new URL('../../../helm/svc/files/nats-permissions.json', import.meta.url));
writeFileSync(target, natsPermissionsFile());
process.stdout.write(`wrote ${target}\n`);
