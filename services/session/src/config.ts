import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  booleanSetting,
  choiceSetting,
  gitCredentialSettings,
  integerSetting,
  listSetting,
  optionalStringSetting,
  stringSetting,
  type ConfigOf,
} from '@svc/service-kit';
import { DEFAULT_SANDBOX_PATH } from './sandbox/provider.js';

/** Where `npx nx run @svc/sidecar:executable` leaves the single executable in a checkout. */
export const CHECKOUT_SIDECAR_BINARY = fileURLToPath(new URL('../../../sidecar/executable/svc-sidecar', import.meta.url));

/** The session service's settings (`SVC_*`), beside the common and store ones. */
export const sessionSettings = {
  /** A directory of `<name>.toml` templates; they win over the built-in ones of the same name. */
  templatesDir: optionalStringSetting('SVC_TEMPLATES_DIR'),
  /**
   * The members of groups, where the deployment knows them (`{"release": ["bob", "dave"]}`): a
   * template's approval quorum is checked against them at load (docs/teams.md). Tokens say each
   * person's groups; nothing else tells svc who is in one.
   */
  groupMembers: optionalStringSetting('SVC_GROUP_MEMBERS'),
  sandboxProvider: choiceSetting('SVC_SANDBOX_PROVIDER', ['local', 'kubernetes'], { default: 'local' }),
  /** local: where sandboxes live on this machine. */
  sandboxesDir: stringSetting('SVC_SANDBOXES_DIR', { default: path.join('.svc', 'sandboxes') }),
  /** local: `auto` uses bubblewrap when installed. */
  sandboxIsolation: choiceSetting('SVC_SANDBOX_ISOLATION', ['auto', 'bubblewrap', 'process'], { default: 'auto' }),
  /**
   * local: host directories a sandbox sees read-only at the same path (e.g. where agents are
   * installed, such as Claude Code under a node_modules).
   */
  sandboxHostDirs: listSetting('SVC_SANDBOX_HOST_DIRS', { default: [] }),
  /** The stack's state directory, whose secrets (sign-in code, keys) no sandbox may see: a host directory holding it is refused. */
  stateDir: stringSetting('SVC_STATE_DIR', { default: '.svc' }),
  /**
   * Run templates that ask for a sealed sandbox (the default) even where sandboxes cannot be
   * sealed (local sandboxes without bubblewrap): their agents then have this machine's network.
   */
  sandboxAllowUnsealed: booleanSetting('SVC_SANDBOX_ALLOW_UNSEALED', { default: false }),
  /** The PATH sandboxed programs start with (put an agent's bin directory first, for instance). */
  sandboxPath: stringSetting('SVC_SANDBOX_PATH', { default: DEFAULT_SANDBOX_PATH }),
  /** kubernetes: the namespace of sandbox Pods. */
  sandboxNamespace: stringSetting('SVC_SANDBOX_NAMESPACE', { default: 'svc-sandboxes' }),
  /** kubernetes: the sandbox image when a template names none (it needs /bin/sh, dd, mkdir, chmod, mv, cat, and tar for a [workspace] repository). */
  sandboxImage: stringSetting('SVC_SANDBOX_IMAGE', { default: 'ghcr.io/svc-dev/svc-sandbox:0.1.0' }),
  /** kubernetes: a kubeconfig file; unset, the Pod's own service account is used (in-cluster). */
  kubeconfig: optionalStringSetting('SVC_KUBECONFIG'),
  /** The svc-sidecar single executable for linux/amd64 (step 6.5 uploads it). */
  sidecarBinary: stringSetting('SVC_SIDECAR_BINARY', { default: CHECKOUT_SIDECAR_BINARY }),
  /** The gateway's worker port as seen from inside a sandbox (never its public listener: docs/gateway.md). */
  sandboxControlPlaneUrl: stringSetting('SVC_SANDBOX_CONTROL_PLANE_URL', { default: 'http://127.0.0.1:8082', pattern: /^https?:\/\/\S+$/ }),
  /** A running worker whose sidecar is silent this long is failed (`sidecar_lost`). */
  sidecarLostAfterMs: integerSetting('SVC_SIDECAR_LOST_AFTER_MS', { default: 90_000, min: 1000 }),
  /** Days an ended session's events are kept when its template does not say (0: kept for good). */
  eventRetentionDays: integerSetting('SVC_EVENT_RETENTION_DAYS', { default: 30, min: 0, max: 36_500 }),
  /** How often ended sessions past their retention are looked for. */
  retentionSweepIntervalMs: integerSetting('SVC_RETENTION_SWEEP_INTERVAL_MS', { default: 3_600_000, min: 100 }),
  /** How long a sandbox's programs get between SIGTERM and SIGKILL. */
  killGraceMs: integerSetting('SVC_SANDBOX_KILL_GRACE_MS', { default: 10_000, min: 0, max: 600_000 }),
  ...gitCredentialSettings,
  /** Forges' APIs by git host (JSON host → `{"type": "github", "api_url": …}`), for pull requests; github.com is known (docs/workspace.md). */
  gitForges: optionalStringSetting('SVC_GIT_FORGES'),
  /** Sessions one person (their `sub`, admins too) may have not yet ended; one more is refused (429 `too_many_sessions`). */
  maxRunningSessionsPerUser: integerSetting('SVC_MAX_RUNNING_SESSIONS_PER_USER', { default: 20, min: 1 }),
};

export type SessionConfig = ConfigOf<typeof sessionSettings>;
