// The host's registry of other A2A agents it may call by name: operator configuration, so its
// URLs may be plain http and private or loopback addresses (a local two-host setup must work).
//
//   HANDOFF_AGENTS=reviewer=https://b.example.com,translator=https://c.example.com/a2a/card.json
//   HANDOFF_AGENTS=reviewer=https://b.example.com;origin=https://api.b.example.com   (see below)
//   HANDOFF_AGENT_TOKEN_REVIEWER=…          (optional bearer token for `reviewer`)
//
// A URL whose path ends in `.json` is the agent card itself; any other is a base URL whose
// `/.well-known/agent-card.json` is read (appended to its path, as the `handoff` client does).
// An entry trusts its URL's origin and the origins it lists with `;origin=`, no other: the card
// is the peer's to write, so an endpoint it names elsewhere is called only if it passes the egress
// guard in full, and never with the token (src/peers/client.ts).
// Parsing returns a verdict, not an exception: src/config.ts turns a refusal into a ConfigError.
//
// The file form, HANDOFF_AGENTS_FILE (beside HANDOFF_AGENTS, names may not repeat):
//   { "reviewer": { "url": "https://b.example.com",
//                   "auth": { "type": "oauth2-client-credentials", "tokenUrl": "https://idp/token",
//                             "clientId": "a-host", "clientSecret": "{{ secrets.B_CLIENT_SECRET }}",
//                             "scopes": ["runs:create"], "resource": "https://b.example.com" },
//                   "cardKeys": { "keys": [ { "kty": "EC", "crv": "P-256", "x": "…", "y": "…" } ] } } }
// Credentials are `{{ secrets.NAME }}` references only, so their values stay in the secret store.
import { readFileSync } from 'node:fs';
import { authProblem, type OutboundAuth } from '../calls/client-credentials.js';
import { type CardKeys, checkCardKeys } from './card-trust.js';

export type ClientCredentialsAuth = Extract<OutboundAuth, { type: 'oauth2-client-credentials' }>;

export interface AgentEntry {
  name: string;
  cardUrl: string;
  /** Sent as `Authorization: Bearer <token>` on every request to this agent's trusted origins; never logged. */
  token?: string;
  /** Origins trusted besides the card URL's (`;origin=` in the entry), e.g. an API host its card names. */
  origins?: string[];
  /** HANDOFF_AGENTS_FILE `auth` of type oauth2-client-credentials: tokens fetched for this agent. */
  clientCredentials?: ClientCredentialsAuth;
  /** HANDOFF_AGENTS_FILE `cardKeys`: the agent's card must carry a signature one of these verifies. */
  cardKeys?: CardKeys;
}

export type RegistryVerdict = { ok: true; agents: Map<string, AgentEntry> } | { ok: false; error: string };

const WELL_KNOWN_CARD = '/.well-known/agent-card.json';

/** Names appear in workflow definitions and, upper-cased, in an environment variable. */
const AGENT_NAME = /^[a-z][a-z0-9_-]{0,62}$/;
const TOKEN_PREFIX = 'HANDOFF_AGENT_TOKEN_';
const ORIGIN_OPTION = 'origin=';
/** A header value: visible ASCII, no spaces (a CR/LF would split the request). */
const TOKEN_CHARS = /^[\x21-\x7e]+$/;

/** `HANDOFF_AGENT_TOKEN_<NAME>`: upper-cased, every character that is not A-Z or 0-9 becomes `_`. */
export const tokenSetting = (name: string): string => TOKEN_PREFIX + name.toUpperCase().replace(/[^A-Z0-9]/g, '_');

/** The agent card's URL for a base URL or a card URL; null when `raw` is not an http(s) URL. */
export function cardUrlFor(raw: string): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  if (url.pathname.endsWith('.json')) return url.toString();
  url.search = '';
  url.hash = '';
  return url.toString().replace(/\/+$/, '') + WELL_KNOWN_CARD;
}

export function parseAgentRegistry(env: NodeJS.ProcessEnv): RegistryVerdict {
  const agents = new Map<string, AgentEntry>();
  const byTokenSetting = new Map<string, string>();
  const entries = (env.HANDOFF_AGENTS ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  for (const entry of entries) {
    const eq = entry.indexOf('=');
    const name = eq < 0 ? entry : entry.slice(0, eq).trim();
    const [raw = '', ...options] = (eq < 0 ? '' : entry.slice(eq + 1)).split(';').map((o) => o.trim());
    if (!AGENT_NAME.test(name)) {
      return refuse(`agent names are a-z, 0-9, '-' and '_' (starting with a letter), got '${name.slice(0, 70)}'`);
    }
    if (agents.has(name)) return refuse(`agent '${name}' is named twice`);
    const setting = tokenSetting(name);
    const other = byTokenSetting.get(setting);
    if (other !== undefined) return refuse(`agents '${other}' and '${name}' would share the token setting ${setting}`);
    const cardUrl = cardUrlFor(raw);
    if (cardUrl === null) {
      return refuse(`agent '${name}' needs an http(s) URL (name=https://host[/path]), got '${raw.slice(0, 100)}'`);
    }
    // Credentials belong in the token setting: a URL is shown in errors, a token never is.
    const url = new URL(cardUrl);
    if (url.username !== '' || url.password !== '') {
      return refuse(`agent '${name}': put credentials in ${setting}, not in the URL`);
    }
    const origins = extraOrigins(name, options);
    if (typeof origins === 'string') return refuse(origins);
    byTokenSetting.set(setting, name);
    const token = env[setting];
    agents.set(name, {
      name,
      cardUrl,
      ...(token !== undefined ? { token } : {}),
      ...(origins.length > 0 ? { origins } : {}),
    });
  }
  return checkTokens(env, agents, byTokenSetting);
}

/** The `;origin=<origin>` options of an entry, as origins; a string says what is wrong. */
function extraOrigins(name: string, options: string[]): string[] | string {
  const origins: string[] = [];
  for (const option of options) {
    const value = option.startsWith(ORIGIN_OPTION) ? option.slice(ORIGIN_OPTION.length) : undefined;
    if (value === undefined)
      return `agent '${name}': unknown option '${option.slice(0, 40)}' (only ;origin=https://host[:port])`;
    if (value.includes('@'))
      return `agent '${name}': ;origin= takes no credentials (the token is ${tokenSetting(name)})`;
    const origin = originOf(value);
    if (origin === null) {
      return `agent '${name}': ;origin= takes an http(s) origin (scheme, host and port only), got '${value.slice(0, 100)}'`;
    }
    origins.push(origin);
  }
  return origins;
}

/** `https://host[:port]` as URL spells its origin, or null when `raw` is anything more or less. */
function originOf(raw: string): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return null;
  }
  const bare =
    url.pathname === '/' && url.search === '' && url.hash === '' && url.username === '' && url.password === '';
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || !bare || !/^[a-z]+:\/\/[^/]+\/?$/i.test(raw)) {
    return null;
  }
  return url.origin;
}

/** Every origin the entry trusts: its card URL's, then those it lists. */
export const trustedOrigins = (entry: AgentEntry): Set<string> =>
  new Set([new URL(entry.cardUrl).origin, ...(entry.origins ?? [])]);

/** Every token setting must name a registered agent and hold a usable header value (never echoed). */
function checkTokens(
  env: NodeJS.ProcessEnv,
  agents: Map<string, AgentEntry>,
  byTokenSetting: Map<string, string>,
): RegistryVerdict {
  for (const [setting, value] of Object.entries(env)) {
    if (!setting.startsWith(TOKEN_PREFIX) || value === undefined) continue;
    if (!byTokenSetting.has(setting)) {
      return { ok: false, error: `${setting} is set but HANDOFF_AGENTS names no agent it belongs to` };
    }
    if (!TOKEN_CHARS.test(value)) {
      return { ok: false, error: `${setting} must be a non-empty token of visible ASCII characters without spaces` };
    }
  }
  return { ok: true, agents };
}

const refuse = (why: string): RegistryVerdict => ({ ok: false, error: `HANDOFF_AGENTS: ${why}` });

/** Every credential the registry holds (its agents' tokens): the host redacts them like secrets. */
export const registryCredentials = (agents: ReadonlyMap<string, AgentEntry>): string[] =>
  [...agents.values()].flatMap((a) => (a.token !== undefined ? [a.token] : []));

/** `{{ secrets.NAME }}`, exactly. */
const SECRET_REF = /^\{\{\s*secrets\.([A-Z0-9_]+)\s*\}\}$/;

/**
 * The agents of HANDOFF_AGENTS_FILE, their credentials filled in from `secrets`; `taken` are the
 * names HANDOFF_AGENTS already gave. A refusal names the agent and field, never a value.
 */
export function parseAgentsFile(
  file: string,
  secrets: { has(name: string): boolean; get(name: string): string },
  taken: ReadonlySet<string>,
): RegistryVerdict {
  const fail = (why: string): RegistryVerdict => ({ ok: false, error: `HANDOFF_AGENTS_FILE (${file}): ${why}` });
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    return fail(`cannot read it: ${(err as NodeJS.ErrnoException).code ?? 'not valid JSON'}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    return fail('it must hold a JSON object { "<name>": { "url": …, "auth"?: …, "cardKeys"?: … } }');
  }
  const agents = new Map<string, AgentEntry>();
  for (const [name, raw] of Object.entries(parsed)) {
    const entry = fileEntry(name, raw, secrets, taken);
    if (typeof entry === 'string') return fail(entry);
    agents.set(name, entry);
  }
  return { ok: true, agents };
}

function fileEntry(
  name: string,
  raw: unknown,
  secrets: { has(name: string): boolean; get(name: string): string },
  taken: ReadonlySet<string>,
): AgentEntry | string {
  if (!AGENT_NAME.test(name))
    return `agent names are a-z, 0-9, '-' and '_' (starting with a letter), got '${name.slice(0, 70)}'`;
  if (taken.has(name)) return `agent '${name}' is also named in HANDOFF_AGENTS`;
  const e = raw as { url?: unknown; auth?: unknown; cardKeys?: unknown } | null;
  if (e === null || typeof e !== 'object') return `agent '${name}' must be an object with a url`;
  const extra = Object.keys(e).find((k) => !['url', 'auth', 'cardKeys'].includes(k));
  if (extra !== undefined) return `agent '${name}' has no field '${extra.slice(0, 40)}' (url, auth, cardKeys)`;
  const cardUrl = typeof e.url === 'string' ? cardUrlFor(e.url) : null;
  if (cardUrl === null || new URL(cardUrl).username !== '' || new URL(cardUrl).password !== '') {
    return `agent '${name}' needs an http(s) url without credentials`;
  }
  const entry: AgentEntry = { name, cardUrl };
  if (e.cardKeys !== undefined) {
    const keys = checkCardKeys(e.cardKeys);
    if (typeof keys === 'string') return `agent '${name}': ${keys}`;
    entry.cardKeys = keys;
  }
  if (e.auth === undefined) return entry;
  const problem = authProblem(e.auth);
  if (problem !== undefined) return `agent '${name}': ${problem}`;
  const auth = { ...(e.auth as OutboundAuth) };
  const field = auth.type === 'bearer' ? 'token' : 'clientSecret';
  const ref = (auth.type === 'bearer' ? auth.token : auth.clientSecret).match(SECRET_REF)?.[1];
  if (ref === undefined) return `agent '${name}': auth.${field} must be a secret reference {{ secrets.NAME }}`;
  if (!secrets.has(ref)) {
    return `agent '${name}': auth.${field} names secret ${ref}, which is not defined (HANDOFF_SECRET_${ref} or HANDOFF_SECRETS_FILE)`;
  }
  if (auth.type === 'bearer') {
    if (!TOKEN_CHARS.test(secrets.get(ref)))
      return `agent '${name}': secret ${ref} is not a usable token (visible ASCII, no spaces)`;
    entry.token = secrets.get(ref);
  } else {
    entry.clientCredentials = { ...auth, clientSecret: secrets.get(ref) };
  }
  return entry;
}
