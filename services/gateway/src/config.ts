import { DEFAULT_GROUPS_CLAIM, userAssertionKeySetting } from '@svc/auth';
import { localUsersSetting } from './auth/local-users.js';
import { streamLimitSettings, type StreamLimits } from './stream-limits.js';
import {
  booleanSetting,
  cidrListSetting,
  commonSettings,
  decisionWaitSettings,
  gitCredentialSettings,
  integerSetting,
  listSetting,
  optionalStringSetting,
  stringSetting,
  type ConfigOf,
} from '@svc/service-kit';

/** How long a token of the built-in issuer lasts unless `SVC_LOCAL_TOKEN_TTL_S` says otherwise. */
export const DEFAULT_LOCAL_TOKEN_TTL_S = 12 * 3600;
/** What the console asks the OIDC provider for: who you are, and a refresh token to stay signed in. */
export const DEFAULT_CONSOLE_OIDC_SCOPE = 'openid profile offline_access';

/** Coalescing's defaults (docs/event-ingest.md): a window of 1 ms, at most 1,000 events or 512 KiB per message. */
export const DEFAULT_COALESCING = { windowMs: 1, maxEvents: 1000, maxBytes: 512 * 1024 } as const;

/** The gateway's settings (docs/configuration.md). */
export const gatewaySettings = {
  ...commonSettings,
  /** Bounds on streams and open connections (docs/event-stream.md, "Bounds"). */
  ...streamLimitSettings,
  host: stringSetting('SVC_GATEWAY_HOST', { default: '127.0.0.1' }),
  port: integerSetting('SVC_GATEWAY_PORT', { default: 8080, min: 0, max: 65535 }),
  /**
   * The worker port (docs/gateway.md, "Two listeners"): the sandboxes' listener, which serves the
   * routes a sidecar calls and nothing else. 0: a free port.
   */
  workerPort: integerSetting('SVC_GATEWAY_WORKER_PORT', { default: 8082, min: 0, max: 65535 }),
  /** Where the worker port listens (default: SVC_GATEWAY_HOST). */
  workerHost: optionalStringSetting('SVC_GATEWAY_WORKER_HOST'),
  /** The URL clients use to reach the gateway (the local issuer's `iss`). Defaults to http://host:port. */
  publicUrl: optionalStringSetting('SVC_GATEWAY_PUBLIC_URL'),
  /**
   * Names the public listener answers to (its Host header), beside the public URL's and the
   * loopback names: a page that renamed this gateway (DNS rebinding) is refused. `*`: any name.
   */
  allowedHosts: listSetting('SVC_GATEWAY_ALLOWED_HOSTS', { default: [] }),
  /** Checks the decision links of notifications (the control service signs them with the same key): docs/webhooks.md. */
  decisionLinkKey: optionalStringSetting('SVC_DECISION_LINK_KEY'),
  /**
   * Signs the user assertion each decision carries to the control service, which checks it with
   * the same key (docs/nats-security.md). Unset: people's decisions are refused (503).
   */
  userAssertionKey: userAssertionKeySetting,
  /** The control service's wait for a decision's writer, read to wait for its answer (not give up first). */
  ...decisionWaitSettings,
  /** Proxies whose X-Forwarded-For is believed (addresses or CIDRs). */
  trustedProxies: listSetting('SVC_TRUSTED_PROXIES', { default: [] }),
  corsOrigins: listSetting('SVC_CORS_ORIGINS', { default: [] }),
  rateLimitMax: integerSetting('SVC_RATE_LIMIT_MAX', { default: 1200, min: 1 }),
  rateLimitWindowMs: integerSetting('SVC_RATE_LIMIT_WINDOW_MS', { default: 60_000, min: 100 }),
  bodyLimitBytes: integerSetting('SVC_BODY_LIMIT_BYTES', { default: 4 * 1024 * 1024, min: 1024 }),
  /**
   * Coalescing (docs/event-ingest.md): how long a POSTed event may wait for others bound for its
   * partition before their JetStream message goes (only while one of the partition's is in flight;
   * 0: each POST is its own message), and the most events and bytes in one message.
   */
  coalesceWindowMs: integerSetting('SVC_GATEWAY_COALESCE_WINDOW_MS', { default: DEFAULT_COALESCING.windowMs, min: 0, max: 100 }),
  coalesceMaxEvents: integerSetting('SVC_GATEWAY_COALESCE_MAX_EVENTS', { default: DEFAULT_COALESCING.maxEvents, min: 1, max: 10_000 }),
  coalesceMaxBytes: integerSetting('SVC_GATEWAY_COALESCE_MAX_BYTES', { default: DEFAULT_COALESCING.maxBytes, min: 1024 }),
  oidcIssuer: optionalStringSetting('SVC_OIDC_ISSUER'),
  oidcAudience: stringSetting('SVC_OIDC_AUDIENCE', { default: 'svc' }),
  adminClaim: stringSetting('SVC_ADMIN_CLAIM', { default: 'svc_admin' }),
  /** The token claim that lists a person's groups, which sessions' access lists and approval routes name (docs/teams.md). */
  groupsClaim: stringSetting('SVC_OIDC_GROUPS_CLAIM', { default: DEFAULT_GROUPS_CLAIM }),
  /**
   * People the built-in issuer may sign in besides the local user, for a team's demo and tests
   * (docs/teams.md): a JSON object of `sub` → `{name?, groups?}`; whoever holds the sign-in code
   * chooses one (`POST /v1/local/token` with `user`).
   */
  localUsers: localUsersSetting,
  /** Serve the built-in issuer (local stack): users get tokens from POST /v1/local/token for the stack's sign-in code. */
  localIssuer: booleanSetting('SVC_LOCAL_ISSUER', { default: false }),
  /** How long a token of the built-in issuer lasts (the console renews it before it expires). */
  localTokenTtlSeconds: integerSetting('SVC_LOCAL_TOKEN_TTL_S', { default: DEFAULT_LOCAL_TOKEN_TTL_S, min: 5, max: 7 * 86_400 }),
  stateDir: stringSetting('SVC_STATE_DIR', { default: '.svc' }),
  /** The web console's built files (`console/dist`), served at `/`; unset: no console (docs/console.md). */
  consoleDir: optionalStringSetting('SVC_CONSOLE_DIR'),
  /** The console's client id at the OIDC provider (`SVC_OIDC_ISSUER`): a public client, Authorization Code with PKCE. Unset: no provider sign-in in the console. */
  consoleOidcClientId: optionalStringSetting('SVC_CONSOLE_OIDC_CLIENT_ID'),
  consoleOidcScope: stringSetting('SVC_CONSOLE_OIDC_SCOPE', { default: DEFAULT_CONSOLE_OIDC_SCOPE }),
  /**
   * The model proxy's keys and upstreams (docs/model-proxy.md). Keys live here, in the control
   * plane, only: a sandbox never holds one. A model API without a key answers 503.
   */
  anthropicApiKey: optionalStringSetting('SVC_ANTHROPIC_API_KEY'),
  anthropicUpstreamUrl: stringSetting('SVC_ANTHROPIC_UPSTREAM_URL', { default: 'https://api.anthropic.com', pattern: /^https?:\/\/\S+$/ }),
  openaiApiKey: optionalStringSetting('SVC_OPENAI_API_KEY'),
  openaiUpstreamUrl: stringSetting('SVC_OPENAI_UPSTREAM_URL', { default: 'https://api.openai.com', pattern: /^https?:\/\/\S+$/ }),
  geminiApiKey: optionalStringSetting('SVC_GEMINI_API_KEY'),
  geminiUpstreamUrl: stringSetting('SVC_GEMINI_UPSTREAM_URL', { default: 'https://generativelanguage.googleapis.com', pattern: /^https?:\/\/\S+$/ }),
  /** Tokens for git hosts (`SVC_GIT_CREDENTIALS`): the git proxy adds them to the agents' fetches and pushes (docs/workspace.md). */
  ...gitCredentialSettings,
  /** The most one push through the git proxy may carry (its pack is read before it is decided). */
  gitPushMaxBytes: integerSetting('SVC_GIT_PUSH_MAX_BYTES', { default: 512 * 1024 * 1024, min: 1024 }),
  /**
   * Endpoints no egress tunnel may reach whatever any rule says, beside NATS (SVC_NATS_URL), the
   * store (SVC_DATABASE_URL) and the gateway's own ports: other internal services (`host:port`,
   * `host`, CIDR). Docs/egress.md "Addresses".
   */
  egressRefused: listSetting('SVC_EGRESS_REFUSED', { default: [] }),
  /**
   * Ranges that are the outside for this deployment though not public (a corporate network): a
   * tunnel there is decided by rules and people like one to a public address. Never NATS, the
   * store, the gateway or a metadata address. Default: none.
   */
  egressAllowedCidrs: cidrListSetting('SVC_EGRESS_ALLOWED_CIDRS'),
  /** The store's URL, read only so that no egress tunnel reaches it (the gateway never connects to it); unset: embedded PGlite, which has no address. */
  databaseUrl: optionalStringSetting('SVC_DATABASE_URL'),
};

export type GatewayConfig = ConfigOf<typeof gatewaySettings>;

/**
 * What `buildGatewayApp` is given: the settings every gateway needs, and the rest optional (a test
 * or a bench leaves unset what it does not exercise; each part fills in its own default).
 */
export type GatewaySettings = Pick<GatewayConfig, 'trustedProxies' | 'corsOrigins' | 'rateLimitMax' | 'rateLimitWindowMs' | 'bodyLimitBytes' | 'oidcAudience'> &
  Partial<StreamLimits> &
  Partial<
    Pick<
      GatewayConfig,
      | 'anthropicApiKey'
      | 'anthropicUpstreamUrl'
      | 'openaiApiKey'
      | 'openaiUpstreamUrl'
      | 'geminiApiKey'
      | 'geminiUpstreamUrl'
      | 'egressRefused'
      | 'gitCredentials'
      | 'gitPushMaxBytes'
      | 'egressAllowedCidrs'
      | 'databaseUrl'
      | 'natsUrl'
      | 'port'
      | 'workerPort'
      | 'healthPort'
      | 'publicUrl'
      | 'allowedHosts'
      | 'consoleDir'
      | 'localTokenTtlSeconds'
      | 'localUsers'
      | 'oidcIssuer'
      | 'consoleOidcClientId'
      | 'consoleOidcScope'
      | 'decisionLinkKey'
      | 'userAssertionKey'
      | 'coalesceWindowMs'
      | 'coalesceMaxEvents'
      | 'coalesceMaxBytes'
      | 'decisionWaitMs'
      | 'decisionTryMs'
    >
  >;
