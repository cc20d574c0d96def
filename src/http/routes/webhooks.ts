// Webhook subscriptions (spec/v1/webhooks.md): POST /v1/webhooks registers a URL for a tenant's
// run events, DELETE /v1/webhooks/{id} removes one. The URL passes the push egress guard here and
// again at every dial (src/webhooks/webhooks.ts); the signing secret is answered once.
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { type WebhookService, WebhookUrlRejected } from '../../webhooks/webhooks.js';
import { HttpError } from '../errors.js';
import { BAD_MEDIA_TYPE, CROSS_SITE, empty, failure, TOO_LARGE, typed, UNAUTHORIZED } from '../schemas.js';

const RegisterBody = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: 2048, description: 'An https URL the host may reach.' }),
    events: Type.Array(Type.String({ minLength: 1, maxLength: 128 }), {
      minItems: 1,
      maxItems: 100,
      description: 'Run event types to deliver (`run.completed`, `approval.requested`, …).',
    }),
    tenantId: Type.Optional(Type.String({ description: 'Must be the authenticated tenant when given.' })),
    tags: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 256 }), {
        maxItems: 100,
        description: 'Only runs with one of these tags deliver.',
      }),
    ),
  },
  { additionalProperties: false },
);

const Registered = Type.Object(
  {
    webhookId: Type.String(),
    subscriptionId: Type.String({ description: 'The same id, under the name some clients read.' }),
    secret: Type.String({ description: 'The signing secret (64 hex), answered this once.' }),
    secretFingerprint: Type.String({ description: 'First 8 hex of sha256(secret).' }),
    signatureAlgorithm: Type.Literal('v1'),
  },
  { additionalProperties: false },
);

function checkTenant(given: string | undefined, caller: string): void {
  if (given !== undefined && given !== caller) {
    throw new HttpError(403, 'forbidden', 'tenantId does not match the authenticated tenant');
  }
}

export function webhookRoutes(app: FastifyInstance, hooks: WebhookService): void {
  const api = typed(app);
  api.post(
    '/v1/webhooks',
    {
      schema: {
        operationId: 'registerWebhook',
        tags: ['webhooks'],
        summary: 'Register a webhook subscription',
        body: RegisterBody,
        response: {
          201: Registered,
          400: failure(
            'Invalid body or URL (`validation_error`), or a URL the host will not call (`webhook_url_rejected`).',
          ),
          401: UNAUTHORIZED,
          403: CROSS_SITE,
          413: TOO_LARGE,
          415: BAD_MEDIA_TYPE,
        },
      },
    },
    async (req, reply) => {
      const body = req.body;
      if (!URL.canParse(body.url)) throw new HttpError(400, 'validation_error', 'url is not a URL');
      // The address is judged before the tenant: a URL the host will not call is refused whoever
      // asks (it tells nothing about any tenant), as OpenWOP's webhook-negative scenario expects.
      const refusal = hooks.urlRefusal(body.url);
      if (refusal !== undefined) throw new HttpError(400, 'webhook_url_rejected', refusal);
      checkTenant(body.tenantId, req.caller.tenantId);
      try {
        const { record, secret } = await hooks.register(req.caller.tenantId, body);
        return reply.status(201).send({
          webhookId: record.webhookId,
          subscriptionId: record.webhookId,
          secret,
          secretFingerprint: record.secretFingerprint,
          signatureAlgorithm: 'v1' as const,
        });
      } catch (err) {
        if (err instanceof WebhookUrlRejected) throw new HttpError(400, 'webhook_url_rejected', err.message);
        throw err;
      }
    },
  );

  api.delete(
    '/v1/webhooks/:webhookId',
    {
      schema: {
        operationId: 'unregisterWebhook',
        tags: ['webhooks'],
        summary: 'Remove a webhook subscription',
        params: Type.Object({ webhookId: Type.String() }),
        querystring: Type.Object({ tenantId: Type.Optional(Type.String()) }),
        response: {
          204: empty('Removed: no delivery starts after this.'),
          401: UNAUTHORIZED,
          403: failure('`tenantId` is not the authenticated tenant (`forbidden`).'),
          404: failure('No such subscription of this tenant (`subscription_not_found`).'),
        },
      },
    },
    async (req, reply) => {
      checkTenant(req.query.tenantId, req.caller.tenantId);
      if (!(await hooks.unregister(req.caller.tenantId, req.params.webhookId))) {
        throw new HttpError(404, 'subscription_not_found', `no webhook '${req.params.webhookId}'`);
      }
      return reply.status(204).send();
    },
  );
}
