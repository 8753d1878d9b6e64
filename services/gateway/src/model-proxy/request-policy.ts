import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import {
  ANTHROPIC_BETAS_PASSED,
  MODEL_PROXY_FORWARDED_HEADERS,
  MODEL_PROXY_REFUSED_HEADERS,
  MODEL_NAME_IN_PATH,
  MODEL_PROXY_ROUTES,
  type ModelApi,
  type ModelProxyRoute,
} from '@svc/protocol';

/**
 * Why a request is not passed: `not_allowed` is not inference (403); `invalid` cannot be read
 * (400); `too_large` (413); `busy`: the worker has as many requests in flight as it may (429,
 * worth retrying).
 */
export interface PolicyRefusal {
  kind: 'not_allowed' | 'invalid' | 'too_large' | 'busy';
  reason: string;
  /** The body's field that was refused (`tools[3].type`), for the history. */
  field?: string;
}

/** What the agent asked for, as it reached the gateway (nothing decoded). */
export interface ModelRequestLine {
  method: string;
  /** The path after `/v1/workers/{id}/model/{api}`, raw: `/v1/messages`. */
  path: string;
  /** The raw query string, without `?` (empty when there is none). */
  query: string;
}

/** The most of a refused path or header value quoted back (it is the agent's text). */
const QUOTED_CHARS = 120;
const quote = (text: string) => JSON.stringify(text.length > QUOTED_CHARS ? `${text.slice(0, QUOTED_CHARS)}…` : text);

const PASSED_BETAS: ReadonlySet<string> = new Set(ANTHROPIC_BETAS_PASSED);
const REFUSED_HEADERS: ReadonlySet<string> = new Set(MODEL_PROXY_REFUSED_HEADERS);

/**
 * Splits the gateway's raw request URL into the part the agent asked of the model API: the path
 * after `/v1/workers/{id}/model/{api}` and the query. Read from the raw URL, not the router's
 * decoded parameter, so that an encoded `/` or `..` is seen as the agent sent it.
 */
export function modelRequestLine(method: string, rawUrl: string): ModelRequestLine {
  const queryAt = rawUrl.indexOf('?');
  const rawPath = queryAt === -1 ? rawUrl : rawUrl.slice(0, queryAt);
  // ['', 'v1', 'workers', id, 'model', api, …the agent's path]
  const rest = rawPath.split('/').slice(6);
  return { method, path: `/${rest.join('/')}`, query: queryAt === -1 ? '' : rawUrl.slice(queryAt + 1) };
}

/** The model a route's `{model}` took from `path`, or undefined when `path` is not the route's. */
function matchRoute(route: ModelProxyRoute, path: string): { model?: string } | undefined {
  const at = route.path.indexOf('{model}');
  if (at === -1) return route.path === path ? {} : undefined;
  const before = route.path.slice(0, at);
  const after = route.path.slice(at + '{model}'.length);
  if (!path.startsWith(before) || !path.endsWith(after) || path.length < before.length + after.length) return undefined;
  const model = path.slice(before.length, path.length - after.length);
  return MODEL_NAME_IN_PATH.test(model) ? { model } : undefined;
}

/** The route a request may take (with the model its path names, if it does), or why it may not (docs/model-proxy.md, "What passes"). */
export function checkModelRequest(api: ModelApi, line: ModelRequestLine): { route: ModelProxyRoute; model?: string } | { refusal: PolicyRefusal } {
  const refuse = (reason: string) => ({ refusal: { kind: 'not_allowed' as const, reason } });
  // Nothing in the path may be encoded or relative: the upstream would decode or resolve it
  // into another path than the one checked here.
  if (line.path.includes('%')) return refuse(`the path ${quote(line.path)} holds percent-encoding, which the model proxy does not pass`);
  if (line.path.includes('\\')) return refuse(`the path ${quote(line.path)} holds a backslash`);
  const segments = line.path.split('/').slice(1);
  if (segments.some((segment) => segment === '..' || segment === '.'))
    return refuse(`the path ${quote(line.path)} holds a "." or ".." segment, which the model proxy does not pass`);
  let matched: { model?: string } | undefined;
  const route = MODEL_PROXY_ROUTES[api].find((candidate) => candidate.method === line.method && (matched = matchRoute(candidate, line.path)) !== undefined);
  if (!route) {
    const passed = MODEL_PROXY_ROUTES[api].map((candidate) => `${candidate.method} ${candidate.path}`).join(', ');
    return refuse(`${line.method} ${quote(line.path)} is not inference; the ${api} model proxy passes only ${passed}`);
  }
  const query = new URLSearchParams(line.query);
  for (const name of query.keys())
    if (!route.query.includes(name)) return refuse(`the query parameter ${quote(name)} is not passed on ${route.method} ${route.path}`);
  for (const [name, value] of Object.entries(route.requiredQuery ?? {}))
    if (query.getAll(name).length !== 1 || query.get(name) !== value)
      return refuse(`${route.method} ${route.path} is passed with ?${name}=${value} only, once (the model proxy meters that form of the answer)`);
  return { route, ...matched };
}

const forwardedBy = (api: ModelApi, name: string) =>
  MODEL_PROXY_FORWARDED_HEADERS[api].some((allowed) => (allowed.endsWith('-') ? name.startsWith(allowed) : name === allowed));

/**
 * The request headers to forward upstream, or why the request is refused: a header that moves the
 * key to another organisation or project, an `anthropic-beta` not on the list, a compressed body
 * (the proxy must read it). Other headers not on the API's list are dropped.
 */
export function forwardedRequestHeaders(api: ModelApi, headers: IncomingHttpHeaders): { headers: OutgoingHttpHeaders } | { refusal: PolicyRefusal } {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    if (REFUSED_HEADERS.has(name))
      return { refusal: { kind: 'not_allowed', reason: `the ${name} header is not passed: the control plane's key is used as the operator set it up` } };
    if (name === 'content-encoding' && String(value).trim().toLowerCase() !== 'identity')
      return {
        refusal: { kind: 'invalid', reason: `a request body with content-encoding ${quote(String(value))} is not passed: the model proxy reads the request` },
      };
    if (name === 'anthropic-beta' && api === 'anthropic') {
      const betas = String(value)
        .split(',')
        .map((beta) => beta.trim())
        .filter((beta) => beta !== '');
      const unlisted = betas.filter((beta) => !PASSED_BETAS.has(beta));
      if (unlisted.length > 0)
        return {
          refusal: {
            kind: 'not_allowed',
            reason: `the anthropic-beta feature${unlisted.length > 1 ? 's' : ''} ${unlisted.map(quote).join(', ')} ${unlisted.length > 1 ? 'are' : 'is'} not passed (docs/model-proxy.md lists those that are)`,
          },
        };
      out[name] = betas.join(',');
      continue;
    }
    if (forwardedBy(api, name)) out[name] = value;
  }
  return { headers: out };
}
