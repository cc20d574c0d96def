// The TypeBox schemas of the REST surface: what the routes validate (requests) and what they answer
// (responses), and so what the OpenAPI document (openapi.ts) says. The wire views (views.ts) are
// typed from the response schemas. Response schemas document and type; they never reshape a body
// (see `typed` below).
//
// A schema with an `$id` is a named component of the document: openapi.ts registers it (REST_SCHEMAS,
// A2A_SCHEMAS) and a route points to it with `ref(Schema)`. Request schemas are written inline
// (the request validator, validation.ts, does not resolve `$ref`).
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { type Static, type TSchema, Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import a2aCapabilitySchema from '../../schemas/capabilities-a2a.schema.json' with { type: 'json' };
import workflowDefinitionSchema from '../../schemas/workflow-definition.schema.json' with { type: 'json' };
import { ACTIVITY_KINDS } from '../engine/activity.js';
import type { WorkflowDefinition as WorkflowDefinitionType } from '../engine/workflow/definition.js';
import { MAX_EVENT_SEQUENCE, RUN_STATUSES } from '../store/model.js';

/** A JSON object whose fields are open (run inputs, node outputs, payloads). */
export const OpenObject = (description?: string) =>
  Type.Object({}, { additionalProperties: true, ...(description ? { description } : {}) });

const DateTime = (description?: string) =>
  Type.String({ format: 'date-time', ...(description ? { description } : {}) });

/**
 * A reference to a named schema (registered with its `$id`): `#/components/schemas/<id>` in the
 * document, and the schema's static type for the handler. `description` becomes the response's.
 */
export const ref = <T extends TSchema>(schema: T, description?: string) =>
  Type.Unsafe<Static<T>>({ $ref: schema.$id as string, ...(description ? { description } : {}) });

/** A response that is not JSON (a page, an asset, a stream, metrics): documented, typed as the raw body. */
export const raw = (description: string, ...mediaTypes: string[]) =>
  Type.Unsafe<string | Buffer>({
    description,
    content: Object.fromEntries(mediaTypes.map((m) => [m, { schema: { type: 'string' } }])),
  });

/** A response without a body (304). */
export const empty = (description: string) => Type.Unsafe<undefined>({ description, type: 'null' });

/** Response headers, documented beside a response schema. */
export const withHeaders = <T extends TSchema>(schema: T, headers: Record<string, { description: string }>) =>
  Type.Unsafe<Static<T>>({
    ...schema,
    headers: Object.fromEntries(
      Object.entries(headers).map(([name, h]) => [name, { type: 'string', description: h.description }]),
    ),
  });

// ------------------------------------------------------------------ errors

export const ErrorEnvelope = Type.Object(
  {
    error: Type.String({ description: 'Machine-readable code.' }),
    message: Type.String({ description: 'Human-readable text.' }),
    details: Type.Optional(
      OpenObject('Code-specific data (e.g. `errors` of a validation failure, `retryAfterSeconds` of a 429).'),
    ),
  },
  {
    $id: 'ErrorEnvelope',
    additionalProperties: false,
    description:
      'The OpenWOP error envelope. Codes used: validation_error, unauthenticated, forbidden, not_found, ' +
      'run_terminal, interrupt_not_found, interrupt_already_resolved, interrupt_cancelled, interrupt_withdrawn, artifact_changed, idempotency_key_mismatch, ' +
      'conflict, payload_too_large, unsupported_media_type, rate_limited, too_many_active_runs, too_many_streams, ' +
      'bad_request, internal_error.',
  },
);

/** An error response: the `{error, message, details?}` envelope. */
export const failure = (description: string) => ref(ErrorEnvelope, description);

const RETRY_AFTER = { 'Retry-After': { description: 'Seconds to wait before trying again.' } };

/** The errors every route with a key and a JSON body can answer, by status. */
export const UNAUTHORIZED = withHeaders(failure('Missing or unknown API key (`unauthenticated`).'), {
  'WWW-Authenticate': { description: '`Bearer realm="handoff"`' },
});
export const TOO_LARGE = failure(
  'The body exceeds the host’s limit (`payload_too_large`; HANDOFF_BODY_LIMIT, discovery `limits.maxRequestBodyBytes`).',
);
export const BAD_MEDIA_TYPE = failure(
  'The body is not `application/json` or `application/a2a+json` (`unsupported_media_type`).',
);
export const CROSS_SITE = failure(
  'A browser wrote from an origin that is not allowed (`forbidden`; HANDOFF_CORS_ORIGINS).',
);
export const tryLater = (description: string) => withHeaders(failure(description), RETRY_AFTER);
export const TOO_MANY_STREAMS = tryLater(
  'The host already serves HANDOFF_SSE_MAX_STREAMS streams (`too_many_streams`).',
);

// ------------------------------------------------------------------ runs

export const RunStatus = Type.Union(
  RUN_STATUSES.map((s) => Type.Literal(s)),
  {
    $id: 'RunStatus',
    description: 'OpenWOP run status. Terminal: completed, failed, cancelled. Treat unknown values as terminal.',
  },
);

export const RunError = Type.Object(
  { code: Type.String(), message: Type.String(), details: Type.Optional(OpenObject()) },
  { $id: 'RunError', additionalProperties: true },
);

const InterruptKind = Type.Union([
  Type.Literal('approval'),
  Type.Literal('clarification'),
  Type.Literal('external-event'),
]);

export const OpenInterrupt = Type.Object(
  {
    kind: InterruptKind,
    nodeId: Type.String(),
    interruptId: Type.String(),
    payload: OpenObject('What the gate asks: the approval artifact and config, or the clarification questions.'),
    artifactHash: Type.String({
      pattern: '^sha256:[0-9a-f]{64}$',
      description:
        'SHA-256 of the RFC 8785 (JCS) form of what is decided on: the artifact (its latest edit, when a quorum ' +
        'vote edited it) or the questions. Send it back as `expectedArtifactHash` (or `If-Match`) to bind the ' +
        'decision to it: if it changed meanwhile the decision is refused, 409 `artifact_changed`.',
    }),
    expiresAt: Type.Optional(
      DateTime(
        'The gate’s deadline (its `timeoutMs` from when it opened); at it the gate resolves with its `onTimeout`.',
      ),
    ),
    votes: Type.Array(
      Type.Object(
        {
          principal: Type.String({ description: 'Whom the vote counts for.' }),
          action: Type.String(),
          at: DateTime(),
          castBy: Type.Optional(
            Type.String({
              description:
                'On a `voterIdentity: "declared"` gate: the authenticated caller that cast the vote for `principal`.',
            }),
          ),
          via: Type.Optional(
            Type.String({
              description:
                'What made the caller eligible when no approvers list named it: `group:<ref>` or `role:<ref>`, ' +
                'the gate’s `approverGroupRefs` / `approverRoleRefs` entry its credential matched when it voted.',
            }),
          ),
        },
        { additionalProperties: true },
      ),
    ),
    exchanges: Type.Array(
      Type.Object(
        { principalId: Type.String(), question: Type.String(), at: DateTime() },
        { additionalProperties: true },
      ),
      { description: '`ask` exchanges recorded while the interrupt stays open.' },
    ),
    interruptToken: Type.Optional(
      Type.String({ description: 'An external-event interrupt: the signed token that resolves it.' }),
    ),
    callbackUrl: Type.Optional(
      Type.String({ description: 'An external-event interrupt: `/v1/interrupts/{token}`, relative to the host.' }),
    ),
  },
  { $id: 'OpenInterrupt', additionalProperties: true, description: 'The open interrupt of a waiting run.' },
);

export const RunActivity = Type.Object(
  {
    kind: Type.Union(ACTIVITY_KINDS.map((k) => Type.Literal(k))),
    nodeId: Type.Optional(Type.String()),
    summary: Type.String({
      description:
        'One sentence for people, e.g. "Retrying the call to agent reviewer (attempt 4, next at 12:04:10 UTC): connection refused".',
    }),
    since: DateTime(
      'Since when the run does this (the first failure of a retry, the opening of an interrupt, else its last change).',
    ),
    attempt: Type.Optional(
      Type.Integer({ minimum: 1, description: 'Retrying: the attempts made so far (all failed).' }),
    ),
    nextAttemptAt: Type.Optional(DateTime('Retrying: when the next attempt is due.')),
    lastError: Type.Optional(
      Type.Object(
        { code: Type.String(), message: Type.String() },
        { additionalProperties: true, description: 'Retrying: the last attempt’s error (redacted).' },
      ),
    ),
    peer: Type.Optional(
      Type.Object(
        {
          agent: Type.String(),
          taskId: Type.Optional(Type.String()),
          state: Type.Optional(Type.String()),
          url: Type.Optional(Type.String()),
        },
        { additionalProperties: true, description: 'The agent called (a2a.invoke), and its task once there is one.' },
      ),
    ),
    child: Type.Optional(
      Type.Object(
        { runId: Type.String() },
        { additionalProperties: true, description: 'The (first) child run waited for.' },
      ),
    ),
  },
  {
    $id: 'RunActivity',
    additionalProperties: true,
    description:
      'Why a run that has not ended is not moving: running, sleeping, retrying, or waiting on a person, a peer agent or a child run. A forked run shows its most pressing line (retrying first, then a person, a peer, a child, a timer).',
  },
);

export const RunSnapshot = Type.Object(
  {
    runId: Type.String({ minLength: 1, maxLength: 128 }),
    workflowId: Type.String(),
    status: ref(RunStatus),
    owner: Type.Object({ tenant: Type.String(), principal: Type.String() }, { additionalProperties: true }),
    inputs: OpenObject(),
    variables: OpenObject(),
    nodeStates: OpenObject('Node outputs by node id.'),
    currentNodeId: Type.Optional(Type.String({ description: 'Set while the run waits for approval or input.' })),
    interrupt: Type.Optional(ref(OpenInterrupt, 'The oldest open interrupt (several may be open in a forked run).')),
    interrupts: Type.Optional(
      Type.Array(ref(OpenInterrupt), { description: 'Every open interrupt, oldest first. Reply to each at its node.' }),
    ),
    branches: Type.Optional(
      Type.Array(
        Type.Object(
          {
            id: Type.String(),
            nodeId: Type.String(),
            waiting: Type.Optional(InterruptKind),
            wakeAt: Type.Optional(DateTime()),
          },
          { additionalProperties: true },
        ),
        { description: 'While the run is forked (core.parallel): each live branch and the node it is at.' },
      ),
    ),
    error: Type.Optional(ref(RunError)),
    activity: Type.Optional(ref(RunActivity, 'While the run has not ended: what it is doing or waiting on.')),
    waitingOn: Type.Optional(
      Type.Object(
        {
          agent: Type.Optional(Type.String()),
          peerTaskId: Type.Optional(Type.String()),
          state: Type.Optional(Type.String()),
        },
        {
          additionalProperties: true,
          description: 'While an a2a.invoke node waits: the peer agent, its task id and that task’s last known state.',
        },
      ),
    ),
    parentRunId: Type.Optional(
      Type.String({ description: 'A child run (core.forEach, core.subWorkflow): the run that started it.' }),
    ),
    parentNodeId: Type.Optional(Type.String({ description: 'A child run: the node of its parent that started it.' })),
    children: Type.Optional(
      Type.Array(
        Type.Object(
          {
            nodeId: Type.String(),
            runId: Type.String(),
            workflowId: Type.String(),
            status: ref(RunStatus, 'The child’s own stored status.'),
          },
          { additionalProperties: true },
        ),
        { description: 'The child runs of this run that have not ended yet, oldest first (absent: none).' },
      ),
    ),
    childRuns: Type.Optional(
      Type.Array(Type.Object({ runId: Type.String(), status: ref(RunStatus) }, { additionalProperties: true }), {
        description: 'The same list as `children` (the name OpenWOP readers use).',
      }),
    ),
    tags: Type.Array(Type.String()),
    metadata: OpenObject(),
    createdAt: DateTime(),
    updatedAt: DateTime(),
    completedAt: Type.Optional(DateTime()),
  },
  {
    $id: 'RunSnapshot',
    additionalProperties: true,
    description: 'The run as it is now. Open: readers ignore fields they do not know.',
  },
);

/** An open interrupt as the run list shows it. */
const interruptSummary = (description: string) =>
  Type.Object(
    {
      kind: InterruptKind,
      nodeId: Type.String(),
      title: Type.Optional(Type.String()),
      approversList: Type.Optional(
        Type.Array(Type.String(), {
          description: 'Who may decide; absent, and no group or role refs either: any principal of the tenant.',
        }),
      ),
      approverGroupRefs: Type.Optional(
        Type.Array(Type.String(), {
          description:
            'The approver groups whose members may decide too (RFC 0104), matched against the groups the ' +
            'caller’s credential names.',
        }),
      ),
      approverRoleRefs: Type.Optional(
        Type.Array(Type.String(), {
          description:
            'The approver roles whose holders may decide too (RFC 0104), matched against the roles the ' +
            'caller’s credential names.',
        }),
      ),
      expiresAt: Type.Optional(DateTime('The gate’s deadline, if it has one.')),
    },
    { additionalProperties: true, description },
  );
export type InterruptSummary = Static<ReturnType<typeof interruptSummary>>;

export const RunSummary = Type.Object(
  {
    runId: Type.String(),
    workflowId: Type.String(),
    status: ref(RunStatus),
    tags: Type.Array(Type.String()),
    createdAt: DateTime(),
    updatedAt: DateTime(),
    completedAt: Type.Optional(DateTime()),
    interrupt: Type.Optional(interruptSummary('The oldest open interrupt of a run waiting for approval or input.')),
    interrupts: Type.Optional(
      Type.Array(interruptSummary('An open interrupt.'), {
        description: 'Every open interrupt, oldest first (a forked run may wait at several nodes at once).',
      }),
    ),
    waitingOn: Type.Optional(
      Type.Unknown({ description: 'What else the run waits on (e.g. another A2A agent’s task).' }),
    ),
    activity: Type.Optional(ref(RunActivity, 'While the run has not ended: what it is doing or waiting on.')),
    error: Type.Optional(ref(RunError)),
    parentRunId: Type.Optional(Type.String({ description: 'A child run: the run that started it.' })),
  },
  {
    $id: 'RunSummary',
    additionalProperties: true,
    description: 'A run as lists show it: identity, times, and what it waits on (no inputs or node states).',
  },
);

export const RunList = Type.Object(
  {
    runs: Type.Array(ref(RunSummary)),
    nextCursor: Type.Optional(
      Type.String({ description: 'Pass as `cursor` for the next page; absent on the last page.' }),
    ),
  },
  { $id: 'RunList' },
);

export const RunEvent = Type.Object(
  {
    eventId: Type.String(),
    runId: Type.String(),
    type: Type.String({ description: 'Event type, e.g. run.started, interrupt.requested. Tolerate unknown types.' }),
    sequence: Type.Integer({ minimum: 0, description: 'Gap-free per run, from 0.' }),
    nodeId: Type.Optional(Type.String()),
    payload: OpenObject(),
    timestamp: DateTime(),
  },
  { $id: 'RunEvent', additionalProperties: true, description: 'One entry of the run’s durable event log.' },
);

export const CreateRunBody = Type.Object(
  {
    workflowId: Type.String({ minLength: 1, maxLength: 128 }),
    inputs: Type.Optional(Type.Object({}, { additionalProperties: true })),
    tags: Type.Optional(Type.Array(Type.String({ maxLength: 256 }), { maxItems: 100 })),
    metadata: Type.Optional(Type.Object({}, { additionalProperties: true })),
    tenantId: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);

export const CreateRunResponse = Type.Object(
  {
    runId: Type.String(),
    status: ref(RunStatus),
    statusUrl: Type.String({ description: 'Path of the run snapshot.' }),
    eventsUrl: Type.String({ description: 'Path of the run’s event stream.' }),
  },
  { $id: 'CreateRunResponse' },
);

export const CancelBody = Type.Object(
  { reason: Type.Optional(Type.String({ maxLength: 1024 })) },
  { additionalProperties: false },
);

export const CancelRunResponse = Type.Object(
  {
    runId: Type.String(),
    status: ref(RunStatus, '`cancelled`, or `cancelling` while a worker finishes the step in flight.'),
  },
  { $id: 'CancelRunResponse' },
);

/** An `artifactHash` as a decision sends it back. */
const ExpectedArtifactHash = Type.String({
  minLength: 1,
  maxLength: 200,
  description:
    'The interrupt’s `artifactHash` as the decider saw it. If the artifact (or the questions) changed since, ' +
    'the decision is refused with 409 `artifact_changed` and nothing changes.',
});

export const ResolveBody = Type.Object(
  {
    resumeValue: Type.Object({}, { additionalProperties: true }),
    expectedArtifactHash: Type.Optional(ExpectedArtifactHash),
  },
  { additionalProperties: false },
);

/** The headers a decision may carry: the artifact it saw, and the surface it came from (audit log). */
export const DecisionHeaders = Type.Object({
  'if-match': Type.Optional(
    Type.String({
      description: 'The interrupt’s `artifactHash` (quoted or not): the same binding as `expectedArtifactHash`.',
    }),
  ),
  'handoff-surface': Type.Optional(
    Type.String({
      description: '`console` or `cli`: the client the decision came from, as the audit log records it (else `rest`).',
    }),
  ),
});

/** The legacy alias's body: the resume value itself (`{action, …}`), not wrapped in `resumeValue`. */
export const LegacyApprovalBody = Type.Object({ action: Type.String() }, { additionalProperties: true });

export const ResolveInterruptResponse = Type.Object(
  {
    runId: Type.String(),
    status: ref(RunStatus),
    interrupt: Type.Object({
      kind: InterruptKind,
      nodeId: Type.String(),
      interruptId: Type.String(),
      outcome: Type.Union([Type.Literal('resolved'), Type.Literal('vote-recorded'), Type.Literal('ask-recorded')], {
        description: '`resolved` ends the gate; a vote below the quorum or an `ask` keeps it open.',
      }),
      votes: Type.Integer({ minimum: 0, description: 'Votes recorded on the gate so far.' }),
      requiredApprovals: Type.Optional(Type.Integer({ minimum: 1 })),
    }),
  },
  { $id: 'ResolveInterruptResponse' },
);

export const PollQuery = Type.Object(
  {
    lastSequence: Type.Optional(
      Type.Integer({
        minimum: -1,
        maximum: MAX_EVENT_SEQUENCE,
        description: 'Return events with a sequence greater than this (-1, the default, from the start).',
      }),
    ),
    since: Type.Optional(
      Type.Integer({
        minimum: -1,
        maximum: MAX_EVENT_SEQUENCE,
        description: 'Alias of `lastSequence`; `lastSequence` wins.',
      }),
    ),
    timeout: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 60,
        description: 'Seconds to wait when there is no new event yet (default 30; 0 answers at once).',
      }),
    ),
    limit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1000, description: 'Most events in one answer (default 500).' }),
    ),
  },
  { additionalProperties: false },
);

export const PollEventsResponse = Type.Object(
  {
    runId: Type.String(),
    events: Type.Array(ref(RunEvent)),
    lastEventSeq: Type.Integer({ minimum: -1, description: 'Pass as `lastSequence` to continue.' }),
    runStatus: ref(RunStatus),
    isTerminal: Type.Boolean(),
    isComplete: Type.Boolean({ description: 'Terminal and every event delivered: stop polling.' }),
  },
  { $id: 'PollEventsResponse' },
);

// ------------------------------------------------------------------ workflows, discovery, health

export const WorkflowSummary = Type.Object(
  { id: Type.String(), name: Type.String(), version: Type.String(), description: Type.Optional(Type.String()) },
  { $id: 'WorkflowSummary' },
);

export const RefusedWorkflow = Type.Object(
  { file: Type.String(), problems: Type.Array(Type.String()) },
  { $id: 'RefusedWorkflow', description: 'A workflow file the host did not load, and why.' },
);

export const WorkflowList = Type.Object(
  {
    workflows: Type.Array(ref(WorkflowSummary)),
    refused: Type.Optional(Type.Array(ref(RefusedWorkflow), { description: 'With `?include=refused`.' })),
  },
  { $id: 'WorkflowList' },
);

/** The published JSON Schemas, registered under a short `$id` (the document's component name). */
export const WorkflowDefinition = Type.Unsafe<WorkflowDefinitionType>({
  ...workflowDefinitionSchema,
  $id: 'WorkflowDefinition',
});
export const A2ACapability = Type.Unsafe<Record<string, unknown>>({ ...a2aCapabilitySchema, $id: 'A2ACapability' });

export const Discovery = Type.Object(
  {
    protocolVersion: Type.String(),
    implementation: Type.Object({ name: Type.String(), version: Type.String() }),
    supportedEnvelopes: Type.Array(Type.String()),
    schemaVersions: OpenObject(),
    limits: Type.Object(
      {
        clarificationRounds: Type.Integer({ minimum: 0 }),
        schemaRounds: Type.Integer({ minimum: 0 }),
        envelopesPerTurn: Type.Integer({ minimum: 0 }),
        maxRequestBodyBytes: Type.Optional(Type.Integer({ minimum: 1 })),
      },
      { additionalProperties: true },
    ),
    supportedTransports: Type.Array(Type.String()),
    workflows: Type.Array(Type.String(), { description: 'Ids of the loaded workflows.' }),
    fixtures: Type.Array(Type.String(), {
      description:
        'Ids of the canonical OpenWOP conformance fixtures seeded (RFC 0003; HANDOFF_CONFORMANCE_FIXTURES=1).',
    }),
    a2a: Type.Optional(ref(A2ACapability)),
    interrupt: Type.Optional(
      Type.Object(
        {
          approverRouting: Type.Optional(
            Type.Object(
              {
                supported: Type.Boolean(),
                refKinds: Type.Optional(Type.Array(Type.Union([Type.Literal('group'), Type.Literal('role')]))),
                audience: Type.Optional(Type.Boolean()),
              },
              { additionalProperties: true },
            ),
          ),
        },
        {
          additionalProperties: true,
          description:
            'RFC 0104: approval gates take `approverGroupRefs` / `approverRoleRefs`, matched against the groups ' +
            'and roles of the caller’s credential; the `audience` hint is not taken.',
        },
      ),
    ),
  },
  {
    $id: 'Discovery',
    additionalProperties: true,
    description: 'The OpenWOP discovery document. Open: new families appear at the root.',
  },
);

export const Health = Type.Object(
  {
    status: Type.Union([Type.Literal('ok'), Type.Literal('degraded'), Type.Literal('unavailable')]),
    database: Type.Union([Type.Literal('sqlite'), Type.Literal('postgres')]),
    message: Type.Optional(Type.String({ description: 'Why the database is unavailable (503 only).' })),
    refusedWorkflows: Type.Optional(
      Type.Integer({ minimum: 1, description: 'How many workflow files were refused at start (`degraded`).' }),
    ),
  },
  { $id: 'Health' },
);

// ------------------------------------------------------------------ audit log

export const AuditEntry = Type.Object(
  {
    seq: Type.Integer({ minimum: 1, description: 'The entry’s place in its tenant’s chain: 1, 2, …' }),
    time: DateTime('When the act committed.'),
    tenantId: Type.String(),
    principal: Type.String({ description: 'Who acted (`system:timeout` for a deadline).' }),
    surface: Type.String({ description: 'rest, a2a, console, cli, link; `deadline` for the host’s own.' }),
    act: Type.String({
      description:
        'approve, reject, refine, edit, answer, ask, cancel, push-config.set, push-config.delete, delivery.retry, ' +
        'escalate, timeout.',
    }),
    runId: Type.Optional(Type.String()),
    nodeId: Type.Optional(Type.String()),
    values: OpenObject('The decision’s resume value and outcome, or the act’s parameters (never a secret).'),
    subjectHash: Type.Optional(
      Type.String({ description: '`sha256:<hex>` of the RFC 8785 form of the artifact or questions decided on.' }),
    ),
    prevHash: Type.Union([Type.String(), Type.Null()], { description: 'The hash of the entry before (null: first).' }),
    hash: Type.String({ description: 'Hex SHA-256 of the RFC 8785 form of the entry without `hash`.' }),
  },
  { $id: 'AuditEntry', additionalProperties: false, description: 'One act in the tamper-evident audit log.' },
);

export const AuditPage = Type.Object(
  {
    entries: Type.Array(ref(AuditEntry)),
    nextSince: Type.Optional(
      Type.String({ description: 'Pass as `since` for the next page; absent on the last page.' }),
    ),
  },
  { $id: 'AuditPage', additionalProperties: false },
);

export const AuditQuery = Type.Object(
  {
    runId: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'Only this run’s entries.' })),
    since: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 1024,
        description: 'An ISO 8601 time (entries at or after it), or the `nextSince` of the page before.',
      }),
    ),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
  },
  { additionalProperties: false },
);

/** Every named schema of this module, registered with the app for the document's components. */
export const REST_SCHEMAS: TSchema[] = [
  ErrorEnvelope,
  RunStatus,
  RunError,
  OpenInterrupt,
  RunActivity,
  RunSnapshot,
  RunSummary,
  RunList,
  RunEvent,
  CreateRunResponse,
  CancelRunResponse,
  ResolveInterruptResponse,
  PollEventsResponse,
  WorkflowSummary,
  RefusedWorkflow,
  WorkflowList,
  WorkflowDefinition,
  A2ACapability,
  Discovery,
  Health,
  AuditEntry,
  AuditPage,
];

/**
 * The app as route modules use it: handlers typed from their route's schemas (TypeBox). Response
 * schemas document the API and type the handlers; they never reshape what is sent: fast-json-stringify
 * would drop the fields a schema leaves open (run outputs, A2A results) and coerce types, so every
 * body is JSON.stringify'd, exactly as without a schema. Set here so that a route module behaves the
 * same on any Fastify instance (a test's bare one included), where `ref()` is then never resolved.
 */
export function typed(app: FastifyInstance) {
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  return app.withTypeProvider<TypeBoxTypeProvider>();
}
