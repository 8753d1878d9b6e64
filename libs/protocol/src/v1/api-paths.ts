/** A query string from the parameters that are set (`?a=1&b=2`, or nothing). */
function query(parameters: Record<string, string | number | undefined>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(parameters)) if (value !== undefined) search.set(name, String(value));
  const text = search.toString();
  return text ? `?${text}` : '';
}

const worker = (workerId: string) => `/v1/workers/${encodeURIComponent(workerId)}`;
const session = (sessionId: string) => `/v1/sessions/${encodeURIComponent(sessionId)}`;

/**
 * The v1 API's paths as clients build them (the sidecar, the CLI): spelled once, here, beside
 * the schemas of what they carry. The gateway's routes declare the same paths (`/v1/workers/:id/…`).
 */
export const apiPaths = {
  status: '/v1/status',
  localToken: '/v1/local/token',
  consoleSignIn: '/v1/console/sign-in',
  audit: (parameters: { after_seq?: number; limit?: number; format?: string } = {}) => `/v1/audit${query(parameters)}`,
  auditVerify: '/v1/audit/verify',
  sessions: (parameters: { limit?: number; offset?: number; status?: string } = {}) => `/v1/sessions${query(parameters)}`,
  session,
  /** A session's access list (docs/teams.md): PUT replaces it. */
  sessionAccess: (sessionId: string) => `${session(sessionId)}/access`,
  templates: '/v1/templates',
  /** What waits for the caller's decision across workers (docs/teams.md). */
  approvals: '/v1/approvals',
  webhooks: '/v1/webhooks',
  /** A signed decision link from a notification: GET confirms, POST decides (docs/webhooks.md). */
  decisionLink: (token: string) => `/v1/links${query({ token })}`,
  sessionLogs: (sessionId: string, parameters: { tail?: number } = {}) => `${session(sessionId)}/logs${query(parameters)}`,
  worker,
  sdkEvents: (workerId: string, parameters: { after_id?: string; before_id?: string; limit?: number; types?: string } = {}) =>
    `${worker(workerId)}/sdk-events${query(parameters)}`,
  eventStream: (workerId: string, afterId: string) => `${worker(workerId)}/sdk-events/stream${query({ after_id: afterId })}`,
  control: (workerId: string) => `${worker(workerId)}/control`,
  pendingInputs: (workerId: string, parameters: { after_id: string; wait_ms?: number; limit?: number }) =>
    `${worker(workerId)}/control/pending${query(parameters)}`,
  controlRequests: (workerId: string, parameters: { state?: string } = {}) => `${worker(workerId)}/control/requests${query(parameters)}`,
  permissionRules: (workerId: string) => `${worker(workerId)}/permission-rules`,
  /** Every "always" rule the caller may see (docs/teams.md, "Rules"); `rule(id)` to revoke one. */
  rules: (parameters: { scope?: string; tool?: string; q?: string; worker_id?: string } = {}) => `/v1/rules${query(parameters)}`,
  rule: (ruleId: string) => `/v1/rules/${encodeURIComponent(ruleId)}`,
  /** Rules proposed from the decision log, and a candidate policy replayed over it (docs/policy.md). */
  policySuggestions: (parameters: { template: string; min_evidence?: number; last?: number }) => `/v1/policy/suggestions${query(parameters)}`,
  policyReplay: '/v1/policy/replay',
  messages: (workerId: string) => `${worker(workerId)}/messages`,
  /** An image of a person's message, by its SHA-256 (hex). */
  messageImage: (workerId: string, sha256: string) => `${worker(workerId)}/messages/images/${encodeURIComponent(sha256)}`,
  interrupt: (workerId: string) => `${worker(workerId)}/interrupt`,
  /** The workspace's changes (docs/workspace.md): GET for people, PUT for the worker's sidecar. */
  changes: (workerId: string) => `${worker(workerId)}/changes`,
  changesDiff: (workerId: string, parameters: { path?: string | undefined; full?: boolean | undefined } = {}) =>
    `${worker(workerId)}/changes/diff${query({ path: parameters.path, full: parameters.full ? 'true' : undefined })}`,
  changesPush: (workerId: string) => `${worker(workerId)}/changes/push`,
  /** Ask the sidecar to report the workspace's changes now. */
  changesRefresh: (workerId: string) => `${worker(workerId)}/changes/refresh`,
  pullRequest: (workerId: string) => `${worker(workerId)}/changes/pull-request`,
  /** A file of the workspace (a path relative to it, its segments encoded one by one). */
  workspaceFile: (workerId: string, filePath: string) => `${worker(workerId)}/files/${filePath.split('/').map(encodeURIComponent).join('/')}`,
  /** A person's terminal into the sandbox (a WebSocket). */
  terminal: (workerId: string, parameters: { cols?: number; rows?: number } = {}) => `${worker(workerId)}/terminal${query(parameters)}`,
  /** The sandbox's end of a terminal (a WebSocket the sidecar opens). */
  sandboxTerminal: (workerId: string, terminalId: string) => `${worker(workerId)}/terminals/${encodeURIComponent(terminalId)}`,
  /** A model request the worker's sidecar forwarded (`MODEL_REQUEST_ID_HEADER`): DELETE says its agent gave it up. */
  modelRequest: (workerId: string, requestId: string) => `${worker(workerId)}/model-requests/${encodeURIComponent(requestId)}`,
  /** The git proxy's base, for the worker's sidecar: git's smart-HTTP paths follow it. */
  gitProxy: (workerId: string) => `${worker(workerId)}/git`,
} as const;
