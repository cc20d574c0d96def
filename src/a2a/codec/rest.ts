// The HTTP+JSON (REST) binding of A2A 1.0: its routes, and each route's request as the neutral
// request. A route's path parameters, query and body are assembled into the 1.0 request message
// and decoded like a JSON-RPC one (v1_0.ts), so both bindings validate alike.
//
//   for (const r of REST_ROUTES) app.route({ method: r.method, url: A2A_REST_PATH + r.path, handler: … });
//   const req = decodeRestRequest(r.operation, { params: req.params, query: req.query, body: req.body });
//
// Paths are in Fastify's syntax: `::` is a literal colon, `(^[^:]+)` keeps a task id from
// swallowing the `:cancel` / `:subscribe` verb. Every route also exists under `/:tenant`.
import { invalidParams } from '../errors.js';
import type { Operation, RequestOf } from '../model.js';
import { decodeV1Request } from './v1_0.js';

/** Where the REST binding is mounted (beside the JSON-RPC endpoint `/v1/a2a`). */
export const A2A_REST_PATH = '/v1/a2a/rest';

export interface RestRoute {
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  operation: Operation;
  /** The HTTP status of a success: 201 for a created config, 204 (no body) for a delete. */
  status: 200 | 201 | 204;
}

const TASK = '/tasks/:id(^[^:]+)';
const CONFIGS = '/tasks/:taskId/pushNotificationConfigs';

const ROUTES: readonly RestRoute[] = [
  { method: 'POST', path: '/message::send', operation: 'send', status: 200 },
  { method: 'POST', path: '/message::stream', operation: 'stream', status: 200 },
  { method: 'GET', path: TASK, operation: 'get', status: 200 },
  { method: 'GET', path: '/tasks', operation: 'list', status: 200 },
  { method: 'POST', path: `${TASK}::cancel`, operation: 'cancel', status: 200 },
  // The proto says GET, the specification's text POST (A2A#1574, still open): both are served.
  { method: 'GET', path: `${TASK}::subscribe`, operation: 'subscribe', status: 200 },
  { method: 'POST', path: `${TASK}::subscribe`, operation: 'subscribe', status: 200 },
  { method: 'POST', path: CONFIGS, operation: 'push.create', status: 201 },
  { method: 'GET', path: CONFIGS, operation: 'push.list', status: 200 },
  { method: 'GET', path: `${CONFIGS}/:id`, operation: 'push.get', status: 200 },
  { method: 'DELETE', path: `${CONFIGS}/:id`, operation: 'push.delete', status: 204 },
  { method: 'GET', path: '/extendedAgentCard', operation: 'card.extended', status: 200 },
];

export const REST_ROUTES: readonly RestRoute[] = ROUTES.flatMap((r) => [r, { ...r, path: `/:tenant${r.path}` }]);

export interface RestInput {
  /** Path parameters (URL-decoded): `tenant`, `id`, `taskId` as the route names them. */
  params: Readonly<Record<string, string | undefined>>;
  query: Readonly<Record<string, unknown>>;
  body: unknown;
}

/** Query parameters each operation reads; numbers and booleans arrive as text. */
const QUERY: Readonly<Partial<Record<Operation, Readonly<Record<string, 'string' | 'integer' | 'boolean'>>>>> = {
  get: { historyLength: 'integer' },
  list: {
    contextId: 'string',
    status: 'string',
    pageSize: 'integer',
    pageToken: 'string',
    historyLength: 'integer',
    statusTimestampAfter: 'string',
    includeArtifacts: 'boolean',
  },
  'push.list': { pageSize: 'integer', pageToken: 'string' },
};

/** The query parameters an operation reads, by name and type (the OpenAPI document lists them). */
export const restQueryOf = (operation: Operation): Readonly<Record<string, 'string' | 'integer' | 'boolean'>> =>
  QUERY[operation] ?? {};

/** Operations whose request message is the body (the rest take none; a body sent to them is
 * ignored, as for a GET). */
const BODY_OPS: ReadonlySet<Operation> = new Set(['send', 'stream', 'cancel', 'push.create']);

/** The neutral request of a REST call; -32602 (HTTP 400) naming the field when malformed. */
export function decodeRestRequest<O extends Operation>(operation: O, input: RestInput): RequestOf[O] {
  const message: Record<string, unknown> = { ...bodyOf(operation, input.body), ...queryOf(operation, input.query) };
  // Path parameters are the request's fields too; a body that says otherwise is refused.
  for (const field of ['tenant', 'id', 'taskId'] as const) {
    const fromPath = input.params[field];
    if (fromPath === undefined) continue;
    const fromBody = message[field];
    if (fromBody !== undefined && fromBody !== '' && fromBody !== fromPath) {
      throw invalidParams(
        `${field}: the body says ${JSON.stringify(fromBody)} but the path says ${JSON.stringify(fromPath)}`,
        {
          errors: [{ path: field, message: 'differs from the path' }],
        },
      );
    }
    message[field] = fromPath;
  }
  return decodeV1Request(operation, message, '');
}

function bodyOf(operation: Operation, body: unknown): Record<string, unknown> {
  if (!BODY_OPS.has(operation)) return {};
  // Cancel may come without a body; a send may not, but its validation names what is missing.
  if (body === undefined || body === null || body === '') return {};
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw invalidParams('request body: must be a JSON object', {
      errors: [{ path: '', message: 'must be a JSON object' }],
    });
  }
  return body as Record<string, unknown>;
}

/** The operation's query parameters, typed where the text is well formed; anything else is left as
 * text for the schema to refuse with its own message. A repeated parameter is refused here. */
function queryOf(operation: Operation, query: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, type] of Object.entries(QUERY[operation] ?? {})) {
    const raw = query[name];
    // `?contextId=` is no filter, as an empty proto3 field is unset.
    if (raw === undefined || raw === '') continue;
    if (typeof raw !== 'string') {
      throw invalidParams(`${name}: must be given once`, { errors: [{ path: name, message: 'must be given once' }] });
    }
    out[name] = typed(raw, type);
  }
  return out;
}

function typed(raw: string, type: 'string' | 'integer' | 'boolean'): unknown {
  if (type === 'integer' && /^-?\d{1,10}$/.test(raw)) return Number(raw);
  if (type === 'boolean' && (raw === 'true' || raw === 'false')) return raw === 'true';
  return raw;
}
