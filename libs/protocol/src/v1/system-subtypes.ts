/**
 * Every `subtype` a `system` event of svc's own may carry, in one place: producers use these names,
 * readers (the CLI, the session service, tests) match on them. An agent's own system messages
 * keep the agent's word for them (Claude Code's `init`, say).
 */
export const SYSTEM_SUBTYPES = {
  /** The sidecar started the agent (`details.pid`, `details.adapter`). */
  agentStart: 'agent_start',
  /** The agent exited (`details.code`, `details.signal`): the worker's last event, unless `details.resumable` (a message starts it again). */
  agentExit: 'agent_exit',
  /** One step of the spawn pipeline (`details.step`, `details.status`, `details.duration_ms`). */
  spawnStep: 'spawn_step',
  /** A template warning found while validating the spawn. */
  templateWarning: 'template_warning',
  /** The agent took back a control request (`details.request_id`). */
  controlWithdrawn: 'control_withdrawn',
  /** A network tunnel the gateway opened or refused for the agent. */
  egress: 'egress',
  /** A person's message to the agent (`message` the text, `details.message_id`): docs/conversations.md. */
  personMessage: 'person_message',
  /** The sidecar could not hand a person's message to the agent (`details.message_id`; `message` says why). */
  messageUndelivered: 'message_undelivered',
  /** A person asked to end the agent's current turn (`details.interrupt_id`): docs/conversations.md. */
  personInterrupt: 'person_interrupt',
  /** The sidecar could not interrupt the agent (`details.interrupt_id`; `message` says why). */
  interruptUndelivered: 'interrupt_undelivered',
  /** The agent's activity changed (`details.activity`: `working`, `waiting_for_decision`, `idle`, `suspended`): the sidecar's word. */
  activity: 'activity',
  /** A push through the git proxy, made or refused (`details.ref`, `details.request_id`): docs/workspace.md. */
  gitPush: 'git_push',
  /** The workspace's changes against its base, as its sidecar reported them (`details.files`, `details.additions`, `details.deletions`). */
  workspaceChanges: 'workspace_changes',
  /** A person pushed the work branch (`details.branch`, `details.commit`, `details.by`), or opened a pull request (`details.pull_request_url`). */
  workspacePushed: 'workspace_pushed',
  /** A person asked for the workspace's changes now (`POST …/changes/refresh`): the sidecar reports them. */
  changesRequested: 'changes_requested',
  /** A person opened a terminal in the sandbox (`details.terminal_id`, `cols`, `rows`): the sidecar connects it. */
  terminalRequested: 'terminal_requested',
  /** A person's vote on a request whose approval route asks a quorum (`details.request_id`, `voter`, `allows`, `quorum`): docs/teams.md. */
  approvalVote: 'approval_vote',
  /** A request offered to its route's `escalate_to` (`details.request_id`, `to`, `rule`), its deadline still binding. */
  requestEscalated: 'request_escalated',
  /** The model proxy refused a request: the session's budget is spent. */
  modelBudgetExhausted: 'model_budget_exhausted',
  /** The model proxy answered a request asked again with the answer it kept of the first ask, which the agent went away from: the model was not asked twice. */
  modelAnswerReplayed: 'model_answer_replayed',
  /** The model proxy could not reach the model's API. */
  modelUpstreamFailed: 'model_upstream_failed',
  /** The model proxy refused a request that is not inference, or whose budget is held (`details.reason`). */
  modelRequestRefused: 'model_request_refused',
  /** The control plane refused an event the sidecar sent (it is dropped, said here). */
  eventRefused: 'event_refused',
  /** The agent started (its model, session, settings). */
  init: 'init',
  /** An error the agent reported. */
  agentError: 'agent_error',
  /** A line of the agent's output that the adapter could not read as an event. */
  unparsedLine: 'unparsed_line',
  /** Claude Code: an assistant block of a kind svc has no event for. */
  assistantBlock: 'assistant_block',
  /** Claude Code: a user message in the transcript. */
  userMessage: 'user_message',
  /** Claude Code: a control request of the agent's that is not a tool permission. */
  agentControlRequest: 'agent_control_request',
  /** Claude Code: the agent's answer to a control request of the sidecar's. */
  agentControlResponse: 'agent_control_response',
  /** An ACP agent's plan (`details.entries`: `{content, priority, status}`). */
  agentPlan: 'plan',
  /** An ACP agent's word on its context window (`details.used`, `size`, `cost`): the model proxy's figures are the ones billed. */
  agentUsage: 'agent_usage',
  /** A notice an ACP agent gave (its title and description). */
  agentNotice: 'agent_notice',
  /** An ACP agent changed its mode (`message` names it). */
  agentMode: 'agent_mode',
  /** Codex: the sandbox and approval settings the sidecar chose. */
  codexSettings: 'codex_settings',
  /** Codex: its own sandbox cannot start here. */
  codexSandboxUnavailable: 'codex_sandbox_unavailable',
  /** Codex: an item svc has no event for. */
  codexItem: 'codex_item',
  /** Codex: a notification svc has no event for. */
  codexNotification: 'codex_notification',
  /** Codex: a request the sidecar does not answer. */
  unansweredRequest: 'unanswered_request',
} as const;
