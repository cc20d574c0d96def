// The keys the host signs its agent cards with, for callers to verify (and pin) them:
// /.well-known/jwks.json, public, only when HANDOFF_CARD_SIGNING_KEY_FILE is set.
import type { FastifyInstance } from 'fastify';
import { type CardSigner, JWKS_PATH } from '../../a2a/card-signing.js';

export function jwksRoute(app: FastifyInstance, signer: CardSigner): void {
  const body = JSON.stringify(signer.jwks());
  app.get(
    JWKS_PATH,
    {
      config: { public: true },
      schema: {
        operationId: 'getCardSigningKeys',
        tags: ['a2a'],
        summary: 'The public keys that sign this host’s agent cards (JWK Set; the last one signs)',
      },
    },
    async (_req, reply) =>
      reply.header('Cache-Control', 'public, max-age=300').type('application/jwk-set+json').send(body),
  );
}
