import Type, { type Static } from 'typebox';
import Value from 'typebox/value';
import { parse as parseToml, TomlError } from 'smol-toml';
import { approvalRouteProblems, type GroupMembers } from './approval-routes.js';
import {
  AccessEntrySchema,
  APPROVAL_LIMITS,
  ApprovalRouteSchema,
  ACCESS_MAX_ENTRIES,
  CodedError,
  createChecker,
  describeFieldErrors,
  ENV_NAME_PATTERN,
  EGRESS_TOOL,
  egressPatternProblem,
  EgressRuleSchema,
  EnvironmentVariables,
  GitName,
  ModelApiSchema,
  DEFAULT_IDLE_TIMEOUT_S,
  DEFAULT_KEEP_SANDBOX_S,
  SESSION_MODES,
  quoteRule,
  ruleLimitProblem,
  SIDECAR_ADAPTERS,
  splitEgressRule,
  splitToolRule,
  type FieldError,
} from '@svc/protocol';
import { parseCidr } from '@svc/service-kit';

const EnvName = Type.String({ pattern: ENV_NAME_PATTERN });
const ToolRules = Type.Array(Type.String({ minLength: 1, maxLength: 1024 }), { default: [] });
/** A path inside the sandbox: absolute, without `.`, `..` or empty segments. */
const SandboxPath = Type.String({ pattern: '^(/(?!\\.\\.?(/|$))[A-Za-z0-9._@+-]+)+$', maxLength: 1024 });

/** A ref or branch name as git takes it on a command line: never an option (a leading `-`), no spaces or control characters. */
/** Who may make an override of a template's (docs/sessions.md "Overrides"): everyone, people with the admin claim, or no one. */
const OVERRIDE_PERMISSIONS = ['anyone', 'admins', 'nobody'] as const;

/**
 * A session template (TOML): what to run and how the sidecar treats it. The file's name is the
 * template's name. Only these keys exist; an unknown one is an error naming it.
 */
const TemplateSchema = Type.Object(
  {
    description: Type.String({ default: '' }),
    agent: Type.Object(
      {
        /** The agent's program, found on the sandbox's PATH or given absolutely. */
        command: Type.String({ minLength: 1 }),
        args: Type.Array(Type.String(), { default: [] }),
        /** The container image of the sandbox (the kubernetes provider; the local one ignores it). */
        image: Type.Optional(Type.String({ minLength: 1 })),
        env: EnvironmentVariables("The agent's environment."),
        /** Variables copied from the session service's own environment (e.g. an API key); spawning fails if one is unset. */
        pass_env: Type.Array(EnvName, { default: [] }),
        /** Copied too when set (e.g. a proxy's base URL); no error when unset. */
        pass_env_optional: Type.Array(EnvName, { default: [] }),
        /** The agent's working directory in the sandbox. */
        cwd: Type.Optional(SandboxPath),
        /** The first message, when the session request gives none. */
        prompt: Type.Optional(Type.String()),
      },
      { additionalProperties: false },
    ),
    /**
     * The model API the agent uses. The control plane holds its key: the agent gets a base URL
     * on its sandbox's loopback (the sidecar's model proxy) and a placeholder key, and the proxy
     * meters every request and enforces the budget.
     */
    model: Type.Optional(
      Type.Object(
        {
          api: ModelApiSchema,
          max_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
          max_cost_usd: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
        },
        { additionalProperties: false },
      ),
    ),
    /** How the agent runs (docs/conversations.md). */
    session: Type.Object(
      {
        /**
         * `conversation`: the agent stays up between turns and takes people's messages;
         * `one_shot` (the default, as every template ran before conversations): one prompt, one run.
         */
        mode: Type.Enum(SESSION_MODES, { default: 'one_shot' }),
        /** In a conversation, an agent idle this long is stopped and the worker suspended: a message resumes it. */
        idle_timeout_s: Type.Integer({ minimum: 1, maximum: 30 * 24 * 3600, default: DEFAULT_IDLE_TIMEOUT_S }),
        /** A suspended worker's sandbox (its workspace, the agent's conversation) is kept this long; then the worker ends. */
        keep_sandbox_s: Type.Integer({ minimum: 1, maximum: 90 * 24 * 3600, default: DEFAULT_KEEP_SANDBOX_S }),
      },
      { additionalProperties: false, default: {} },
    ),
    /** The sandbox's boundary. */
    sandbox: Type.Object(
      {
        /**
         * No network but loopback, and one channel to the gateway (the default). A provider that
         * cannot seal a sandbox refuses the template unless its operator opted in.
         */
        sealed: Type.Boolean({ default: true }),
        /**
         * What else the agent may reach (`host:port`, `*` globs; the host may be an IP address or
         * a CIDR): through the gateway, without asking. Anything else it tries is asked like a tool
         * call (`network`). Only an entry naming an address itself opens a loopback, private or
         * link-local one (docs/egress.md). Sealed sandboxes only.
         */
        egress: Type.Array(EgressRuleSchema, { default: [] }),
      },
      { additionalProperties: false, default: {} },
    ),
    /**
     * A repository cloned into /workspace before the agent starts (docs/workspace.md), with the
     * credential the control plane holds for its host (`SVC_GIT_CREDENTIALS`): none enters the sandbox.
     */
    workspace: Type.Optional(
      Type.Object(
        {
          /** `https://host/path` (`http://` too, for a server on loopback); never with a user or password in it. */
          repo: Type.String({ minLength: 1, maxLength: 2048 }),
          /** A branch, tag or commit; unset: the remote's default branch. */
          ref: Type.Optional(GitName),
          /** The branch the work goes to; unset: `svc/<session id>`. */
          branch: Type.Optional(GitName),
          /** A shallow clone of this many commits; unset: the whole history. */
          depth: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
        },
        { additionalProperties: false },
      ),
    ),
    /** Files written into the sandbox before the agent starts (e.g. a workspace's README). */
    files: Type.Array(
      Type.Object(
        { path: SandboxPath, content: Type.String(), mode: Type.Integer({ minimum: 0, maximum: 0o777, default: 0o644 }) },
        { additionalProperties: false },
      ),
      { default: [] },
    ),
    /** How long an ended session's events are kept (docs/event-ingest.md "Retention"). */
    retention: Type.Optional(
      Type.Object(
        {
          /** Days after the session ended; 0 keeps them. Unset: `SVC_EVENT_RETENTION_DAYS`. */
          events_days: Type.Optional(Type.Integer({ minimum: 0, maximum: 36_500 })),
        },
        { additionalProperties: false },
      ),
    ),
    /** Which requests go to whom (`[[approvals.route]]`, docs/teams.md); a request no route matches goes to the session's approvers. */
    approvals: Type.Object(
      { route: Type.Array(ApprovalRouteSchema, { maxItems: APPROVAL_LIMITS.routes, default: [] }) },
      { additionalProperties: false, default: {} },
    ),
    /** Who besides the owner may see or act on its sessions, and as what (docs/teams.md); a session adds its own. */
    access: Type.Array(AccessEntrySchema, { maxItems: ACCESS_MAX_ENTRIES, default: [] }),
    /** Who may change this template's settings for one session (`POST /v1/sessions` `overrides`). */
    overrides: Type.Object(
      {
        /**
         * Who may turn autonomous mode on (`overrides.autonomous: true`) when the template is not
         * autonomous: nobody is asked then, and every egress tunnel nothing denies opens.
         */
        autonomous: Type.Enum(OVERRIDE_PERMISSIONS, { default: 'admins' }),
        /**
         * Who may name another repository (`overrides.workspace.repo`): it is cloned and pushed
         * with the control plane's token for its host, so by default nobody may.
         */
        workspace_repo: Type.Enum(OVERRIDE_PERMISSIONS, { default: 'nobody' }),
        /** Who may name another ref to start from (`overrides.workspace.ref`). */
        workspace_ref: Type.Enum(OVERRIDE_PERMISSIONS, { default: 'anyone' }),
        /** Who may name another work branch (`overrides.workspace.branch`). */
        workspace_branch: Type.Enum(OVERRIDE_PERMISSIONS, { default: 'anyone' }),
      },
      { additionalProperties: false, default: {} },
    ),
    /** The sidecar (step 6.5 of the spawn); without it, the spawn skips that step. */
    sidecar: Type.Optional(
      Type.Object(
        {
          adapter: Type.Enum(SIDECAR_ADAPTERS),
          auto_approve: ToolRules,
          deny: ToolRules,
          ask: ToolRules,
          autonomous: Type.Boolean({ default: false }),
          decision_timeout_s: Type.Integer({ minimum: 1, maximum: 7 * 24 * 3600, default: 600 }),
          on_timeout: Type.Enum(['deny', 'allow'], { default: 'deny' }),
          poll_interval_ms: Type.Integer({ minimum: 10, maximum: 60_000, default: 1000 }),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
export type Template = Static<typeof TemplateSchema> & {
  name: string;
  source: string;
  /** What still works but should change (e.g. a model key passed into the sandbox). */
  warnings: string[];
};

/** Variable names that hold a credential: passing one into a sandbox hands it to the agent. */
const CREDENTIAL_NAME = /(^|_)(API_?KEY|TOKEN|SECRET|PASSWORD|CREDENTIALS?)$/;

function warningsOf(template: Static<typeof TemplateSchema>, source: string): string[] {
  return [...template.agent.pass_env, ...template.agent.pass_env_optional]
    .filter((name) => CREDENTIAL_NAME.test(name))
    .map(
      (name) =>
        `${source}: /agent/pass_env hands ${name} to the agent inside its sandbox; this is deprecated: name the model API instead ([model] api = "anthropic", "openai" or "gemini") and give the key to the control plane (SVC_ANTHROPIC_API_KEY, SVC_OPENAI_API_KEY, SVC_GEMINI_API_KEY on the gateway), which never lets it into a sandbox`,
    );
}

const checker = createChecker<Static<typeof TemplateSchema>>(TemplateSchema);

/**
 * The rules beyond the caps on length and wildcards (docs/sidecar.md "Rule syntax"), and the
 * `host:port` patterns (egress list entries, `network(…)` patterns) that would name no target
 * (docs/egress.md "Rules"), each named by its key and text.
 */
function ruleProblems(template: Static<typeof TemplateSchema>): FieldError[] {
  const { sandbox, sidecar } = template;
  const lists: Record<string, readonly string[]> = {
    '/sandbox/egress': sandbox.egress,
    ...(sidecar ? { '/sidecar/auto_approve': sidecar.auto_approve, '/sidecar/deny': sidecar.deny, '/sidecar/ask': sidecar.ask } : {}),
  };
  return Object.entries(lists).flatMap(([key, rules]) =>
    rules.flatMap((rule, index) => {
      const hostPort = key === '/sandbox/egress' ? rule : networkPattern(rule);
      const problem = ruleLimitProblem(rule) ?? (hostPort === undefined ? undefined : (egressPatternProblem(hostPort) ?? cidrProblem(hostPort)));
      return problem === undefined ? [] : [{ field: `${key}/${index}`, message: `(the rule ${quoteRule(rule)}) ${problem}` }];
    }),
  );
}

/** The `host:port` pattern of a `network(…)` rule; undefined for `network` alone (every target) and another tool's rule. */
function networkPattern(rule: string): string | undefined {
  const { tool, pattern } = splitToolRule(rule);
  return tool === EGRESS_TOOL ? pattern : undefined;
}

/** What is wrong with a `host:port` rule whose host is meant as a CIDR (it holds a `/`), or undefined. */
function cidrProblem(hostPort: string | undefined): string | undefined {
  const host = hostPort === undefined ? undefined : splitEgressRule(hostPort)?.host;
  if (host === undefined || !host.includes('/')) return undefined;
  return parseCidr(host.replace(/[[\]]/g, '')) ? undefined : `names "${host}", which is no CIDR (10.0.0.0/8, [fd00::]/8)`;
}

/** What is wrong with a repository URL, or undefined: http(s) only, and no credential in it (it would reach the sandbox's .git/config). */
export function repositoryUrlProblem(repo: string): string | undefined {
  let url: URL;
  try {
    url = new URL(repo);
  } catch {
    return `is no URL: ${JSON.stringify(repo)}`;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return `must be an https:// URL (git's smart HTTP), not ${url.protocol}`;
  if (url.username || url.password) return 'must not hold a user or password: the control plane adds the credential for its host (SVC_GIT_CREDENTIALS)';
  return undefined;
}

/**
 * Parses and validates one template. Errors are `invalid_template` and name the file and each
 * bad key (`templates/x.toml: /sidecar/adapter must be …`), so the author can fix it at once.
 */
export function parseTemplate(name: string, text: string, source: string, groups: GroupMembers = new Map()): Template {
  let raw: unknown;
  try {
    raw = parseToml(text);
  } catch (err) {
    const where = err instanceof TomlError ? ` (line ${err.line}, column ${err.column})` : '';
    throw new CodedError('invalid_template', `${source}: not valid TOML${where}: ${(err as Error).message.split('\n')[0]}`, { file: source });
  }
  const withDefaults = Value.Default(TemplateSchema, raw);
  const checked = checker.check(withDefaults);
  if (!checked.ok) {
    throw new CodedError('invalid_template', `${source}: ${describeFieldErrors(checked.errors)}`, { file: source, fields: checked.errors });
  }
  const overCap = [...ruleProblems(checked.value), ...approvalRouteProblems(checked.value.approvals.route, checked.value.sidecar, groups)];
  if (overCap.length > 0) {
    throw new CodedError('invalid_template', `${source}: ${describeFieldErrors(overCap)}`, { file: source, fields: overCap });
  }
  const repoProblem = checked.value.workspace && repositoryUrlProblem(checked.value.workspace.repo);
  if (repoProblem) throw new CodedError('invalid_template', `${source}: /workspace/repo ${repoProblem}`, { file: source });
  if (checked.value.model && !checked.value.sidecar) {
    throw new CodedError('invalid_template', `${source}: /model needs a [sidecar] section (the sidecar serves the agent's model proxy)`, { file: source });
  }
  return { ...checked.value, name, source, warnings: warningsOf(checked.value, source) };
}
