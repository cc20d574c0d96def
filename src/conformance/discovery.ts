// Leg 1, discovery shape (always on): GET /.well-known/openwop → 200 with an `a2a` block at the
// document ROOT that validates against capabilities-a2a.schema.json, an absolute agentCardUrl,
// and an agent card there (unauthenticated) with a protocol version, skills, and
// capabilities.streaming/pushNotifications equal to the block's flags (RFC 0152 §C).
import { type A2AVersion, DIALECTS } from './dialect.js';
import { type LegRun, type SuiteContext, ev, isAbsoluteHttpUrl, isObject, requireJsonObject } from './context.js';
import { schemaEvidence } from './schemas.js';

export async function discoveryLeg(ctx: SuiteContext, leg: LegRun): Promise<void> {
  const d = ctx.discovery;
  const res = await ctx.http.request('GET', ctx.url('/.well-known/openwop'));
  const doc = requireJsonObject(leg, res, {
    answered: 'GET /.well-known/openwop answers 200 (unauthenticated)',
    isJson: 'the discovery document is a JSON object',
  });
  d.doc = doc;

  const block = doc.a2a;
  const mirror = isObject(doc.capabilities) ? doc.capabilities.a2a : undefined;
  leg.require(
    isObject(block),
    'the `a2a` block is at the document root',
    ev(res, {
      field: 'a2a',
      expected: 'an object at the root (RFC 0073)',
      actual: block,
      note:
        mirror !== undefined
          ? 'found only under capabilities.a2a, the deprecated mirror; the suite reads the root only'
          : undefined,
      response: undefined,
    }),
  );
  d.block = block;

  if (ctx.schemas) {
    const validate = ctx.schemas.a2aBlock;
    const ok = validate(block) as boolean;
    leg.expect(ok, 'the `a2a` block validates against capabilities-a2a.schema.json', () => ({
      request: res.request,
      status: res.status,
      ...schemaEvidence(validate.errors, block, 'a2a'),
    }));
  } else {
    leg.expect(false, 'the `a2a` block validates against capabilities-a2a.schema.json', {
      note: `schemas unavailable: ${ctx.schemasError}`,
    });
  }

  const cardUrl = block.agentCardUrl;
  leg.require(isAbsoluteHttpUrl(cardUrl), 'a2a.agentCardUrl is an absolute http(s) URL', {
    request: res.request,
    status: res.status,
    field: 'a2a.agentCardUrl',
    expected: 'an absolute http(s) URL, e.g. https://host/.well-known/agent-card.json',
    actual: cardUrl,
  });

  const cardRes = await ctx.http.request('GET', cardUrl);
  const card = requireJsonObject(leg, cardRes, {
    answered: 'the card at agentCardUrl answers 200 (unauthenticated)',
    isJson: 'the agent card is a JSON object',
  });
  d.card = card;

  const version = protocolVersionOf(card);
  leg.expect(typeof version === 'string' && version !== '', 'the card has a protocolVersion', {
    request: cardRes.request,
    status: cardRes.status,
    field: 'protocolVersion',
    expected: 'a non-empty string (top-level, or supportedInterfaces[].protocolVersion for 1.0)',
    actual: card.protocolVersion,
  });
  leg.expect(Array.isArray(card.skills) && card.skills.length > 0, 'the card lists skills', {
    request: cardRes.request,
    status: cardRes.status,
    field: 'skills',
    expected: 'a non-empty array',
    actual: card.skills,
  });
  for (const flag of ['streaming', 'pushNotifications'] as const) {
    const inCard = isObject(card.capabilities) ? card.capabilities[flag] : undefined;
    const inBlock = block[flag];
    // An absent flag means false on both sides.
    leg.expect((inCard === true) === (inBlock === true), `card capabilities.${flag} equals a2a.${flag}`, {
      request: cardRes.request,
      status: cardRes.status,
      field: `capabilities.${flag}`,
      expected: inBlock ?? false,
      actual: inCard,
      note: `the discovery block says a2a.${flag} = ${JSON.stringify(inBlock ?? false)}; RFC 0152 §C: they MUST be equal`,
    });
  }

  const rpc = rpcUrlOf(card, ctx.a2aVersion);
  if (rpc.url) {
    d.rpcUrl = rpc.url;
    d.dialect = DIALECTS[rpc.version];
  } else d.rpcUrlError = rpc.error;
  leg.expect(rpc.url !== undefined, `the card names an absolute JSON-RPC URL for A2A ${rpc.version}`, {
    request: cardRes.request,
    status: cardRes.status,
    field: rpc.version === '1.0' ? 'supportedInterfaces' : 'url',
    expected:
      rpc.version === '1.0'
        ? 'a JSONRPC entry of protocolVersion 1.x with an absolute http(s) url'
        : 'an absolute http(s) URL (card.url, or a JSONRPC interface)',
    actual: rpc.version === '1.0' ? card.supportedInterfaces : card.url,
    note: rpc.error,
  });
  if (rpc.url) leg.note(`A2A ${rpc.version} at ${rpc.url}`);
}

function protocolVersionOf(card: Record<string, unknown>): unknown {
  if (typeof card.protocolVersion === 'string') return card.protocolVersion;
  if (Array.isArray(card.supportedInterfaces)) {
    for (const i of card.supportedInterfaces)
      if (isObject(i) && typeof i.protocolVersion === 'string') return i.protocolVersion;
  }
  return card.protocolVersion;
}

/** A JSONRPC entry of `supportedInterfaces` whose protocolVersion is 1.x. */
function v1Interface(card: Record<string, unknown>): Record<string, unknown> | undefined {
  const list = Array.isArray(card.supportedInterfaces) ? card.supportedInterfaces.filter(isObject) : [];
  return list.find(
    (i) => i.protocolBinding === 'JSONRPC' && typeof i.protocolVersion === 'string' && /^1\./.test(i.protocolVersion),
  );
}

/**
 * Where to send JSON-RPC, and in which version: `want`, else 1.0 when the card lists a 1.0
 * JSONRPC interface, else 0.3 — the card's url, else a JSONRPC interface entry.
 */
export function rpcUrlOf(
  card: Record<string, unknown>,
  want?: A2AVersion,
): { url?: string; error?: string; version: A2AVersion } {
  const v1 = v1Interface(card);
  if (want === '1.0' || (want === undefined && v1)) {
    if (v1 && isAbsoluteHttpUrl(v1.url)) return { url: v1.url, version: '1.0' };
    return {
      version: '1.0',
      error: v1
        ? `its 1.0 JSONRPC interface url ${JSON.stringify(v1.url)} is not an absolute http(s) URL`
        : 'the card lists no JSONRPC interface of protocolVersion 1.x (supportedInterfaces)',
    };
  }
  return { ...rpcUrl03(card), version: '0.3' };
}

function rpcUrl03(card: Record<string, unknown>): { url?: string; error?: string } {
  if (isAbsoluteHttpUrl(card.url)) return { url: card.url };
  const lists = [card.additionalInterfaces, card.supportedInterfaces];
  for (const list of lists) {
    if (!Array.isArray(list)) continue;
    for (const i of list) {
      if (!isObject(i)) continue;
      const binding = i.transport ?? i.protocolBinding;
      if (binding === 'JSONRPC' && isAbsoluteHttpUrl(i.url)) return { url: i.url };
    }
  }
  return {
    error:
      card.url === undefined
        ? 'the card has no url and no JSONRPC interface'
        : `card.url ${JSON.stringify(card.url)} is not an absolute http(s) URL`,
  };
}
