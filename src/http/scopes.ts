// Which OpenWOP scope (auth.md) each authenticated operation needs. Checked only for callers whose
// credential carries scopes (a token, with HANDOFF_OIDC_SCOPES_CLAIM set, or an API key given
// `scopes` in HANDOFF_API_KEYS' JSON form); other API keys hold them all.
// A route this table does not know is refused to a scoped caller (fail closed): a new route must
// be given its scope here. The table is documented in docs/security.md.
import type { FastifyRequest } from 'fastify';
import { A2A_REST_PATH } from '../a2a/codec/rest.js';
import { SCOPES, type Scope } from '../operation-scopes.js';

/** REST routes by `METHOD url` (Fastify's route URL, parameters as `:name`). */
const REST: ReadonlyArray<[RegExp, Scope]> = [
  [/^POST \/v1\/runs$/, SCOPES.runsCreate],
  [/^POST \/v1\/runs\/:id\/cancel$/, SCOPES.runsCancel],
  [/^POST \/v1\/runs\/:id\/(interrupts|approvals)\/:nodeId$/, SCOPES.approvalsRespond],
  [/^GET \/v1\/runs(\/|$)/, SCOPES.runsRead],
  [/^GET \/v1\/workflows(\/|$)/, SCOPES.manifestRead],
  [/^GET \/v1\/a2a\/tasks(\/:taskId)?$/, SCOPES.runsRead],
  // Outbound deliveries: webhook subscriptions, A2A push deliveries, gate notifications.
  [/^(POST \/v1\/webhooks|DELETE \/v1\/webhooks\/:webhookId)$/, SCOPES.webhooksManage],
  [/^(GET|POST) \/v1\/a2a\/deliveries(\/|$)/, SCOPES.webhooksManage],
  [/^(GET \/v1\/notifications|POST \/v1\/notifications\/:id\/retry)$/, SCOPES.webhooksManage],
  [/^GET \/v1\/audit$/, SCOPES.auditRead],
  // The RFC 0100 seams (HANDOFF_CONFORMANCE_FIXTURES=1), as the operations they stand for.
  [/^GET \/v1\/host\/sample\/a2a\/tasks\/:taskId$/, SCOPES.runsRead],
  [/^POST \/v1\/host\/sample\/a2a\/tasks\/start$/, SCOPES.runsCreate],
  [/^POST \/v1\/host\/sample\/a2a\/tasks\/push-config$/, SCOPES.webhooksManage],
];

/** A2A JSON-RPC methods of 0.3 and 1.0 by scope; a message's scope depends on its task (below). */
const RPC: ReadonlyArray<[ReadonlySet<string>, Scope]> = [
  [
    new Set(['tasks/get', 'tasks/list', 'tasks/resubscribe', 'GetTask', 'ListTasks', 'SubscribeToTask']),
    SCOPES.runsRead,
  ],
  [new Set(['tasks/cancel', 'CancelTask']), SCOPES.runsCancel],
  [new Set(['agent/getAuthenticatedExtendedCard', 'GetExtendedAgentCard']), SCOPES.manifestRead],
];
const RPC_MESSAGES = new Set(['message/send', 'message/stream', 'SendMessage', 'SendStreamingMessage']);
const RPC_PUSH = /^tasks\/pushNotificationConfig\/|TaskPushNotificationConfigs?$/;

function rpcScope(method: string, continuesTask: boolean): Scope | undefined {
  if (RPC_MESSAGES.has(method)) return continuesTask ? SCOPES.approvalsRespond : SCOPES.runsCreate;
  if (RPC_PUSH.test(method)) return SCOPES.webhooksManage;
  return RPC.find(([methods]) => methods.has(method))?.[1];
}

/** A2A HTTP+JSON paths below A2A_REST_PATH (and its optional tenant segment). */
function restScope(path: string, continuesTask: boolean): Scope | undefined {
  if (/^\/message:(send|stream)$/.test(path)) return continuesTask ? SCOPES.approvalsRespond : SCOPES.runsCreate;
  if (/^\/tasks\/[^/]+\/pushNotificationConfigs(\/[^/]+)?$/.test(path)) return SCOPES.webhooksManage;
  if (/^\/tasks\/[^/]+:cancel$/.test(path)) return SCOPES.runsCancel;
  if (/^\/tasks(\/[^/:]+(:subscribe)?)?$/.test(path)) return SCOPES.runsRead;
  if (path === '/extendedAgentCard') return SCOPES.manifestRead;
  return undefined;
}

/**
 * The scope the request needs; undefined when no scope grants it. A message into an existing task
 * answers a question the run asked (a gate), so it needs `approvals:respond` rather than `runs:create`.
 */
export function requiredScope(req: FastifyRequest): Scope | undefined {
  const route = `${req.method} ${req.routeOptions.url ?? ''}`;
  if (route === 'POST /v1/a2a') {
    // The JSON-RPC route parses its own body (a string here); a body that does not parse names no
    // method, so no scope grants it.
    const body = rpcBody(req.body);
    const method = typeof body?.method === 'string' ? body.method : '';
    return rpcScope(method, hasTask(body?.params?.message));
  }
  const path = req.url.split('?')[0] ?? '';
  if (path.startsWith(`${A2A_REST_PATH}/`)) {
    const rest = path.slice(A2A_REST_PATH.length);
    const message = (req.body as { message?: unknown } | undefined)?.message;
    // `/{tenant}/…` is the same operation as `/…`.
    return restScope(rest, hasTask(message)) ?? restScope(rest.replace(/^\/[^/]+/, ''), hasTask(message));
  }
  return REST.find(([pattern]) => pattern.test(route))?.[1];
}

function rpcBody(raw: unknown): { method?: unknown; params?: { message?: unknown } } | undefined {
  if (typeof raw !== 'string') return raw as { method?: unknown } | undefined;
  try {
    return JSON.parse(raw) as { method?: unknown };
  } catch {
    return undefined;
  }
}

const hasTask = (message: unknown): boolean => {
  const taskId = (message as { taskId?: unknown } | undefined)?.taskId;
  return typeof taskId === 'string' && taskId !== '';
};
