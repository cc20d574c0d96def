// The TypeBox schemas of the A2A surface (routes/a2a.ts): the agent card, the JSON-RPC envelope,
// the durable task state and the push deliveries. Same conventions as schemas.ts. JSON-RPC results
// are open (a Task, a push config, a card…): the envelope is described, the result left open.
import { type TSchema, Type } from '@sinclair/typebox';
import a2aTaskStateSchema from '../../schemas/a2a-task-state.schema.json' with { type: 'json' };
import * as rpcErrors from '../a2a/errors.js';
import { KNOWN_METHODS, validateParams } from '../a2a/jsonrpc.js';
import type { A2ATaskState as A2ATaskStateRecord } from '../a2a/model.js';
import { DELIVERY_STATES } from '../store/model.js';
import { OpenObject, ref } from './schemas.js';

/** The published RFC 0100 record schema, registered under a short `$id` (its component name). */
export const A2ATaskState = Type.Unsafe<A2ATaskStateRecord>({ ...a2aTaskStateSchema, $id: 'A2ATaskState' });

export const A2ATaskList = Type.Object(
  {
    tasks: Type.Array(ref(A2ATaskState)),
    nextCursor: Type.Optional(Type.String({ description: 'Pass as `cursor` for the next page.' })),
  },
  { $id: 'A2ATaskList' },
);

export const TaskListQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 100,
        description:
          'Most tasks in one page (default 50); a page ends early, with its `nextCursor`, before its records would ' +
          'pass HANDOFF_LIST_MAX_BYTES of JSON.',
      }),
    ),
    cursor: Type.Optional(
      Type.String({ minLength: 1, maxLength: 512, description: 'nextCursor of the previous page.' }),
    ),
    state: Type.Optional(Type.String({ minLength: 1 })),
    contextId: Type.Optional(Type.String({ minLength: 1 })),
  },
  { additionalProperties: false },
);

export const DeliveryQuery = Type.Object(
  {
    taskId: Type.Optional(Type.String({ minLength: 1 })),
    state: Type.Optional(Type.Union(DELIVERY_STATES.map((s) => Type.Literal(s)))),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  },
  { additionalProperties: false },
);

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const PushDelivery = Type.Object(
  {
    deliveryId: Type.String({
      description: 'Stable across retries; sent as X-Handoff-Delivery-Id for receiver dedup.',
    }),
    taskId: Type.String(),
    configId: Type.String(),
    state: Type.Union(DELIVERY_STATES.map((s) => Type.Literal(s))),
    final: Type.Boolean(),
    attempts: Type.Integer({ minimum: 0 }),
    nextAttemptAt: Nullable(Type.String({ format: 'date-time' })),
    lastStatus: Nullable(Type.Integer()),
    lastError: Nullable(Type.String()),
    createdAt: Type.String({ format: 'date-time' }),
    deliveredAt: Nullable(Type.String({ format: 'date-time' })),
  },
  {
    $id: 'PushDelivery',
    additionalProperties: false,
    description: 'One push delivery: a content-free TaskStatusUpdateEvent owed to one config for one transition.',
  },
);

export const DeliveryList = Type.Object({ deliveries: Type.Array(ref(PushDelivery)) }, { $id: 'DeliveryList' });

export const AgentCard = Type.Object(
  {
    protocolVersion: Type.String(),
    name: Type.String(),
    description: Type.String(),
    url: Type.String({ format: 'uri', description: 'Absolute JSON-RPC endpoint.' }),
    version: Type.String(),
    preferredTransport: Type.Optional(Type.String()),
    additionalInterfaces: Type.Optional(
      Type.Array(Type.Object({ url: Type.String(), transport: Type.String() }, { additionalProperties: true })),
    ),
    capabilities: Type.Object(
      {
        streaming: Type.Optional(Type.Boolean()),
        pushNotifications: Type.Optional(Type.Boolean()),
        stateTransitionHistory: Type.Optional(Type.Boolean()),
      },
      { additionalProperties: true },
    ),
    defaultInputModes: Type.Array(Type.String()),
    defaultOutputModes: Type.Array(Type.String()),
    skills: Type.Array(
      Type.Object(
        {
          id: Type.String(),
          name: Type.String(),
          description: Type.String(),
          tags: Type.Array(Type.String()),
          examples: Type.Optional(Type.Array(Type.String())),
        },
        { additionalProperties: true },
      ),
      { description: 'One skill per public workflow.' },
    ),
    securitySchemes: Type.Optional(OpenObject()),
    security: Type.Optional(Type.Array(OpenObject())),
    signatures: Type.Optional(
      Type.Array(
        Type.Object(
          { protected: Type.String(), signature: Type.String(), header: Type.Optional(OpenObject()) },
          { additionalProperties: true },
        ),
        {
          description:
            'JWS signatures over the JCS of the card without `signatures` (HANDOFF_CARD_SIGNING_KEY_FILE; keys at /.well-known/jwks.json).',
        },
      ),
    ),
  },
  {
    $id: 'AgentCard',
    additionalProperties: true,
    description:
      'A2A v0.3 Agent Card. `securitySchemes`/`security` are present only when the host requires API keys or access tokens.',
  },
);

const AgentInterface = Type.Object(
  { url: Type.String(), protocolBinding: Type.String(), protocolVersion: Type.String() },
  { additionalProperties: true },
);

export const AgentCardV1 = Type.Object(
  {
    name: Type.String(),
    description: Type.String(),
    supportedInterfaces: Type.Array(AgentInterface, {
      description: 'JSON-RPC 1.0, HTTP+JSON 1.0 and JSON-RPC 0.3, in order of preference.',
    }),
    version: Type.String(),
    capabilities: OpenObject(),
    defaultInputModes: Type.Array(Type.String()),
    defaultOutputModes: Type.Array(Type.String()),
    skills: Type.Array(OpenObject()),
    securitySchemes: Type.Optional(OpenObject()),
    securityRequirements: Type.Optional(Type.Array(OpenObject())),
    signatures: Type.Optional(
      Type.Array(
        Type.Object(
          { protected: Type.String(), signature: Type.String(), header: Type.Optional(OpenObject()) },
          { additionalProperties: true },
        ),
        {
          description:
            'JWS signatures over the JCS of the card without `signatures` (HANDOFF_CARD_SIGNING_KEY_FILE; keys at /.well-known/jwks.json).',
        },
      ),
    ),
  },
  {
    $id: 'AgentCardV1',
    additionalProperties: true,
    description: 'A2A 1.0 Agent Card (asked for with `A2A-Version: 1.0`).',
  },
);

export const JsonRpcId = Type.Union([Type.String(), Type.Integer(), Type.Null()], {
  $id: 'JsonRpcId',
  description: 'JSON-RPC request id: a string, an integer or null. An absent id is answered as null.',
});

/** One variant per A2A v0.3 method; `params` is required where the method has any. */
export const JsonRpcRequest = Type.Union(
  [...KNOWN_METHODS].map((method) => {
    const params = OpenObject(`The A2A v0.3 params of ${method}.`);
    const needsParams = validateParams(method, undefined) !== undefined;
    return Type.Object(
      {
        jsonrpc: Type.Literal('2.0'),
        id: Type.Optional(ref(JsonRpcId)),
        method: Type.Literal(method),
        params: needsParams ? params : Type.Optional(params),
      },
      { title: method, additionalProperties: true },
    );
  }),
  {
    $id: 'JsonRpcRequest',
    description:
      'A JSON-RPC 2.0 request for one A2A v0.3 method. `params` is checked per method (a known field of the wrong ' +
      'type is -32602); fields beyond the A2A types are allowed. Batches, non-object bodies and malformed JSON are ' +
      'answered with JSON-RPC errors, not HTTP errors.',
  },
);

export const JsonRpcSuccessResponse = Type.Object(
  {
    jsonrpc: Type.Literal('2.0'),
    id: ref(JsonRpcId),
    result: Type.Unknown({ description: 'The A2A result: a Task for message/send, tasks/get and tasks/cancel.' }),
  },
  { $id: 'JsonRpcSuccessResponse', additionalProperties: false },
);

/** [name, code] of every JSON-RPC / A2A error code the endpoint can answer with. */
const RPC_CODES = Object.entries(rpcErrors as Record<string, unknown>)
  .filter((e): e is [string, number] => typeof e[1] === 'number')
  .sort((a, b) => b[1] - a[1]);

export const JsonRpcErrorResponse = Type.Object(
  {
    jsonrpc: Type.Literal('2.0'),
    id: ref(JsonRpcId),
    error: Type.Object({
      code: Type.Integer({
        description: `JSON-RPC 2.0 / A2A v0.3 error code: ${RPC_CODES.map(([n, c]) => `${c} ${n}`).join(', ')}.`,
        examples: RPC_CODES.map(([, code]) => code),
      }),
      message: Type.String(),
      data: Type.Optional(Type.Unknown({ description: 'Optional detail, e.g. `errors` of a -32602.' })),
    }),
  },
  { $id: 'JsonRpcErrorResponse', additionalProperties: false },
);

/** The seams' bodies (HANDOFF_TEST_SEAMS=1): checked by the handlers, which name the field. */
export const SeamStartBody = Type.Object(
  { scenario: Type.Optional(Type.Unknown({ description: 'Only `paused-at-approval`.' })) },
  { additionalProperties: true },
);
export const SeamPushBody = Type.Object(
  { taskId: Type.Optional(Type.Unknown()), url: Type.Optional(Type.Unknown()) },
  { additionalProperties: true },
);

export const A2A_SCHEMAS: TSchema[] = [
  A2ATaskState,
  A2ATaskList,
  PushDelivery,
  DeliveryList,
  AgentCard,
  AgentCardV1,
  JsonRpcId,
  JsonRpcRequest,
  JsonRpcSuccessResponse,
  JsonRpcErrorResponse,
];
