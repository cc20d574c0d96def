// `handoff card verify <url> [--jwks <file|url>]`: fetch an agent's card (the 0.3 and the 1.0 form)
// and check its signatures (A2A AgentCardSignature: JWS over the JCS of the card without them).
// With --jwks the keys are the ones given (a file or URL the caller trusts: pinning); without, the
// keys the agent publishes at <origin>/.well-known/jwks.json, which proves the card is intact and
// signed by that host's key, not who the host is. Exit 0 when every card verifies, 1 otherwise.
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { JWKS_PATH } from '../jws/card-signing.js';
import { type CardKeys, checkCardKeys, verifyCard } from '../peers/card-trust.js';
import { parseAgentUrl, UsageError, WELL_KNOWN_CARD } from './client/card.js';
import { type ClientOptions, connection, printJson, run } from './client/command.js';
import { type Connection, getJson, send, readText } from './client/http.js';

interface VerifyOptions extends Pick<ClientOptions, 'json' | 'timeout'> {
  jwks?: string;
}

export function cardCommand(): Command {
  const verify = new Command('verify')
    .description("verify an agent card's signatures (exit 0 when the 0.3 and 1.0 cards verify, 1 otherwise)")
    .argument('<url>', 'agent base URL, or the card URL itself')
    .option('--jwks <file|url>', 'the keys to trust (a JWK Set); default: the agent’s own /.well-known/jwks.json')
    .option('--json', 'print the result as JSON')
    .option('--timeout <seconds>', 'per-request timeout in seconds')
    .action(run(async (url: string, opts: VerifyOptions) => verifyCommand(url, opts)));
  return new Command('card').description('agent cards').addCommand(verify);
}

async function verifyCommand(url: string, opts: VerifyOptions): Promise<number> {
  const conn = connection(opts);
  const parsed = parseAgentUrl(url);
  const cardUrl = parsed.pathname.endsWith('.json')
    ? parsed.toString()
    : `${url.replace(/\/+$/, '')}${WELL_KNOWN_CARD}`;
  const keysFrom = opts.jwks ?? `${parsed.origin}${JWKS_PATH}`;
  const keys = await loadKeys(keysFrom, conn);
  const results = [];
  for (const version of ['0.3', '1.0'] as const) {
    const card = await fetchCard(cardUrl, version, conn);
    const verdict = await verifyCard(card, keys);
    results.push({ version, ...verdict });
  }
  if (opts.json) printJson({ cardUrl, keys: keysFrom, pinned: opts.jwks !== undefined, results });
  else {
    for (const r of results) {
      const line = r.ok ? `verified (key ${r.kid ?? 'without kid'})` : `NOT verified: ${r.why}`;
      process.stdout.write(`card ${r.version} at ${cardUrl}: ${line}\n`);
    }
    if (opts.jwks === undefined) {
      process.stdout.write(
        `keys from ${keysFrom}, the agent's own: the card is intact, but pin its keys (--jwks) to know it is the agent you mean\n`,
      );
    }
  }
  return results.every((r) => r.ok) ? 0 : 1;
}

async function loadKeys(from: string, conn: Connection): Promise<CardKeys> {
  let jwks: unknown;
  if (/^https?:\/\//.test(from)) jwks = await getJson(from, conn);
  else {
    try {
      jwks = JSON.parse(readFileSync(from, 'utf8'));
    } catch (err) {
      throw new UsageError(`--jwks ${from}: ${(err as NodeJS.ErrnoException).code ?? 'not valid JSON'}`);
    }
  }
  const keys = checkCardKeys(jwks);
  if (typeof keys === 'string') throw new UsageError(`${from}: ${keys}`);
  return keys;
}

/** The card as served to a client of `version` (A2A-Version; none for 0.3), parsed, unchanged. */
async function fetchCard(cardUrl: string, version: '0.3' | '1.0', conn: Connection): Promise<unknown> {
  const res = await send(cardUrl, {
    method: 'GET',
    headers: { accept: 'application/json', ...(version === '1.0' ? { 'a2a-version': '1.0' } : {}) },
    headersTimeoutMs: conn.timeoutMs,
    bodyTimeoutMs: conn.timeoutMs,
  });
  const text = await readText(cardUrl, res);
  if (res.statusCode !== 200) throw new UsageError(`HTTP ${res.statusCode} from ${cardUrl}`);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new UsageError(`${cardUrl} is not JSON`);
  }
}
