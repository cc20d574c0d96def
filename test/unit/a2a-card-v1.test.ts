// The agent card for 1.0 and 0.3 clients, and what the official clients pick from it: the 1.3.0
// client (with and without its 0.3 compat layer) JSON-RPC 1.0 or HTTP+JSON 1.0, the 0.3.14 client
// JSON-RPC 0.3 — from either card, since a cache that ignores `Vary` may hand either to anyone.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as Sdk from '@a2a-js/sdk';
import {
  type Client,
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import type * as Sdk03 from 'a2a-js-sdk-v03';
import * as Client03 from 'a2a-js-sdk-v03/client';
import { type AgentCardOptions, buildAgentCard } from '../../src/a2a/v0_3/card.js';
import { agentCardFor } from '../../src/a2a/card-v1.js';
import { cardVersion } from '../../src/a2a/versions.js';

const opts: AgentCardOptions = {
  baseUrl: 'https://handoff.example.com/',
  name: 'Handoff',
  description: 'Durable workflow runs as A2A tasks',
  version: '0.1.0',
  skills: [{ id: 'campaign-brief', name: 'Campaign brief', description: 'Drafts a brief', examples: ['a brief'] }],
  streaming: true,
  pushNotifications: true,
  requireAuth: false,
};
const authed: AgentCardOptions = { ...opts, requireAuth: true };

const JSON_RPC = 'https://handoff.example.com/v1/a2a';
const REST = 'https://handoff.example.com/v1/a2a/rest';

/** As a client gets it: serialized and parsed. */
const fetched = (card: object): object => JSON.parse(JSON.stringify(card));

describe('the 1.0 card', () => {
  test('supportedInterfaces in order of preference; no 0.3 fields', () => {
    const card = agentCardFor('1.0', opts);
    assert.deepEqual(card.supportedInterfaces, [
      { url: JSON_RPC, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url: REST, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
      { url: JSON_RPC, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
    ]);
    assert.deepEqual(card.capabilities, { streaming: true, pushNotifications: true, extendedAgentCard: false });
    for (const field of ['url', 'preferredTransport', 'additionalInterfaces', 'protocolVersion', 'security']) {
      assert.ok(!(field in card), field);
    }
    assert.deepEqual(card.skills, buildAgentCard(opts).skills);
    assert.equal(card.securitySchemes, undefined);
  });

  test('security in the 1.0 shape when API keys are on, as the SDK parses it', () => {
    const card = agentCardFor('1.0', authed);
    assert.deepEqual(card.securitySchemes, { bearer: { httpAuthSecurityScheme: { scheme: 'bearer' } } });
    assert.deepEqual(card.securityRequirements, [{ schemes: { bearer: { list: [] } } }]);
    const parsed = Sdk.AgentCard.fromJSON(fetched(card));
    assert.equal(parsed.securitySchemes.bearer?.scheme?.$case, 'httpAuthSecurityScheme');
    assert.equal(
      parsed.securitySchemes.bearer?.scheme?.$case === 'httpAuthSecurityScheme' &&
        parsed.securitySchemes.bearer.scheme.value.scheme,
      'bearer',
    );
    assert.deepEqual(parsed.securityRequirements, [{ schemes: { bearer: { list: [] } } }]);
    // Everything else reads back as sent (the SDK writes the empty scope list as `{}`, canonically).
    const { securityRequirements: _ours, ...rest } = fetched(card) as Record<string, unknown>;
    const { securityRequirements: _theirs, ...theirs } = Sdk.AgentCard.toJSON(parsed) as Record<string, unknown>;
    assert.deepEqual(theirs, rest);
  });
});

describe('the 0.3 (hybrid) card', () => {
  test('the 0.3 card unchanged, plus supportedInterfaces', () => {
    for (const o of [opts, authed]) {
      const { supportedInterfaces, ...v03 } = agentCardFor('0.3', o);
      assert.deepEqual(v03, buildAgentCard(o));
      assert.deepEqual(supportedInterfaces, agentCardFor('1.0', o).supportedInterfaces);
    }
    const card = agentCardFor('0.3', authed);
    assert.equal(card.url, JSON_RPC);
    assert.equal(card.protocolVersion, '0.3.0');
    assert.deepEqual(card.securitySchemes, { bearer: { type: 'http', scheme: 'bearer' } });
    assert.deepEqual(card.security, [{ bearer: [] }]);
    // Still an official 0.3 card (compile-time).
    const asSdk03: Sdk03.AgentCard = card;
    assert.ok(asSdk03);
  });
});

type Picked = { binding: string; version: string; url: string };

/** The interface a 1.3 client chose: its transport's binding and version, and where it points. */
function picked(client: Client): Picked {
  const transport = (
    client as unknown as { transport: { protocolName: string; protocolVersion: string; endpoint: string } }
  ).transport;
  return { binding: transport.protocolName, version: client.protocolVersion, url: transport.endpoint };
}

function factory(compat: boolean, preferred?: string[]): ClientFactory {
  const legacyCompat = { enabled: compat };
  return new ClientFactory({
    transports: [new JsonRpcTransportFactory({ legacyCompat }), new RestTransportFactory({ legacyCompat })],
    cardResolver: new DefaultAgentCardResolver({ legacyCompat }),
    ...(preferred ? { preferredTransports: preferred } : {}),
  });
}

describe('the official 1.3.0 client picks 1.0', () => {
  for (const compat of [false, true]) {
    for (const [label, o] of [
      ['anonymous', opts],
      ['with API keys', authed],
    ] as const) {
      const name = `${compat ? 'with' : 'without'} legacy compat, ${label}`;
      test(`${name}: JSON-RPC 1.0 first, HTTP+JSON 1.0 when preferred`, async () => {
        for (const version of ['1.0', '0.3'] as const) {
          const card = fetched(agentCardFor(version, o)) as Sdk.AgentCard;
          assert.deepEqual(picked(await factory(compat).createFromAgentCard(card)), {
            binding: 'JSONRPC',
            version: '1.0',
            url: JSON_RPC,
          });
          assert.deepEqual(picked(await factory(compat, ['HTTP+JSON']).createFromAgentCard(card)), {
            binding: 'HTTP+JSON',
            version: '1.0',
            url: REST,
          });
        }
      });
    }
  }

  test('its card resolver asks with A2A-Version: 1.0 and so gets the 1.0 card', async () => {
    const asked: Array<string | null> = [];
    const resolver = new DefaultAgentCardResolver({
      fetchImpl: async (_url, init) => {
        const version = new Headers(init?.headers).get('A2A-Version');
        asked.push(version);
        return new Response(JSON.stringify(agentCardFor(cardVersion(version ?? undefined), authed)));
      },
    });
    const card = await resolver.resolve('https://handoff.example.com');
    assert.deepEqual(asked, ['1.0']);
    assert.equal(card.supportedInterfaces[0]?.protocolVersion, '1.0');
    assert.equal(card.securitySchemes.bearer?.scheme?.$case, 'httpAuthSecurityScheme');
    const client = await new ClientFactory({ ...factoryOptions(), cardResolver: resolver }).createFromUrl(
      'https://handoff.example.com',
    );
    assert.deepEqual(picked(client), { binding: 'JSONRPC', version: '1.0', url: JSON_RPC });
  });
});

const factoryOptions = () => ({ transports: [new JsonRpcTransportFactory(), new RestTransportFactory()] });

describe('the official 0.3.14 client keeps JSON-RPC 0.3', () => {
  for (const [label, o] of [
    ['anonymous', opts],
    ['with API keys', authed],
  ] as const) {
    test(`${label}: the hybrid card's url, whatever it prefers`, async () => {
      const card = fetched(agentCardFor('0.3', o)) as Sdk03.AgentCard;
      for (const preferred of [undefined, ['HTTP+JSON'], ['JSONRPC']]) {
        const f = new Client03.ClientFactory({
          ...Client03.ClientFactoryOptions.default,
          ...(preferred ? { preferredTransports: preferred } : {}),
        });
        const client = await f.createFromAgentCard(card);
        const transport = (client as unknown as { transport: unknown }).transport;
        assert.ok(transport instanceof Client03.JsonRpcTransport, String(preferred));
        assert.equal((transport as unknown as { endpoint: string }).endpoint, JSON_RPC);
      }
    });
  }
});
