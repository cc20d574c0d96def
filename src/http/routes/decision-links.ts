// Deciding from a notification (src/notify/): `GET|POST /v1/interrupts/{token}`, answered without
// an API key — the signed one-time token is the credential — and rate-limited per token and per
// client address. GET shows the gate and changes nothing (mail scanners fetch links); POST decides.
// Beside them, the notification outbox for operators: the list and the retry of a dead letter.
import { createHash } from 'node:crypto';
import rateLimit from '@fastify/rate-limit';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { LinkRefused, type DecisionLinkService } from '../../notify/decide.js';
import type { NotificationRecord } from '../../store/repos/notifications.js';
import type { Store } from '../../store/store.js';
import { HttpError } from '../errors.js';
import {
  BAD_MEDIA_TYPE,
  CROSS_SITE,
  failure,
  ref,
  ResolveBody,
  ResolveInterruptResponse,
  TOO_LARGE,
  tryLater,
  typed,
  UNAUTHORIZED,
} from '../schemas.js';

export interface DecisionLinkRouteDeps {
  links: DecisionLinkService;
  store: Store;
  /** Wakes the notification worker (a retried dead letter is due now). */
  kick: () => void;
  /** Uses of one token, and requests from one address, per minute. */
  perToken?: number;
  perAddress?: number;
}

const LINK_REFUSALS = {
  404: failure(
    'No such link: unknown, or its signature does not check (`link_not_found`; the two are not told apart).',
  ),
  409: failure(
    'The link was used already, or the gate was decided (`link_used`); or the draft changed since it was shown (`artifact_changed`).',
  ),
  410: failure(
    'The link has expired (`link_expired`), or the external-event wait a callback token names has ended (`interrupt_gone`).',
  ),
  429: tryLater('Too many requests for this link or from this address (`rate_limited`).'),
};

const LinkView = Type.Object(
  {
    runId: Type.String(),
    nodeId: Type.String(),
    interruptId: Type.String(),
    kind: Type.Union([Type.Literal('approval'), Type.Literal('clarification')]),
    title: Type.String(),
    recipient: Type.String({ description: 'Who the link decides as (`decidedBy`).' }),
    artifact: Type.Optional(Type.Unknown({ description: 'The draft to approve (approval gates).' })),
    questions: Type.Optional(Type.Unknown({ description: 'What is asked (clarification gates).' })),
    actions: Type.Array(Type.String(), { description: 'The allowed actions (`answer` for a clarification).' }),
    artifactHash: Type.String({
      description: 'sha256 of the RFC 8785 form of the draft or questions; send it back as `expectedArtifactHash`.',
    }),
    expiresAt: Type.String({ format: 'date-time', description: 'When the link expires.' }),
    deadline: Type.Optional(Type.String({ format: 'date-time', description: 'The gate’s deadline, if it has one.' })),
    workflowId: Type.String(),
  },
  { additionalProperties: true, description: 'The gate the link decides; nothing changed.' },
);

const Notification = Type.Object(
  {
    notificationId: Type.String(),
    runId: Type.String(),
    nodeId: Type.String(),
    interruptId: Type.String(),
    reason: Type.String({ description: '`opened`, `reminder` or `escalated`.' }),
    channel: Type.String({ description: '`email`, `webhook` or `slack`.' }),
    target: Type.String({ description: 'The address, or the URL’s origin.' }),
    recipient: Type.String(),
    state: Type.String({ description: '`pending`, `sent`, `dead` (retryable) or `cancelled` (the gate ended first).' }),
    attempts: Type.Integer(),
    dueAt: Type.String({ format: 'date-time' }),
    lastError: Type.Optional(Type.String()),
    createdAt: Type.String({ format: 'date-time' }),
    sentAt: Type.Optional(Type.String({ format: 'date-time' })),
  },
  { additionalProperties: false, description: 'A notification of a gate.' },
);

/** A webhook or Slack URL may carry its credential in the path: the API shows only the origin. */
function notificationView(n: NotificationRecord) {
  return {
    notificationId: n.notificationId,
    runId: n.runId,
    nodeId: n.nodeId,
    interruptId: n.interruptId,
    reason: n.reason,
    channel: n.channel,
    target: n.channel === 'email' ? n.target : new URL(n.target).origin,
    recipient: n.recipient,
    state: n.state,
    attempts: n.attempts,
    dueAt: new Date(n.dueAt).toISOString(),
    ...(n.lastError ? { lastError: n.lastError } : {}),
    createdAt: n.createdAt,
    ...(n.sentAt ? { sentAt: n.sentAt } : {}),
  };
}

const tokenKey = (req: FastifyRequest) =>
  `link:${createHash('sha256')
    .update(String((req.params as { token?: string }).token))
    .digest('hex')}`;

export async function decisionLinkRoutes(app: FastifyInstance, deps: DecisionLinkRouteDeps): Promise<void> {
  // One registration per host; when HANDOFF_TENANT_RATE registered the plugin already, its
  // limiter factory is reused (with these routes' own keys and limits).
  if (!app.hasDecorator('createRateLimit')) await app.register(rateLimit, { global: false });
  const limiters = [
    app.createRateLimit({
      max: deps.perToken ?? 10,
      timeWindow: 60_000,
      keyGenerator: tokenKey,
      allowList: () => false,
    }),
    app.createRateLimit({
      max: deps.perAddress ?? 60,
      timeWindow: 60_000,
      keyGenerator: (req) => `link-address:${req.ip}`,
      allowList: () => false,
    }),
  ];
  const limited = async (req: FastifyRequest, reply: FastifyReply) => {
    for (const limiter of limiters) {
      const r = await limiter(req);
      if (!r.isAllowed && r.isExceeded) {
        void reply.header('Retry-After', String(r.ttlInSeconds));
        throw new HttpError(
          429,
          'rate_limited',
          `too many requests for this decision link; retry in ${r.ttlInSeconds} s`,
          {
            retryAfterSeconds: r.ttlInSeconds,
          },
        );
      }
    }
  };
  const refusal = (err: unknown): never => {
    if (err instanceof LinkRefused) throw new HttpError(err.status, err.code, err.message);
    throw err;
  };
  const api = typed(app);
  // Any token shape is a 404 from the handler, never a validation error: a malformed token and an
  // unknown one answer alike.
  const params = Type.Object({ token: Type.String() });

  api.get(
    '/v1/interrupts/:token',
    {
      config: { public: true },
      preHandler: limited,
      schema: {
        operationId: 'inspectInterruptByToken',
        tags: ['interrupts'],
        summary: 'The gate a decision link decides (no API key; changes nothing)',
        params,
        response: { 200: LinkView, ...LINK_REFUSALS },
      },
    },
    async (req, reply) => {
      void reply.header('Cache-Control', 'no-store');
      return deps.links.inspect(req.params.token).catch(refusal);
    },
  );

  // On the request, before the body is even parsed: an unknown token is 404 whatever the body —
  // a wrong media type or malformed JSON too (OpenWOP's interrupt-token-matrix) — so a body never
  // tells whether a token exists. (Fastify parses the body before preValidation, so the check
  // could not wait until then; the route's params are known from onRequest on.)
  const knownToken = async (req: FastifyRequest) => {
    const { token } = req.params as { token: string };
    await deps.links.checkIssued(token).catch(refusal);
  };
  api.post(
    '/v1/interrupts/:token',
    {
      config: { public: true },
      onRequest: [limited, knownToken],
      schema: {
        operationId: 'resolveInterruptByToken',
        tags: ['interrupts'],
        summary: 'Decide a gate by its one-time decision link (no API key)',
        description:
          'The body is that of `POST /v1/runs/{id}/interrupts/{nodeId}`: `{resumeValue: {…}}`. The decision is ' +
          'recorded with `decidedBy` = the link’s recipient, who must be allowed by the gate’s `approversList`.',
        params,
        body: ResolveBody,
        response: {
          200: ref(ResolveInterruptResponse, 'Decided (or a vote recorded); the link is spent.'),
          400: failure('The resume value does not fit the gate (`validation_error`).'),
          403: failure('The recipient may not decide this gate (`forbidden`), or a cross-site write.'),
          413: TOO_LARGE,
          415: BAD_MEDIA_TYPE,
          ...LINK_REFUSALS,
        },
      },
    },
    async (req) => {
      // An external-event wait's signed callback token, else a decision link.
      const { run, interrupt, outcome } = await ((await deps.links
        .resolveByInterruptToken(req.params.token, req.body.resumeValue)
        .catch(refusal)) ??
        deps.links.decide(req.params.token, req.body.resumeValue, req.body.expectedArtifactHash).catch(refusal));
      return {
        runId: run.runId,
        status: run.status,
        interrupt: {
          kind: interrupt.kind,
          nodeId: interrupt.nodeId,
          interruptId: interrupt.interruptId,
          outcome,
          votes: interrupt.votes.length,
          requiredApprovals: (interrupt.data.requiredApprovals as number | undefined) ?? undefined,
        },
      };
    },
  );

  api.get(
    '/v1/notifications',
    {
      schema: {
        operationId: 'listNotifications',
        tags: ['interrupts'],
        summary: 'Notifications of the caller’s tenant (operators)',
        description: 'The notification outbox, newest first: pending, sent, dead-lettered (retryable), cancelled.',
        querystring: Type.Object(
          {
            runId: Type.Optional(Type.String()),
            state: Type.Optional(Type.Union(['pending', 'sent', 'dead', 'cancelled'].map((s) => Type.Literal(s)))),
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object(
            { notifications: Type.Array(Notification) },
            { description: 'The notifications, newest first.' },
          ),
          400: failure('Invalid query.'),
          401: UNAUTHORIZED,
        },
      },
    },
    async (req) => ({
      notifications: (await deps.store.notifications.list(req.caller.tenantId, req.query)).map(notificationView),
    }),
  );

  api.post(
    '/v1/notifications/:id/retry',
    {
      schema: {
        operationId: 'retryNotification',
        tags: ['interrupts'],
        summary: 'Retry a dead-lettered notification',
        params: Type.Object({ id: Type.String() }),
        response: {
          200: Notification,
          401: UNAUTHORIZED,
          403: CROSS_SITE,
          404: failure('No dead-lettered notification with this id for this tenant (`not_found`).'),
        },
      },
    },
    async (req) => {
      const row = await deps.store.notifications.retryDead(req.caller.tenantId, req.params.id);
      if (!row) throw new HttpError(404, 'not_found', `no dead-lettered notification ${req.params.id}`);
      deps.kick();
      return notificationView(row);
    },
  );
}
