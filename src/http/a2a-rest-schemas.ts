// The TypeBox schemas of the A2A 1.0 HTTP+JSON binding (routes/a2a-rest.ts): the 1.0 wire objects in
// ProtoJSON (codec/v1_0.ts), the google.rpc.Status error body, and each route's documentation
// (operationId, summary, params, query, body, a response per status). Bodies are
// `application/a2a+json`. Like the JSON-RPC route, the REST routes validate nothing by these
// schemas: the codec decodes and checks each request, so a malformed one is the binding's own
// google.rpc.Status error, not Fastify's.
import { type TSchema, Type } from '@sinclair/typebox';
import { A2A_ERROR_DOMAIN } from '../a2a/codec/error-forms.js';
import type { Operation } from '../a2a/model.js';
import { type RestRoute, restQueryOf } from '../a2a/codec/rest.js';
import { AgentCardV1 } from './a2a-schemas.js';
import { OpenObject } from './schemas.js';

export const A2A_JSON = 'application/a2a+json';

const Metadata = () => Type.Optional(OpenObject('Free-form metadata (`metadata.openwop` carries the OpenWOP view).'));

export const RpcStatus = Type.Object(
  {
    error: Type.Object(
      {
        code: Type.Integer({ description: 'The HTTP status of the response.' }),
        status: Type.String({ description: 'google.rpc.Code name, e.g. `NOT_FOUND`, `INVALID_ARGUMENT`.' }),
        message: Type.String(),
        details: Type.Array(
          Type.Object(
            {
              '@type': Type.String({
                description:
                  '`type.googleapis.com/google.rpc.ErrorInfo` (always first) or `…/google.rpc.BadRequest` ' +
                  '(the field violations of an invalid request).',
              }),
              reason: Type.Optional(
                Type.String({ description: 'ErrorInfo: the A2A error, e.g. `TASK_NOT_FOUND`, `INVALID_PARAMS`.' }),
              ),
              domain: Type.Optional(Type.Literal(A2A_ERROR_DOMAIN)),
              metadata: Type.Optional(Type.Record(Type.String(), Type.String())),
              fieldViolations: Type.Optional(
                Type.Array(Type.Object({ field: Type.String(), description: Type.String() })),
              ),
            },
            { additionalProperties: true },
          ),
          { minItems: 1 },
        ),
      },
      { additionalProperties: false },
    ),
  },
  {
    $id: 'RpcStatus',
    additionalProperties: false,
    description:
      'An A2A 1.0 HTTP+JSON error: google.rpc.Status with a google.rpc.ErrorInfo (domain `a2a-protocol.org`). ' +
      'The host’s own refusals (auth, quotas, body limits, media type) take the same shape, their reason the ' +
      'OpenWOP code in capitals (e.g. `UNAUTHENTICATED`, `RATE_LIMITED`).',
  },
);

export const PartV1 = Type.Object(
  {
    text: Type.Optional(Type.String()),
    raw: Type.Optional(Type.String({ description: 'Bytes, base64.' })),
    url: Type.Optional(Type.String()),
    data: Type.Optional(Type.Unknown({ description: 'Any JSON value.' })),
    filename: Type.Optional(Type.String()),
    mediaType: Type.Optional(Type.String()),
    metadata: Metadata(),
  },
  { $id: 'PartV1', additionalProperties: true, description: 'Exactly one of text, raw, url, data.' },
);

const Role = Type.Union([Type.Literal('ROLE_USER'), Type.Literal('ROLE_AGENT')]);

export const MessageV1 = Type.Object(
  {
    messageId: Type.String(),
    contextId: Type.Optional(Type.String()),
    taskId: Type.Optional(Type.String()),
    role: Role,
    parts: Type.Array(Type.Ref('PartV1')),
    metadata: Metadata(),
    extensions: Type.Optional(Type.Array(Type.String())),
    referenceTaskIds: Type.Optional(Type.Array(Type.String())),
  },
  { $id: 'MessageV1', additionalProperties: true },
);

const STATES = [
  'SUBMITTED',
  'WORKING',
  'COMPLETED',
  'FAILED',
  'CANCELED',
  'INPUT_REQUIRED',
  'REJECTED',
  'AUTH_REQUIRED',
];

export const TaskV1 = Type.Object(
  {
    id: Type.String({ description: 'The task id, equal to the OpenWOP runId.' }),
    contextId: Type.String(),
    status: Type.Object(
      {
        state: Type.Union(STATES.map((s) => Type.Literal(`TASK_STATE_${s}`))),
        message: Type.Optional(Type.Ref('MessageV1')),
        timestamp: Type.Optional(Type.String({ format: 'date-time' })),
      },
      { additionalProperties: true },
    ),
    artifacts: Type.Optional(
      Type.Array(
        Type.Object(
          {
            artifactId: Type.String(),
            name: Type.Optional(Type.String()),
            description: Type.Optional(Type.String()),
            parts: Type.Array(Type.Ref('PartV1')),
            metadata: Metadata(),
          },
          { additionalProperties: true },
        ),
      ),
    ),
    history: Type.Optional(Type.Array(Type.Ref('MessageV1'))),
    metadata: Metadata(),
  },
  { $id: 'TaskV1', additionalProperties: true, description: 'An A2A 1.0 Task (ProtoJSON).' },
);

export const SendMessageResponseV1 = Type.Union(
  [
    Type.Object({ task: Type.Ref('TaskV1') }, { additionalProperties: false }),
    Type.Object({ message: Type.Ref('MessageV1') }, { additionalProperties: false }),
  ],
  { $id: 'SendMessageResponseV1', description: 'The task the message started or resumed (or a direct message).' },
);

export const ListTasksResponseV1 = Type.Object(
  {
    tasks: Type.Array(Type.Ref('TaskV1')),
    nextPageToken: Type.String({ description: 'Pass as `pageToken` for the next page; empty on the last.' }),
    pageSize: Type.Integer(),
    totalSize: Type.Integer({ description: 'Tasks matching the filter, all pages.' }),
  },
  { $id: 'ListTasksResponseV1', additionalProperties: false },
);

const pushConfigFields = {
  url: Type.String({
    description:
      'Where the pushes are POSTed; a private or loopback address is refused unless HANDOFF_PUSH_ALLOW_CIDRS allows it.',
  }),
  token: Type.Optional(Type.String({ description: 'Echoed on every delivery (X-A2A-Notification-Token).' })),
  authentication: Type.Optional(
    Type.Object(
      {
        scheme: Type.String({ description: 'An HTTP auth scheme, e.g. `Bearer`.' }),
        credentials: Type.Optional(Type.String({ description: 'Sent as `Authorization: <scheme> <credentials>`.' })),
      },
      { additionalProperties: true },
    ),
  ),
};

export const PushConfigV1 = Type.Object(
  { id: Type.String(), taskId: Type.String(), ...pushConfigFields },
  { $id: 'PushConfigV1', additionalProperties: true, description: 'A2A 1.0 TaskPushNotificationConfig.' },
);

export const PushConfigListV1 = Type.Object(
  { configs: Type.Array(Type.Ref('PushConfigV1')), nextPageToken: Type.String() },
  { $id: 'PushConfigListV1', additionalProperties: false },
);

export const A2A_REST_SCHEMAS: TSchema[] = [
  RpcStatus,
  PartV1,
  MessageV1,
  TaskV1,
  SendMessageResponseV1,
  ListTasksResponseV1,
  PushConfigV1,
  PushConfigListV1,
];

// ---------------------------------------------------------------- request bodies (documented only)

const SendMessageBody = Type.Object(
  {
    message: Type.Ref('MessageV1'),
    configuration: Type.Optional(
      Type.Object(
        {
          returnImmediately: Type.Optional(Type.Boolean({ description: 'Answer at once with the submitted task.' })),
          historyLength: Type.Optional(Type.Integer({ minimum: 0 })),
          acceptedOutputModes: Type.Optional(Type.Array(Type.String())),
          taskPushNotificationConfig: Type.Optional(OpenObject('A push config to register with the task.')),
        },
        { additionalProperties: true },
      ),
    ),
    metadata: Metadata(),
  },
  { additionalProperties: true, description: 'SendMessageRequest.' },
);

const CancelBody = Type.Object({ metadata: Metadata() }, { additionalProperties: true });

const PushConfigBody = Type.Object(
  { id: Type.Optional(Type.String()), taskId: Type.Optional(Type.String()), ...pushConfigFields },
  { additionalProperties: true, description: 'The config; `taskId`, when given, must equal the path’s.' },
);

const BODIES: Partial<Record<Operation, TSchema>> = {
  send: SendMessageBody,
  stream: SendMessageBody,
  cancel: CancelBody,
  'push.create': PushConfigBody,
};

// ---------------------------------------------------------------- responses

const a2aJson = (description: string, id: string, headers?: Record<string, string>) =>
  Type.Unsafe({
    description,
    content: { [A2A_JSON]: { schema: { $ref: id } } },
    ...(headers
      ? {
          headers: Object.fromEntries(
            Object.entries(headers).map(([name, d]) => [name, { type: 'string', description: d }]),
          ),
        }
      : {}),
  });

const failure = (description: string, headers?: Record<string, string>) => a2aJson(description, 'RpcStatus', headers);
const RETRY_AFTER = { 'Retry-After': 'Seconds to wait before trying again.' };

const SSE = Type.Unsafe({
  description:
    'A stream of A2A 1.0 StreamResponse objects, one per SSE event (`data:` one JSON object with exactly one of ' +
    '`task`, `message`, `statusUpdate`, `artifactUpdate`; `id:` the run event sequence, for `Last-Event-ID`). The ' +
    'stream ends when the task is terminal or interrupted. An error is an `event: error` whose data is a ' +
    'google.rpc.Status: after the first event, or as the one event of the answer when the request is refused ' +
    'before the stream opens (unknown task, invalid params, a finished task to subscribe to).',
  content: { 'text/event-stream': { schema: { type: 'string' } } },
});

interface Doc {
  id: string;
  summary: string;
  ok: TSchema;
}

const DOCS: Record<Operation, Doc> = {
  send: {
    id: 'SendMessage',
    summary: 'Send a message',
    ok: a2aJson('The task (or a message).', 'SendMessageResponseV1'),
  },
  stream: { id: 'SendStreamingMessage', summary: 'Send a message and stream the task', ok: SSE },
  get: { id: 'GetTask', summary: 'Get a task', ok: a2aJson('The task.', 'TaskV1') },
  list: {
    id: 'ListTasks',
    summary: 'List the caller’s tasks',
    ok: a2aJson(
      'One page of tasks: at most `pageSize`, and it ends early (with its `nextPageToken`) before its tasks would ' +
        'pass HANDOFF_LIST_MAX_BYTES of JSON (a larger task comes alone). History only with `historyLength`, ' +
        'artifacts only with `includeArtifacts`.',
      'ListTasksResponseV1',
    ),
  },
  cancel: { id: 'CancelTask', summary: 'Cancel a task', ok: a2aJson('The task, cancelled.', 'TaskV1') },
  subscribe: { id: 'SubscribeToTask', summary: 'Stream a task’s updates (the Task first)', ok: SSE },
  'push.create': {
    id: 'CreateTaskPushNotificationConfig',
    summary: 'Register a push config',
    ok: a2aJson('The config, with its id.', 'PushConfigV1'),
  },
  'push.get': {
    id: 'GetTaskPushNotificationConfig',
    summary: 'Get a push config',
    ok: a2aJson('The config.', 'PushConfigV1'),
  },
  'push.list': {
    id: 'ListTaskPushNotificationConfigs',
    summary: 'List a task’s push configs',
    ok: a2aJson('One page of configs.', 'PushConfigListV1'),
  },
  'push.delete': {
    id: 'DeleteTaskPushNotificationConfig',
    summary: 'Delete a push config',
    ok: Type.Unsafe({ description: 'Deleted (no body).', type: 'null' }),
  },
  'card.extended': {
    id: 'GetExtendedAgentCard',
    summary: 'The extended agent card (A2A 1.0)',
    ok: a2aJson('The card, as for an authenticated caller.', AgentCardV1.$id as string),
  },
};

const PARAM_TEXT: Record<string, string> = {
  tenant: 'The tenant, when it is in the path (the caller’s own; another tenant’s tasks are not found).',
  id: 'The task id (or, under pushNotificationConfigs, the config id).',
  taskId: 'The task id.',
};

/** The path parameters of a route in Fastify's syntax (`::` is a literal colon, `(…)` a regex). */
const pathParams = (path: string): string[] => [...path.matchAll(/(?<!:):(\w+)/g)].map((m) => m[1] as string);

const TYPES = { string: Type.String(), integer: Type.Integer(), boolean: Type.Boolean() } as const;

/** The OpenAPI description of one REST route (documentation only: see the top of this file). */
export function restRouteSchema(route: RestRoute) {
  const doc = DOCS[route.operation];
  const names = pathParams(route.path);
  const tenant = names.includes('tenant');
  const streams = route.operation === 'stream' || route.operation === 'subscribe';
  const body = BODIES[route.operation];
  const hasTask = names.includes('id') || names.includes('taskId');
  const query = Object.entries(restQueryOf(route.operation));
  const post = route.method === 'POST';
  return {
    operationId: `a2aRest${doc.id}${route.method === 'POST' && route.operation === 'subscribe' ? 'Post' : ''}${tenant ? 'ForTenant' : ''}`,
    tags: ['a2a'],
    summary: `A2A 1.0 HTTP+JSON: ${doc.summary}${tenant ? ' (tenant in the path)' : ''}`,
    description:
      'Requires `A2A-Version: 1.0` (header or query parameter); none means 0.3, which this binding does not serve ' +
      '(400 VERSION_NOT_SUPPORTED). Every error is a google.rpc.Status (`RpcStatus`).',
    params: Type.Object(Object.fromEntries(names.map((n) => [n, Type.String({ description: PARAM_TEXT[n] })]))),
    ...(query.length
      ? { querystring: Type.Object(Object.fromEntries(query.map(([n, t]) => [n, Type.Optional(TYPES[t])]))) }
      : {}),
    ...(body ? { body } : {}),
    response: {
      [route.status]: doc.ok,
      400: failure(
        (streams
          ? 'Refused before the stream opens (no stream byte is sent): malformed request (INVALID_PARAMS), version ' +
            'not served (VERSION_NOT_SUPPORTED), or a finished task (UNSUPPORTED_OPERATION).'
          : 'Malformed request (INVALID_PARAMS, with BadRequest field violations), version not served ' +
            '(VERSION_NOT_SUPPORTED), or an operation the task’s state refuses (TASK_NOT_CANCELABLE, ' +
            'UNSUPPORTED_OPERATION).') +
          (names.length > 0 ? ' A path that is not valid percent-encoding (BAD_URL).' : ''),
      ),
      401: failure('Missing or unknown API key (UNAUTHENTICATED).', {
        'WWW-Authenticate': '`Bearer realm="handoff"`',
      }),
      403: failure('A browser wrote from an origin that is not allowed (FORBIDDEN; HANDOFF_CORS_ORIGINS).'),
      ...(names.length > 0 ? { 414: failure('A path segment longer than 256 characters (URI_TOO_LONG).') } : {}),
      ...(hasTask || streams
        ? {
            404: failure(
              streams
                ? 'No such task for this caller (TASK_NOT_FOUND), before any stream byte.'
                : 'No such task (or config) for this caller (TASK_NOT_FOUND).',
            ),
          }
        : {}),
      ...(post
        ? {
            413: failure('The body exceeds the host’s limit (PAYLOAD_TOO_LARGE; HANDOFF_BODY_LIMIT).'),
            415: failure('The body is not JSON (`application/json` or `application/a2a+json`).'),
          }
        : {}),
      429: failure(
        'The tenant is over a quota (HANDOFF_TENANT_RATE; HANDOFF_TENANT_MAX_ACTIVE_RUNS for a message that ' +
          'starts a task): TRY_LATER or RATE_LIMITED.',
        RETRY_AFTER,
      ),
      500: failure('An unexpected failure (INTERNAL_ERROR); no detail leaks.'),
      ...(streams
        ? { 503: failure('The host already serves HANDOFF_SSE_MAX_STREAMS streams (TOO_MANY_STREAMS).', RETRY_AFTER) }
        : {}),
    },
  };
}
