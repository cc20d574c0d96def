// The keys the host signs its agent cards with, for callers to verify (and pin) them:
// /.well-known/jwks.json, public, only when HANDOFF_CARD_SIGNING_KEY_FILE is set; and the console's
// sign-in settings with the OpenID provider, when HANDOFF_OIDC_ISSUER is set.
import type { FastifyInstance } from 'fastify';
import { type CardSigner, JWKS_PATH } from '../../jws/card-signing.js';
import type { OidcVerifier } from '../oidc.js';

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

/**
 * What the web console needs to sign in with the provider (authorization code + PKCE, as the public
 * client HANDOFF_OIDC_CONSOLE_CLIENT_ID): public, 404 when the host has no such client.
 */
export function consoleSignInRoute(app: FastifyInstance, oidc: OidcVerifier): void {
  const { consoleClientId, audience, issuer } = oidc.settings;
  if (consoleClientId !== undefined) allowTokenEndpoint(app, oidc);
  app.get(
    '/console/sign-in.json',
    {
      config: { public: true },
      schema: {
        operationId: 'getConsoleSignIn',
        tags: ['console'],
        summary: 'How the web console signs in with the OpenID provider (404 without HANDOFF_OIDC_CONSOLE_CLIENT_ID)',
      },
    },
    async (_req, reply) => {
      if (consoleClientId === undefined)
        return reply.status(404).send({ error: 'not_found', message: 'no console sign-in client' });
      const metadata = await oidc.metadata();
      return reply.header('Cache-Control', 'no-store').send({
        issuer,
        clientId: consoleClientId,
        audience,
        authorizationEndpoint: metadata.authorization_endpoint,
        tokenEndpoint: metadata.token_endpoint,
      });
    },
  );
}

/**
 * The console page may connect to the provider's token endpoint (the code exchange of its sign-in):
 * its Content-Security-Policy names that origin besides its own when a console client is set.
 */
function allowTokenEndpoint(app: FastifyInstance, oidc: OidcVerifier): void {
  app.addHook('onSend', (req, reply, payload, done) => {
    const csp = reply.getHeader('content-security-policy');
    if (typeof csp !== 'string' || !req.url.startsWith('/console')) {
      done(null, payload);
      return;
    }
    oidc.metadata().then(
      (m) => {
        const origin = m.token_endpoint ? new URL(m.token_endpoint).origin : undefined;
        if (origin)
          void reply.header(
            'content-security-policy',
            csp.replace("connect-src 'self'", `connect-src 'self' ${origin}`),
          );
        done(null, payload);
      },
      () => done(null, payload),
    );
  });
}
