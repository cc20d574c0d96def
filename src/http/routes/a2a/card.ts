// The agent card at its two locations. Its shape follows the A2A-Version asked for (absent: the 0.3
// card, which also lists supportedInterfaces): caches must key on the header. Its ETag is of the
// bytes sent, so each version (and each base URL) has its own (A2A 1.0 §8.6.1).
import { Type } from '@sinclair/typebox';
import { servedCard } from '../../../jws/card-signing.js';
import { cardSchemes } from '../../oidc.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AGENT_CARD_PATH } from '../../../a2a/v0_3/card.js';
import { cardVersion } from '../../../a2a/versions.js';
import { AgentCard, AgentCardV1 } from '../../a2a-schemas.js';
import { matchesEtag, strongEtag } from '../../etag.js';
import { empty, ref, typed, withHeaders } from '../../schemas.js';
import { type A2ARouteDeps, baseUrl, versionAsked } from './index.js';

/** The card changes only with the host's configuration and workflows: caches may keep it a while. */
const CARD_CACHE_CONTROL = 'public, max-age=300';
const CARD_HEADERS = {
  'Cache-Control': { description: `\`${CARD_CACHE_CONTROL}\`` },
  ETag: { description: 'A strong tag of the exact bytes of this version’s card; send it back as `If-None-Match`.' },
  Vary: { description: '`A2A-Version`: the card’s shape follows the version asked for.' },
};

export function cardRoutes(
  app: FastifyInstance,
  deps: Pick<A2ARouteDeps, 'config' | 'binding' | 'oidc' | 'cardSigner'>,
): void {
  const serve = async (req: FastifyRequest, reply: FastifyReply) => {
    const asked = versionAsked(req);
    const version = cardVersion(asked.header, asked.query);
    const base = baseUrl(deps.config, req);
    // The provider's schemes (HANDOFF_OIDC_ISSUER), and the signature (HANDOFF_CARD_SIGNING_KEY_FILE).
    const card = deps.binding.handler.card(version, base, await cardSchemes(deps.oidc));
    const body = JSON.stringify(await servedCard(deps.cardSigner, card as object, base));
    const etag = strongEtag(body);
    void reply.headers({ Vary: 'A2A-Version', 'Cache-Control': CARD_CACHE_CONTROL, ETag: etag });
    if (matchesEtag(req.headers['if-none-match'], etag)) return reply.status(304).send();
    return reply.type('application/json; charset=utf-8').send(body);
  };
  const cardSchema = (operationId: string, summary: string) => ({
    operationId,
    tags: ['a2a'],
    summary,
    response: {
      200: withHeaders(
        Type.Union([ref(AgentCard), ref(AgentCardV1)], {
          description:
            'The agent card: the 0.3 card (which also lists supportedInterfaces) unless A2A-Version asks for 1.0.',
        }),
        CARD_HEADERS,
      ),
      304: withHeaders(empty('Not modified: `If-None-Match` names the card’s current ETag.'), CARD_HEADERS),
    },
  });
  const api = typed(app);
  api.get(
    AGENT_CARD_PATH,
    { config: { public: true }, schema: cardSchema('getAgentCard', 'A2A agent card (well-known location)') },
    serve,
  );
  api.get(
    '/v1/a2a/agent.json',
    { config: { public: true }, schema: cardSchema('getAgentCardV1', 'A2A agent card (OpenWOP location)') },
    serve,
  );
}
