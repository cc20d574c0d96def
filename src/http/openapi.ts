// The OpenAPI 3.1 document of the whole REST surface (spec/libraries.md §10), built from the same
// schema objects the server validates with: the TypeBox request schemas of routes/runs.ts and the
// published JSON Schemas under schemas/ are embedded unchanged (3.1's dialect is 2020-12).
//
//   const doc = buildOpenApi({ serverUrl: 'https://handoff.example.com' });
//   openapiRoutes(app);                       // GET /v1/openapi.json (public)
//
// Shapes that exist only as code (views.ts, the ops/a2a handlers) are described here; the
// integration test validates live responses against them and checks that every registered route
// appears, so a drift fails there.
import type { FastifyInstance } from 'fastify';
import a2aCapabilitySchema from '../../schemas/capabilities-a2a.schema.json' with { type: 'json' };
import a2aTaskStateSchema from '../../schemas/a2a-task-state.schema.json' with { type: 'json' };
import workflowDefinitionSchema from '../../schemas/workflow-definition.schema.json' with { type: 'json' };
import { A2A_RPC_PATH, AGENT_CARD_PATH } from '../a2a/card.js';
import * as rpcErrors from '../a2a/errors.js';
import { KNOWN_METHODS, validateParams } from '../a2a/jsonrpc.js';
import { RUN_STATUSES } from '../store/model.js';
import { VERSION } from '../version.js';
import { CONSOLE_PATH } from './routes/console.js';
import { RunListQuery } from './routes/run-list.js';
import { CancelBody, CreateRunBody, PollQuery, ResolveBody } from './routes/runs.js';

type Json = Record<string, unknown>;

export const OPENAPI_PATH = '/v1/openapi.json';

/** A plain-JSON deep copy: drops TypeBox's symbol keys and detaches the doc from the live
 * validator schemas, so a consumer mutating the document cannot change what the server checks. */
const plain = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: Json, example?: unknown): Json => ({
  'application/json': { schema, ...(example === undefined ? {} : { example }) },
});

/** An error response: the `{error, message, details?}` envelope, with the codes it can carry. */
const failure = (description: string, code: string, message: string): Json => ({
  description,
  content: json(ref('ErrorEnvelope'), { error: code, message }),
});
const shared = (name: string): Json => ({ $ref: `#/components/responses/${name}` });

const PUBLIC: Json[] = []; // `security: []` overrides the document-wide bearer requirement

const retryAfter: Json = {
  description: 'Seconds to wait before trying again.',
  schema: { type: 'integer', minimum: 0 },
};

/** A quota or capacity refusal of the JSON-RPC endpoint: HTTP 429/503, Retry-After, error -32029. */
const tryLaterRpc = (why: string, message: string, seconds: number): Json => ({
  description: `${why}: a JSON-RPC error ${rpcErrors.TRY_LATER} with \`data.retryAfterSeconds\` (A2A has no code for it).`,
  headers: { 'Retry-After': retryAfter },
  content: json(ref('JsonRpcErrorResponse'), {
    jsonrpc: '2.0',
    id: 1,
    error: { code: rpcErrors.TRY_LATER, message, data: { retryAfterSeconds: seconds } },
  }),
});

// ------------------------------------------------------------------ parameters

/** Path parameters, as the routes declare them (RunId / NodeParams in routes/runs.ts). */
const runIdParam: Json = {
  name: 'id',
  in: 'path',
  required: true,
  description: 'The run id (`run_…`). Another tenant’s run answers exactly like an unknown one (404).',
  schema: { type: 'string', minLength: 1, maxLength: 128 },
};
const nodeIdParam: Json = {
  name: 'nodeId',
  in: 'path',
  required: true,
  description: 'The node whose open interrupt is answered (the snapshot’s `currentNodeId`).',
  schema: { type: 'string', minLength: 1 },
};

/** One query parameter per property of a TypeBox query schema a route validates with. */
function queryParams(query: unknown, about: Record<string, string>): Json[] {
  const schema = plain(query) as { properties: Record<string, Json>; required?: string[] };
  return Object.entries(schema.properties).map(([name, s]) => ({
    name,
    in: 'query',
    required: schema.required?.includes(name) ?? false,
    ...(about[name] ? { description: about[name] } : {}),
    schema: s,
  }));
}

const pollParams = (): Json[] =>
  queryParams(PollQuery, {
    lastSequence: 'Return events with a sequence greater than this (-1, the default, from the start).',
    since: 'Alias of `lastSequence` (the OpenWOP sqlite host’s name); `lastSequence` wins when both are set.',
    timeout: 'Seconds to wait for a new event when there is none yet (default 30; 0 answers at once).',
    limit: 'Most events in one answer (default 500).',
  });

const runListParams = (): Json[] =>
  queryParams(RunListQuery, {
    status: 'Comma-separated run statuses; a run in any of them is listed (all statuses when absent).',
    workflowId: 'Only runs of this workflow.',
    q:
      'Text, case-insensitive (ASCII): a run whose id starts with it, or whose workflow id or one of whose tags ' +
      'contains it. Matched over the tenant’s runs newest first.',
    limit: 'Most runs in one page (default 50).',
    cursor: 'The `nextCursor` of the previous page.',
  });

// ------------------------------------------------------------------ component schemas

function schemas(): Record<string, unknown> {
  const jsonRpcId: Json = {
    description: 'JSON-RPC request id: a string, an integer or null. An absent id is answered as null.',
    type: ['string', 'integer', 'null'],
  };
  return {
    ErrorEnvelope: {
      description:
        'The OpenWOP error envelope (spec §3.5). Codes used: validation_error, unauthenticated, forbidden, not_found, ' +
        'run_terminal, interrupt_not_found, interrupt_already_resolved, interrupt_cancelled, idempotency_key_mismatch, ' +
        'conflict, payload_too_large, unsupported_media_type, bad_request, internal_error.',
      type: 'object',
      required: ['error', 'message'],
      additionalProperties: false,
      properties: {
        error: { type: 'string', description: 'Machine-readable code.' },
        message: { type: 'string', description: 'Human-readable text.' },
        details: {
          type: 'object',
          additionalProperties: true,
          description: 'Code-specific data (e.g. `errors` of a validation failure).',
        },
      },
    },
    RunStatus: {
      description:
        'OpenWOP run status (spec §3.3). Terminal: completed, failed, cancelled. Treat unknown values as terminal-unknown.',
      type: 'string',
      enum: [...RUN_STATUSES],
    },
    CreateRunRequest: plain(CreateRunBody),
    CreateRunResponse: {
      type: 'object',
      required: ['runId', 'status', 'statusUrl', 'eventsUrl'],
      properties: {
        runId: { type: 'string' },
        status: ref('RunStatus'),
        statusUrl: { type: 'string', description: 'Path of the run snapshot.' },
        eventsUrl: { type: 'string', description: 'Path of the run’s event stream.' },
      },
    },
    RunError: {
      type: 'object',
      required: ['code', 'message'],
      properties: { code: { type: 'string' }, message: { type: 'string' }, details: { type: 'object' } },
    },
    OpenInterrupt: {
      description: 'The open interrupt of a waiting run.',
      type: 'object',
      required: ['kind', 'nodeId', 'interruptId', 'payload', 'votes', 'exchanges'],
      properties: {
        kind: { type: 'string', enum: ['approval', 'clarification'] },
        nodeId: { type: 'string' },
        interruptId: { type: 'string' },
        payload: {
          type: 'object',
          description: 'What the gate asks: the approval artifact and config, or the clarification questions.',
        },
        votes: {
          type: 'array',
          items: {
            type: 'object',
            required: ['principal', 'action', 'at'],
            properties: {
              principal: { type: 'string' },
              action: { type: 'string' },
              at: { type: 'string', format: 'date-time' },
            },
          },
        },
        exchanges: {
          type: 'array',
          description: '`ask` exchanges recorded while the interrupt stays open.',
          items: {
            type: 'object',
            required: ['principalId', 'question', 'at'],
            properties: {
              principalId: { type: 'string' },
              question: { type: 'string' },
              at: { type: 'string', format: 'date-time' },
            },
          },
        },
      },
    },
    RunSnapshot: {
      description: 'The run as it is now (spec §3.3). Open: readers ignore fields they do not know.',
      type: 'object',
      required: [
        'runId',
        'workflowId',
        'status',
        'owner',
        'inputs',
        'variables',
        'nodeStates',
        'tags',
        'metadata',
        'createdAt',
        'updatedAt',
      ],
      properties: {
        runId: { type: 'string', minLength: 1, maxLength: 128 },
        workflowId: { type: 'string' },
        status: ref('RunStatus'),
        owner: {
          type: 'object',
          required: ['tenant', 'principal'],
          properties: { tenant: { type: 'string' }, principal: { type: 'string' } },
        },
        inputs: { type: 'object' },
        variables: { type: 'object' },
        nodeStates: { type: 'object', description: 'Node outputs by node id.' },
        currentNodeId: { type: 'string', description: 'Set while the run waits for approval or input.' },
        interrupt: ref('OpenInterrupt'),
        error: ref('RunError'),
        tags: { type: 'array', items: { type: 'string' } },
        metadata: { type: 'object' },
        createdAt: { type: 'string', format: 'date-time' },
        updatedAt: { type: 'string', format: 'date-time' },
        completedAt: { type: 'string', format: 'date-time' },
      },
    },
    RunSummary: {
      description: 'A run as lists show it: identity, times, and what it waits on (no inputs or node states).',
      type: 'object',
      required: ['runId', 'workflowId', 'status', 'tags', 'createdAt', 'updatedAt'],
      properties: {
        runId: { type: 'string' },
        workflowId: { type: 'string' },
        status: ref('RunStatus'),
        tags: { type: 'array', items: { type: 'string' } },
        createdAt: { type: 'string', format: 'date-time' },
        updatedAt: { type: 'string', format: 'date-time' },
        completedAt: { type: 'string', format: 'date-time' },
        interrupt: {
          description: 'The open interrupt of a run waiting for approval or input.',
          type: 'object',
          required: ['kind', 'nodeId'],
          properties: {
            kind: { type: 'string', enum: ['approval', 'clarification'] },
            nodeId: { type: 'string' },
            title: { type: 'string' },
            approversList: {
              type: 'array',
              items: { type: 'string' },
              description: 'Who may decide; absent: any principal of the tenant.',
            },
            expiresAt: { type: 'string', format: 'date-time', description: 'The gate’s deadline, if it has one.' },
          },
        },
        waitingOn: { type: 'object', description: 'What else the run waits on (e.g. another A2A agent’s task).' },
        error: ref('RunError'),
      },
    },
    RunList: {
      type: 'object',
      required: ['runs'],
      properties: {
        runs: { type: 'array', items: ref('RunSummary') },
        nextCursor: { type: 'string', description: 'Pass as `cursor` for the next page; absent on the last page.' },
      },
    },
    CancelRunRequest: plain(CancelBody),
    CancelRunResponse: {
      type: 'object',
      required: ['runId', 'status'],
      properties: {
        runId: { type: 'string' },
        status: {
          ...ref('RunStatus'),
          description: '`cancelled`, or `cancelling` while a worker finishes the step in flight.',
        },
      },
    },
    ResolveInterruptRequest: plain(ResolveBody),
    LegacyApprovalRequest: {
      description: 'The resume value itself (the OpenWOP examples’ `{action, …}`), not wrapped in `resumeValue`.',
      type: 'object',
      required: ['action'],
      additionalProperties: true,
      properties: { action: { type: 'string' } },
    },
    ResolveInterruptResponse: {
      type: 'object',
      required: ['runId', 'status', 'interrupt'],
      properties: {
        runId: { type: 'string' },
        status: ref('RunStatus'),
        interrupt: {
          type: 'object',
          required: ['kind', 'nodeId', 'interruptId', 'outcome', 'votes'],
          properties: {
            kind: { type: 'string', enum: ['approval', 'clarification'] },
            nodeId: { type: 'string' },
            interruptId: { type: 'string' },
            outcome: {
              type: 'string',
              enum: ['resolved', 'vote-recorded', 'ask-recorded'],
              description: '`resolved` ends the gate; a vote below the quorum or an `ask` keeps it open.',
            },
            votes: { type: 'integer', minimum: 0, description: 'Votes recorded on the gate so far.' },
            requiredApprovals: { type: 'integer', minimum: 1 },
          },
        },
      },
    },
    RunEvent: {
      description: 'One entry of the run’s durable event log (RunEventDoc, spec §3.4).',
      type: 'object',
      required: ['eventId', 'runId', 'type', 'sequence', 'payload', 'timestamp'],
      properties: {
        eventId: { type: 'string' },
        runId: { type: 'string' },
        type: {
          type: 'string',
          description: 'Event type, e.g. run.started, interrupt.requested. Tolerate unknown types.',
        },
        sequence: { type: 'integer', minimum: 0, description: 'Gap-free per run, from 0.' },
        nodeId: { type: 'string' },
        payload: { type: 'object' },
        timestamp: { type: 'string', format: 'date-time' },
      },
    },
    PollEventsResponse: {
      type: 'object',
      required: ['runId', 'events', 'lastEventSeq', 'runStatus', 'isTerminal', 'isComplete'],
      properties: {
        runId: { type: 'string' },
        events: { type: 'array', items: ref('RunEvent') },
        lastEventSeq: { type: 'integer', minimum: -1, description: 'Pass as `lastSequence` to continue.' },
        runStatus: ref('RunStatus'),
        isTerminal: { type: 'boolean' },
        isComplete: { type: 'boolean', description: 'Terminal and every event delivered: stop polling.' },
      },
    },
    WorkflowSummary: {
      type: 'object',
      required: ['id', 'name', 'version'],
      properties: {
        id: { type: 'string' },
        name: { type: 'string' },
        version: { type: 'string' },
        description: { type: 'string' },
      },
    },
    WorkflowList: {
      type: 'object',
      required: ['workflows'],
      properties: { workflows: { type: 'array', items: ref('WorkflowSummary') } },
    },
    WorkflowDefinition: plain(workflowDefinitionSchema),
    Discovery: {
      description: 'The OpenWOP discovery document (spec §2.8). Open: new families appear at the root.',
      type: 'object',
      required: ['protocolVersion', 'implementation', 'supportedTransports', 'limits'],
      properties: {
        protocolVersion: { type: 'string' },
        implementation: {
          type: 'object',
          required: ['name', 'version'],
          properties: { name: { type: 'string' }, version: { type: 'string' } },
        },
        supportedEnvelopes: { type: 'array', items: { type: 'string' } },
        schemaVersions: { type: 'object' },
        limits: {
          type: 'object',
          properties: {
            clarificationRounds: { type: 'integer', minimum: 0 },
            schemaRounds: { type: 'integer', minimum: 0 },
            envelopesPerTurn: { type: 'integer', minimum: 0 },
            maxRequestBodyBytes: { type: 'integer', minimum: 1 },
          },
        },
        supportedTransports: { type: 'array', items: { type: 'string' } },
        workflows: { type: 'array', items: { type: 'string' }, description: 'Ids of the loaded workflows.' },
        a2a: ref('A2ACapability'),
      },
    },
    A2ACapability: plain(a2aCapabilitySchema),
    A2ATaskState: plain(a2aTaskStateSchema),
    PushDelivery: {
      type: 'object',
      description: 'One push delivery: a content-free TaskStatusUpdateEvent owed to one config for one transition.',
      required: ['deliveryId', 'taskId', 'configId', 'state', 'final', 'attempts', 'createdAt'],
      properties: {
        deliveryId: {
          type: 'string',
          description: 'Stable across retries; sent as X-Handoff-Delivery-Id for receiver dedup.',
        },
        taskId: { type: 'string' },
        configId: { type: 'string' },
        state: { type: 'string', enum: ['pending', 'delivered', 'dead', 'cancelled'] },
        final: { type: 'boolean' },
        attempts: { type: 'integer', minimum: 0 },
        nextAttemptAt: { type: ['string', 'null'], format: 'date-time' },
        lastStatus: { type: ['integer', 'null'] },
        lastError: { type: ['string', 'null'] },
        createdAt: { type: 'string', format: 'date-time' },
        deliveredAt: { type: ['string', 'null'], format: 'date-time' },
      },
      additionalProperties: false,
    },
    AgentCard: {
      description:
        'A2A v0.3 Agent Card. `securitySchemes`/`security` are present only when the host requires API keys.',
      type: 'object',
      required: [
        'protocolVersion',
        'name',
        'description',
        'url',
        'version',
        'capabilities',
        'defaultInputModes',
        'defaultOutputModes',
        'skills',
      ],
      properties: {
        protocolVersion: { type: 'string' },
        name: { type: 'string' },
        description: { type: 'string' },
        url: { type: 'string', format: 'uri', description: `Absolute JSON-RPC endpoint (${A2A_RPC_PATH}).` },
        version: { type: 'string' },
        preferredTransport: { type: 'string' },
        additionalInterfaces: {
          type: 'array',
          items: {
            type: 'object',
            required: ['url', 'transport'],
            properties: { url: { type: 'string' }, transport: { type: 'string' } },
          },
        },
        capabilities: {
          type: 'object',
          properties: {
            streaming: { type: 'boolean' },
            pushNotifications: { type: 'boolean' },
            stateTransitionHistory: { type: 'boolean' },
          },
        },
        defaultInputModes: { type: 'array', items: { type: 'string' } },
        defaultOutputModes: { type: 'array', items: { type: 'string' } },
        skills: {
          type: 'array',
          description: 'One skill per public workflow.',
          items: {
            type: 'object',
            required: ['id', 'name', 'description', 'tags'],
            properties: {
              id: { type: 'string' },
              name: { type: 'string' },
              description: { type: 'string' },
              tags: { type: 'array', items: { type: 'string' } },
              examples: { type: 'array', items: { type: 'string' } },
            },
          },
        },
        securitySchemes: { type: 'object' },
        security: { type: 'array', items: { type: 'object' } },
      },
    },
    JsonRpcId: jsonRpcId,
    JsonRpcRequest: {
      description:
        'A JSON-RPC 2.0 request for one A2A v0.3 method. `params` is checked per method (a known field of the wrong ' +
        'type is -32602); fields beyond the A2A types are allowed. Batches, non-object bodies and malformed JSON are ' +
        'answered with JSON-RPC errors, not HTTP errors.',
      oneOf: [...KNOWN_METHODS].map((method) => {
        const needsParams = validateParams(method, undefined) !== undefined;
        return {
          title: method,
          type: 'object',
          required: needsParams ? ['jsonrpc', 'method', 'params'] : ['jsonrpc', 'method'],
          properties: {
            jsonrpc: { const: '2.0' },
            id: ref('JsonRpcId'),
            method: { const: method },
            params: { type: 'object', description: `The A2A v0.3 params of ${method}.` },
          },
        };
      }),
    },
    JsonRpcSuccessResponse: {
      type: 'object',
      required: ['jsonrpc', 'id', 'result'],
      additionalProperties: false,
      properties: {
        jsonrpc: { const: '2.0' },
        id: ref('JsonRpcId'),
        result: { description: 'The A2A result: a Task for message/send, tasks/get and tasks/cancel.' },
      },
    },
    JsonRpcErrorResponse: {
      type: 'object',
      required: ['jsonrpc', 'id', 'error'],
      additionalProperties: false,
      properties: {
        jsonrpc: { const: '2.0' },
        id: ref('JsonRpcId'),
        error: {
          type: 'object',
          required: ['code', 'message'],
          properties: {
            code: { type: 'integer', description: rpcCodeTable(), examples: rpcCodes().map(([, code]) => code) },
            message: { type: 'string' },
            data: { description: 'Optional detail, e.g. `errors` of a -32602.' },
          },
        },
      },
    },
    Health: {
      type: 'object',
      required: ['status', 'database'],
      properties: {
        status: { type: 'string', enum: ['ok', 'unavailable'] },
        database: { type: 'string', enum: ['sqlite', 'postgres'] },
        message: { type: 'string', description: 'Why the database is unavailable (503 only).' },
      },
    },
  };
}

/** [name, code] of every JSON-RPC / A2A error code the endpoint can answer with. */
function rpcCodes(): Array<[string, number]> {
  return Object.entries(rpcErrors as Record<string, unknown>)
    .filter((e): e is [string, number] => typeof e[1] === 'number')
    .sort((a, b) => b[1] - a[1]);
}
const rpcCodeTable = () =>
  'JSON-RPC 2.0 / A2A v0.3 error code: ' +
  rpcCodes()
    .map(([name, code]) => `${code} ${name}`)
    .join(', ') +
  '.';

// ------------------------------------------------------------------ paths

function paths(): Json {
  const bad = (what: string) =>
    failure(
      `Invalid request: ${what} (\`validation_error\`).`,
      'validation_error',
      "body must have required property 'workflowId'",
    );
  const notFoundRun = failure('No such run for this tenant (`not_found`).', 'not_found', 'run run_x not found');
  const resolveErrors: Json = {
    '400': bad('path, body, or a resume value that does not fit the gate (e.g. an unknown action, or missing answers)'),
    '401': shared('Unauthorized'),
    '403': failure(
      'The caller is not an approver of this gate (`forbidden`).',
      'forbidden',
      "principal 'bob' is not an approver of this gate",
    ),
    '404': failure(
      'No such run, or no open interrupt at this node (`not_found`, `interrupt_not_found`).',
      'interrupt_not_found',
      "run run_x has no open interrupt at node 'review'",
    ),
    '409': failure(
      'The interrupt was already resolved (`interrupt_already_resolved`; exactly one of concurrent answers wins), or the run kept changing (`conflict`).',
      'interrupt_already_resolved',
      "the interrupt at node 'review' was already resolved",
    ),
    '413': shared('PayloadTooLarge'),
    '415': shared('UnsupportedMediaType'),
    '422': failure(
      'The interrupt was cancelled with its run (`interrupt_cancelled`).',
      'interrupt_cancelled',
      "the interrupt at node 'review' was cancelled with its run",
    ),
  };
  const resolveOk: Json = { description: 'The answer was applied.', content: json(ref('ResolveInterruptResponse')) };

  return {
    '/.well-known/openwop': {
      get: {
        operationId: 'getDiscovery',
        tags: ['discovery'],
        summary: 'OpenWOP discovery document',
        security: PUBLIC,
        responses: {
          '200': {
            description: 'The discovery document.',
            headers: { 'Cache-Control': { description: 'public, max-age=300', schema: { type: 'string' } } },
            content: json(ref('Discovery')),
          },
        },
      },
    },
    [AGENT_CARD_PATH]: {
      get: {
        operationId: 'getAgentCard',
        tags: ['a2a'],
        summary: 'A2A agent card (well-known location)',
        security: PUBLIC,
        responses: { '200': { description: 'The agent card.', content: json(ref('AgentCard')) } },
      },
    },
    '/v1/a2a/callbacks/{waitId}': {
      post: {
        operationId: 'peerCallback',
        tags: ['a2a'],
        summary: 'Push from a peer agent a run of this host waits on (a2a.invoke)',
        description:
          'The peer pushes with the per-call token this host registered (`X-A2A-Notification-Token` or ' +
          "`Authorization: Bearer`). The body is not read: a matching token only brings the waiting run's next " +
          'read of the peer task (`tasks/get`) forward.',
        security: PUBLIC,
        parameters: [{ name: 'waitId', in: 'path', required: true, schema: { type: 'string', minLength: 1 } }],
        responses: {
          '204': { description: 'Accepted: the waiting run reads the peer task.' },
          '401': failure(
            'The token does not match (`unauthenticated`).',
            'unauthenticated',
            'the callback token does not match',
          ),
          '404': failure('No such callback (`not_found`).', 'not_found', 'no such callback'),
        },
      },
    },
    '/v1/a2a/agent.json': {
      get: {
        operationId: 'getAgentCardV1',
        tags: ['a2a'],
        summary: 'A2A agent card (OpenWOP rest-endpoints location)',
        description: `The same card as \`${AGENT_CARD_PATH}\`.`,
        security: PUBLIC,
        responses: { '200': { description: 'The agent card.', content: json(ref('AgentCard')) } },
      },
    },
    [A2A_RPC_PATH]: {
      post: {
        operationId: 'a2aJsonRpc',
        tags: ['a2a'],
        summary: 'A2A v0.3 JSON-RPC endpoint',
        description:
          'One JSON-RPC 2.0 request per call. Every JSON-RPC outcome, including the -32xxx errors (parse error, ' +
          'invalid request, unknown method, invalid params, task not found, …), is answered with **HTTP 200** and a ' +
          'JSON-RPC error object. HTTP errors are only those of the transport: authentication, body size, media type. ' +
          '`message/stream` and `tasks/resubscribe` answer `text/event-stream`: each `data:` is one JSON-RPC response, each ' +
          '`id:` the run event sequence; `tasks/resubscribe` resumes after `Last-Event-ID` (header or `params.metadata.lastEventId`).',
        requestBody: {
          required: true,
          content: json(ref('JsonRpcRequest'), { jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'run_x' } }),
        },
        responses: {
          '200': {
            description: 'A JSON-RPC response: a result, or an error object (HTTP status 200 either way).',
            content: {
              ...json(
                { oneOf: [ref('JsonRpcSuccessResponse'), ref('JsonRpcErrorResponse')] },
                {
                  jsonrpc: '2.0',
                  id: 1,
                  error: { code: rpcErrors.TASK_NOT_FOUND, message: 'Task not found: run_x' },
                },
              ),
              'text/event-stream': {
                schema: { type: 'string', description: 'SSE frames of JSON-RPC responses (streaming methods).' },
              },
            },
          },
          '401': shared('Unauthorized'),
          '403': failure(
            'A browser wrote from an origin that is not allowed (`forbidden`; HANDOFF_CORS_ORIGINS).',
            'forbidden',
            "writes from the web origin 'https://evil.example' are not allowed; list it in HANDOFF_CORS_ORIGINS",
          ),
          '413': shared('PayloadTooLarge'),
          '415': shared('UnsupportedMediaType'),
          '429': tryLaterRpc(
            'The tenant is over a quota (HANDOFF_TENANT_RATE; HANDOFF_TENANT_MAX_ACTIVE_RUNS for a message that starts a task)',
            'this tenant sent more than 100 requests in 1 s (HANDOFF_TENANT_RATE); retry in 1 s',
            1,
          ),
          '503': tryLaterRpc(
            'A streaming method when the host already serves HANDOFF_SSE_MAX_STREAMS streams (nothing was started)',
            'this host already serves 1000 streams (HANDOFF_SSE_MAX_STREAMS); retry in 5 s',
            5,
          ),
        },
      },
    },
    '/v1/a2a/tasks/{taskId}': {
      get: {
        operationId: 'getA2ATaskState',
        tags: ['a2a'],
        summary: 'Durable A2A task state (RFC 0100)',
        description: 'The persisted A2ATaskState projection of a run (taskId equals runId).',
        parameters: [{ name: 'taskId', in: 'path', required: true, schema: { type: 'string', minLength: 1 } }],
        responses: {
          '200': { description: 'The task state.', content: json(ref('A2ATaskState')) },
          '401': shared('Unauthorized'),
          '404': failure('No such task for this tenant (`not_found`).', 'not_found', 'task run_x not found'),
        },
      },
    },
    '/v1/a2a/tasks': {
      get: {
        operationId: 'listA2ATasks',
        tags: ['a2a'],
        summary: 'The caller’s tasks (A2ATaskState records), most recently changed first',
        parameters: [
          { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 100 } },
          {
            name: 'cursor',
            in: 'query',
            required: false,
            description: 'nextCursor of the previous page.',
            schema: { type: 'string', minLength: 1, maxLength: 512 },
          },
          { name: 'state', in: 'query', required: false, schema: { type: 'string', minLength: 1 } },
          { name: 'contextId', in: 'query', required: false, schema: { type: 'string', minLength: 1 } },
        ],
        responses: {
          '200': {
            description: 'One page of tasks.',
            content: json({
              type: 'object',
              required: ['tasks'],
              properties: { tasks: { type: 'array', items: ref('A2ATaskState') }, nextCursor: { type: 'string' } },
            }),
          },
          '400': bad('query or cursor'),
          '401': shared('Unauthorized'),
        },
      },
    },
    '/v1/a2a/deliveries': {
      get: {
        operationId: 'listPushDeliveries',
        tags: ['a2a'],
        summary: 'Push deliveries of the caller’s tenant (operators)',
        description:
          'The push outbox, newest first: pending (with the next attempt time), delivered, dead-lettered, cancelled.',
        parameters: [
          { name: 'taskId', in: 'query', required: false, schema: { type: 'string', minLength: 1 } },
          {
            name: 'state',
            in: 'query',
            required: false,
            schema: { type: 'string', enum: ['pending', 'delivered', 'dead', 'cancelled'] },
          },
          { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 1000 } },
        ],
        responses: {
          '200': {
            description: 'The deliveries.',
            content: json({
              type: 'object',
              required: ['deliveries'],
              properties: { deliveries: { type: 'array', items: ref('PushDelivery') } },
            }),
          },
          '400': bad('query'),
          '401': shared('Unauthorized'),
        },
      },
    },
    '/v1/a2a/deliveries/{id}/retry': {
      post: {
        operationId: 'retryPushDelivery',
        tags: ['a2a'],
        summary: 'Retry a dead-lettered push delivery',
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string', minLength: 1 } }],
        responses: {
          '200': {
            description: 'The delivery, pending again with its attempts reset.',
            content: json(ref('PushDelivery')),
          },
          '401': shared('Unauthorized'),
          '404': failure('No such delivery for this tenant (`not_found`).', 'not_found', 'delivery dlv_x not found'),
          '409': failure(
            'Only dead-lettered deliveries can be retried (`delivery_not_dead`).',
            'delivery_not_dead',
            'delivery dlv_x is delivered; only dead-lettered deliveries can be retried',
          ),
        },
      },
    },
    '/v1/runs': {
      get: {
        operationId: 'listRuns',
        tags: ['runs'],
        summary: 'The caller’s runs, newest first',
        description:
          'The runs of the caller’s tenant, newest first (by creation, then run id), one page at a time by keyset ' +
          '(`nextCursor`). The console’s inbox is `?status=waiting-approval,waiting-input`.',
        parameters: runListParams(),
        responses: {
          '200': { description: 'One page of runs.', content: json(ref('RunList')) },
          '400': bad('query or cursor'),
          '401': shared('Unauthorized'),
        },
      },
      post: {
        operationId: 'createRun',
        tags: ['runs'],
        summary: 'Start a run',
        parameters: [
          {
            name: 'Idempotency-Key',
            in: 'header',
            required: false,
            description:
              'Replays the first response for the same key and body (header `openwop-Idempotent-Replay: true`); the same key ' +
              'with a different body is 409 `idempotency_key_mismatch`. 1–255 URL-safe characters.',
            schema: { type: 'string', pattern: '^[A-Za-z0-9._~:-]{1,255}$' },
          },
        ],
        requestBody: {
          required: true,
          content: json(ref('CreateRunRequest'), { workflowId: 'approval', inputs: { prompt: 'launch plan' } }),
        },
        responses: {
          '201': {
            description: 'The run was created (or, with a known Idempotency-Key, the original run is returned).',
            headers: {
              'openwop-Idempotent-Replay': {
                description:
                  '`true` when the response is a replay of an earlier request with the same Idempotency-Key.',
                schema: { type: 'string', enum: ['true'] },
              },
            },
            content: json(ref('CreateRunResponse'), {
              runId: 'run_x',
              status: 'pending',
              statusUrl: '/v1/runs/run_x',
              eventsUrl: '/v1/runs/run_x/events',
            }),
          },
          '400': bad(
            'body, unknown workflow, inputs that fail the workflow’s inputSchema, or a malformed Idempotency-Key',
          ),
          '401': shared('Unauthorized'),
          '403': failure(
            '`tenantId` differs from the authenticated tenant, or a browser wrote from an origin that is not allowed (`forbidden`).',
            'forbidden',
            'tenantId does not match the authenticated tenant',
          ),
          '409': failure(
            'The Idempotency-Key was used with a different body (`idempotency_key_mismatch`), or a concurrent change won (`conflict`).',
            'idempotency_key_mismatch',
            'this Idempotency-Key was used with a different request body',
          ),
          '413': shared('PayloadTooLarge'),
          '415': shared('UnsupportedMediaType'),
          '429': {
            description:
              'The tenant is over a quota: HANDOFF_TENANT_RATE (`rate_limited`) or HANDOFF_TENANT_MAX_ACTIVE_RUNS (`too_many_active_runs`).',
            headers: { 'Retry-After': retryAfter },
            content: json(ref('ErrorEnvelope'), {
              error: 'too_many_active_runs',
              message:
                'this tenant already has 100 runs that are not finished (HANDOFF_TENANT_MAX_ACTIVE_RUNS is 100); retry when some have ended',
            }),
          },
        },
      },
    },
    '/v1/runs/changes': {
      get: {
        operationId: 'streamRunChanges',
        tags: ['runs'],
        summary: 'Changes of the caller’s runs, live (SSE)',
        description:
          'Server-Sent Events, one `event: run` per committed change of a run of the caller’s tenant, on any instance: ' +
          '`data: {runId, status, lastSeq}`. `event: resync` (`data: {}`) means changes may have been missed: list ' +
          'again. Not durable and not resumable (no `id:`): after a reconnect, list again. `:keepalive` comments ' +
          'at least every 15 s; a client that stops reading is disconnected.',
        responses: {
          '200': {
            description: 'The change stream.',
            content: { 'text/event-stream': { schema: { type: 'string' } } },
          },
          '401': shared('Unauthorized'),
        },
      },
    },
    '/v1/runs/{id}': {
      get: {
        operationId: 'getRun',
        tags: ['runs'],
        summary: 'Run snapshot',
        description: 'The run, with its open interrupt while it waits for approval or input.',
        parameters: [runIdParam],
        responses: {
          '200': { description: 'The run snapshot.', content: json(ref('RunSnapshot')) },
          '400': bad('run id'),
          '401': shared('Unauthorized'),
          '404': notFoundRun,
        },
      },
    },
    '/v1/runs/{id}/cancel': {
      post: {
        operationId: 'cancelRun',
        tags: ['runs'],
        summary: 'Cancel a run',
        description:
          'Cancels a run in any non-terminal state; a run a worker is executing passes through `cancelling`.',
        parameters: [runIdParam],
        requestBody: {
          required: false,
          description: 'Optional: a bare POST cancels without a reason.',
          content: json(ref('CancelRunRequest'), { reason: 'no longer needed' }),
        },
        responses: {
          '200': {
            description: 'The cancel was accepted.',
            content: json(ref('CancelRunResponse'), { runId: 'run_x', status: 'cancelled' }),
          },
          '400': bad('path or body'),
          '401': shared('Unauthorized'),
          '404': notFoundRun,
          '409': failure(
            'The run is already terminal (`run_terminal`, `details.status`), or kept changing (`conflict`).',
            'run_terminal',
            'run run_x is already completed',
          ),
          '413': shared('PayloadTooLarge'),
          '415': shared('UnsupportedMediaType'),
        },
      },
    },
    '/v1/runs/{id}/interrupts/{nodeId}': {
      post: {
        operationId: 'resolveInterrupt',
        tags: ['interrupts'],
        summary: 'Answer a run’s open interrupt',
        description:
          'Approval: `{resumeValue: {action: accept|reject|refine|edit-accept|ask, feedback?, refineFeedback?, editedArtifactData?}}`. ' +
          'Clarification: `{resumeValue: {answers}}`.',
        parameters: [runIdParam, nodeIdParam],
        requestBody: {
          required: true,
          content: json(ref('ResolveInterruptRequest'), { resumeValue: { action: 'accept' } }),
        },
        responses: { '200': resolveOk, ...resolveErrors },
      },
    },
    '/v1/runs/{id}/approvals/{nodeId}': {
      post: {
        operationId: 'resolveApprovalLegacy',
        tags: ['interrupts'],
        summary: 'Answer an approval (legacy alias)',
        description:
          'The OpenWOP examples’ alias of `POST /v1/runs/{id}/interrupts/{nodeId}`: the body is the resume value itself.',
        deprecated: true,
        parameters: [runIdParam, nodeIdParam],
        requestBody: { required: true, content: json(ref('LegacyApprovalRequest'), { action: 'accept' }) },
        responses: { '200': resolveOk, ...resolveErrors },
      },
    },
    '/v1/runs/{id}/events': {
      get: {
        operationId: 'streamRunEvents',
        tags: ['runs'],
        summary: 'Follow the run’s event log (SSE)',
        description:
          'Server-Sent Events: `id:` is the event sequence, `event:` its type, `data:` the event document. Sends every event after ' +
          '`Last-Event-ID` (all when absent), then live events, and closes after the run’s final event. `:keepalive` comments at ' +
          'least every 15 s. A client that stops reading is disconnected and may resume by id.',
        parameters: [
          runIdParam,
          {
            name: 'Last-Event-ID',
            in: 'header',
            required: false,
            description: 'Resume after this event sequence.',
            schema: { type: 'integer', minimum: -1 },
          },
        ],
        responses: {
          '200': { description: 'The event stream.', content: { 'text/event-stream': { schema: { type: 'string' } } } },
          '400': bad('path or Last-Event-ID'),
          '401': shared('Unauthorized'),
          '404': notFoundRun,
          '503': {
            description: 'The host already serves HANDOFF_SSE_MAX_STREAMS streams (`too_many_streams`).',
            headers: { 'Retry-After': retryAfter },
            content: json(ref('ErrorEnvelope'), {
              error: 'too_many_streams',
              message: 'this host already serves 1000 streams (HANDOFF_SSE_MAX_STREAMS); retry in 5 s',
            }),
          },
        },
      },
    },
    '/v1/runs/{id}/events/poll': {
      get: {
        operationId: 'pollRunEvents',
        tags: ['runs'],
        summary: 'Long-poll the run’s event log',
        parameters: [runIdParam, ...pollParams()],
        responses: {
          '200': {
            description: 'The events after `lastSequence` (possibly none after the timeout).',
            content: json(ref('PollEventsResponse')),
          },
          '400': bad('path or query'),
          '401': shared('Unauthorized'),
          '404': notFoundRun,
        },
      },
    },
    '/v1/workflows': {
      get: {
        operationId: 'listWorkflows',
        tags: ['workflows'],
        summary: 'Loaded workflow definitions',
        responses: {
          '200': { description: 'Every loaded workflow.', content: json(ref('WorkflowList')) },
          '401': shared('Unauthorized'),
        },
      },
    },
    '/v1/workflows/{id}': {
      get: {
        operationId: 'getWorkflow',
        tags: ['workflows'],
        summary: 'One workflow definition',
        parameters: [
          {
            name: 'id',
            in: 'path',
            required: true,
            description: 'The workflow id.',
            schema: { type: 'string', minLength: 1 },
          },
        ],
        responses: {
          '200': { description: 'The definition as loaded.', content: json(ref('WorkflowDefinition')) },
          '401': shared('Unauthorized'),
          '404': failure('No such workflow (`not_found`).', 'not_found', "workflow 'nope' not found"),
        },
      },
    },
    '/healthz': {
      get: {
        operationId: 'getHealth',
        tags: ['operations'],
        summary: 'Health check',
        security: PUBLIC,
        responses: {
          '200': {
            description: 'The database answers.',
            content: json(ref('Health'), { status: 'ok', database: 'sqlite' }),
          },
          '503': { description: 'The database does not answer.', content: json(ref('Health')) },
        },
      },
    },
    '/metrics': {
      get: {
        operationId: 'getMetrics',
        tags: ['operations'],
        summary: 'Prometheus metrics',
        security: PUBLIC,
        responses: {
          '200': {
            description: 'Prometheus text exposition format 0.0.4.',
            content: { 'text/plain': { schema: { type: 'string' } } },
          },
        },
      },
    },
    ...consolePaths(),
    [OPENAPI_PATH]: {
      get: {
        operationId: 'getOpenApi',
        tags: ['discovery'],
        summary: 'This OpenAPI document',
        security: PUBLIC,
        responses: { '200': { description: 'The OpenAPI 3.1 document.', content: json({ type: 'object' }) } },
      },
    },
  };
}

/** The console's page (the same for each of its client routes) and its content-hashed assets. */
function consolePaths(): Json {
  const page = (path: string, operationId: string, summary: string, parameters: Json[] = []) => ({
    [path]: {
      get: {
        operationId,
        tags: ['console'],
        summary,
        description:
          'The console’s page (the same HTML for every console path; the page routes in the browser). Public: it ' +
          'holds no data, signs in with an API key and calls this API. `Cache-Control: no-cache` with an ETag. ' +
          'A browser opening `/` is redirected here.',
        security: PUBLIC,
        parameters,
        responses: {
          '200': { description: 'The console page.', content: { 'text/html': { schema: { type: 'string' } } } },
          '304': { description: 'Not modified (`If-None-Match`).' },
          '503': failure(
            'The console was not built (`console_not_built`).',
            'console_not_built',
            'the console is not built',
          ),
        },
      },
    },
  });
  const shownRun = { ...runIdParam, name: 'runId', description: 'The run the page shows.' };
  return {
    ...page(CONSOLE_PATH, 'getConsole', 'Web console: inbox'),
    ...page(`${CONSOLE_PATH}/operations`, 'getConsoleOperations', 'Web console: operations'),
    ...page(`${CONSOLE_PATH}/runs/{runId}`, 'getConsoleRun', 'Web console: one run', [shownRun]),
    [`${CONSOLE_PATH}/assets/{file}`]: {
      get: {
        operationId: 'getConsoleAsset',
        tags: ['console'],
        summary: 'Web console asset',
        description: 'A script, style sheet or source map of the console, by content-hashed name (cached immutable).',
        security: PUBLIC,
        parameters: [{ name: 'file', in: 'path', required: true, schema: { type: 'string', minLength: 1 } }],
        responses: {
          '200': {
            description: 'The asset.',
            content: {
              'text/javascript': { schema: { type: 'string' } },
              'text/css': { schema: { type: 'string' } },
              'application/json': { schema: { type: 'object' } },
            },
          },
          '304': { description: 'Not modified (`If-None-Match`).' },
          '404': failure('No such asset (`not_found`).', 'not_found', 'no console asset app-x.js'),
        },
      },
    },
  };
}

// ------------------------------------------------------------------ document

export function buildOpenApi(opts: { serverUrl?: string } = {}): object {
  const doc = {
    openapi: '3.1.0',
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    info: {
      title: 'Handoff',
      version: VERSION,
      description:
        'A durable host for long-lived, human-in-the-loop OpenWOP workflow runs, exposed over the OpenWOP REST API and ' +
        'as an A2A v0.3 agent (JSON-RPC). Errors of the REST routes are `{error, message, details?}`. On every route: a ' +
        'Host the host is not known by is 421 `misdirected_request` (HANDOFF_ALLOWED_HOSTS), and with HANDOFF_TENANT_RATE ' +
        'a tenant over its rate is 429 `rate_limited` with Retry-After.',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [
      { url: opts.serverUrl ?? '/', description: opts.serverUrl ? 'This host' : 'The origin serving this document' },
    ],
    security: [{ bearer: [] }],
    tags: [
      { name: 'discovery', description: 'What the host is and what it serves.' },
      { name: 'runs', description: 'OpenWOP runs: create, read, cancel, follow the event log.' },
      { name: 'interrupts', description: 'Answer a run waiting for approval or input.' },
      { name: 'workflows', description: 'The loaded workflow definitions.' },
      { name: 'a2a', description: 'The A2A v0.3 agent surface (JSON-RPC) and its durable task state.' },
      { name: 'operations', description: 'Health and metrics.' },
      { name: 'console', description: 'The web console: a page and its assets, served by the host.' },
    ],
    paths: paths(),
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description:
            'An API key from HANDOFF_API_KEYS: `Authorization: Bearer <key>`. A host started without keys (loopback only) ' +
            'treats every request as the local identity.',
        },
      },
      responses: {
        Unauthorized: {
          description: 'Missing or unknown API key (`unauthenticated`).',
          headers: { 'WWW-Authenticate': { description: '`Bearer realm="handoff"`', schema: { type: 'string' } } },
          content: json(ref('ErrorEnvelope'), {
            error: 'unauthenticated',
            message: 'a valid API key is required: Authorization: Bearer <key>',
          }),
        },
        PayloadTooLarge: {
          description:
            'The body exceeds the host’s limit (`payload_too_large`; HANDOFF_BODY_LIMIT, discovery `limits.maxRequestBodyBytes`).',
          content: json(ref('ErrorEnvelope'), { error: 'payload_too_large', message: 'Request body is too large' }),
        },
        UnsupportedMediaType: {
          description: 'The body is not `application/json` or `application/a2a+json` (`unsupported_media_type`).',
          content: json(ref('ErrorEnvelope'), {
            error: 'unsupported_media_type',
            message: 'Content-Type must be application/json or application/a2a+json',
          }),
        },
      },
      schemas: schemas(),
    },
  };
  return plain(doc);
}

/** GET /v1/openapi.json: public (auth.ts lists it), built once. */
export function openapiRoutes(app: FastifyInstance, opts: { serverUrl?: string } = {}): void {
  const body = JSON.stringify(buildOpenApi(opts));
  app.get(OPENAPI_PATH, async (_req, reply) => {
    void reply.header('Content-Type', 'application/json; charset=utf-8').header('Cache-Control', 'public, max-age=300');
    return reply.send(body);
  });
}
