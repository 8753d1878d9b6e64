import Type, { type Static } from 'typebox';
import { ModelApiSchema } from './model-proxy.js';
import { WorkerId } from './primitives.js';
import { SidecarWorkspaceSchema } from './workspace.js';

export const SIDECAR_ADAPTERS = ['claude-code', 'codex', 'acp', 'generic'] as const;

const ToolRules = (description: string) => Type.Array(Type.String({ minLength: 1, maxLength: 1024 }), { default: [], description });

/**
 * The sidecar's configuration file (JSON, named by `SVC_SIDECAR_CONFIG`): the spec's fields plus
 * what a real run needs. The session service writes it into the sandbox at spawn.
 */
export const SidecarConfigSchema = Type.Object(
  {
    adapter: Type.Enum(SIDECAR_ADAPTERS),
    worker_id: WorkerId,
    control_plane_url: Type.String({ pattern: '^https?://[^\\s]+$', description: 'Base URL of the gateway, e.g. https://svc.example.com' }),
    /**
     * A Unix socket that leads to the gateway (a sealed sandbox has no network of its own): HTTP
     * to `control_plane_url` goes through it. Unset, the sidecar connects to the URL's host.
     */
    control_plane_socket: Type.Optional(Type.String({ minLength: 1 })),
    /**
     * The model APIs the agent reaches through the sidecar's loopback model proxy (the control
     * plane holds the keys): the sidecar gives the agent their base URLs and a placeholder key.
     */
    model_proxy: Type.Optional(Type.Object({ apis: Type.Array(ModelApiSchema, { minItems: 1, uniqueItems: true }) }, { additionalProperties: false })),
    /**
     * Offer the agent an HTTP CONNECT proxy on loopback (`HTTPS_PROXY`), whose tunnels go through
     * the gateway, which decides each (docs/egress.md).
     */
    egress_proxy: Type.Boolean({ default: false }),
    /**
     * The repository cloned into the sandbox (docs/workspace.md): the sidecar points git at its
     * loopback git proxy for it, and reports the changes against `base_commit` after each turn.
     */
    workspace: Type.Optional(SidecarWorkspaceSchema),
    /** The worker token (the spec's field). When `auth_token_file` is given too, the file is read instead. */
    auth_token: Type.Optional(Type.String({ minLength: 1 })),
    auth_token_file: Type.Optional(Type.String({ minLength: 1 })),
    autonomous: Type.Boolean({ default: false, description: 'Nobody is asked: what is not denied is allowed.' }),
    conversation: Type.Boolean({
      default: false,
      description: "The agent stays up between turns and takes people's messages (docs/conversations.md); otherwise its input closes after its one run.",
    }),
    /**
     * In a conversation, an agent idle this long is stopped (its stdin closed) and the worker
     * suspended: the next message starts it again on its own conversation (docs/conversations.md).
     * Unset: it waits for as long as it runs.
     */
    idle_timeout_s: Type.Optional(Type.Integer({ minimum: 1, maximum: 30 * 24 * 3600 })),
    permissions: Type.Object(
      {
        auto_approve: ToolRules('Allowed silently.'),
        deny: ToolRules('Refused silently.'),
        ask: ToolRules('A person decides (allowed in autonomous mode).'),
        /** The template's approval routes' rules (docs/teams.md): always asked, whatever people's rules or autonomy say. */
        routed: Type.Optional(ToolRules('Decided by the people an approval route names: always asked.')),
      },
      { additionalProperties: false, default: { auto_approve: [], deny: [], ask: [] } },
    ),
    poll_interval_ms: Type.Integer({
      minimum: 10,
      maximum: 60_000,
      default: 1000,
      description: 'Pause between control channel polls after an error or an empty answer.',
    }),
    agent: Type.Object(
      {
        command: Type.String({ minLength: 1 }),
        args: Type.Array(Type.String(), { default: [] }),
        env: Type.Record(Type.String(), Type.String(), { default: {} }),
        cwd: Type.Optional(Type.String({ minLength: 1 })),
        prompt: Type.Optional(Type.String()),
      },
      { additionalProperties: false },
    ),
    /** Where the sidecar keeps its boot id, control channel cursor and unsent events; never shared by two workers. */
    state_dir: Type.String({ minLength: 1, default: '/var/lib/svc-sidecar' }),
    /** How long each control channel poll waits for an input (the long poll's `wait_ms`). */
    decision_wait_ms: Type.Integer({ minimum: 0, maximum: 30_000, default: 25_000 }),
    /** The most events unsent events may take on disk while the control plane is unreachable. */
    buffer_max_bytes: Type.Integer({ minimum: 1024, default: 64 * 1024 * 1024 }),
    /** After SIGTERM, how long the agent gets before SIGKILL. */
    kill_grace_ms: Type.Integer({ minimum: 0, maximum: 600_000, default: 10_000 }),
  },
  { additionalProperties: false },
);
export type SidecarConfig = Static<typeof SidecarConfigSchema>;

/**
 * Files the sidecar keeps in its state directory that its supervisor reads (docs/sidecar.md,
 * "Started again"): `started` once it has started, `finished` once its work is done and every
 * event delivered. A sidecar that exits with `started` and without `finished` died before its
 * work was done, and is started again.
 */
export const SIDECAR_STATE_MARKS = { started: 'started', finished: 'finished' } as const;
