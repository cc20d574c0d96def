// Outbound credentials for a2a.invoke (the registry's `auth`) and http.request (the node's `auth`):
// a static bearer token, or an OAuth2 access token obtained by client credentials (RFC 6749 §4.4).
// Tokens are fetched when first needed, kept in memory until shortly before `expires_in`, fetched
// again once when the server answers 401, never logged and never written anywhere; each one is
// taught to the host's redactor as it arrives, so a server that echoes it is scrubbed like a secret.
//
//   const tokens = new TokenSource({ redactor, timeoutMs: 10_000 });
//   const header = await tokens.authorization(auth, dispatcher);        // 'Bearer …'
//   tokens.forget(auth);                                               // after a 401: the next call fetches anew
import { request, type Dispatcher } from 'undici';
import type { Redactor } from '../secrets/redact.js';

export type OutboundAuth =
  | { type: 'bearer'; token: string }
  | {
      type: 'oauth2-client-credentials';
      tokenUrl: string;
      clientId: string;
      clientSecret: string;
      scopes?: string[];
      /** Sent as RFC 8707 `resource`. */
      resource?: string;
      /** Sent as `audience` (the parameter some providers use instead of `resource`). */
      audience?: string;
    };

export const AUTH_TYPES = ['bearer', 'oauth2-client-credentials'] as const;

/** A token request that failed; `retryable` when trying later can help (network, 429, 5xx). */
export class TokenError extends Error {
  override readonly name = 'TokenError';
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

/** A token is used until this long before it expires (or a tenth of its life, if shorter). */
const RENEW_BEFORE_MS = 30_000;
/** A token answer larger than this is refused. */
const MAX_TOKEN_ANSWER = 64 * 1024;

interface Held {
  token: Promise<string>;
  until: number;
}

export class TokenSource {
  readonly #held = new Map<string, Held>();

  constructor(private readonly opts: { redactor?: Redactor; timeoutMs: number; now?: () => number }) {}

  /** The `Authorization` header value for `auth`, fetching a token when none is held. */
  async authorization(auth: OutboundAuth, dispatcher: Dispatcher): Promise<string> {
    if (auth.type === 'bearer') return `Bearer ${auth.token}`;
    return `Bearer ${await this.token(auth, dispatcher)}`;
  }

  /** Drop the held token (the server refused it): the next authorization fetches a new one. */
  forget(auth: OutboundAuth): void {
    if (auth.type !== 'bearer') this.#held.delete(keyOf(auth));
  }

  private token(auth: Extract<OutboundAuth, { type: 'oauth2-client-credentials' }>, dispatcher: Dispatcher) {
    const now = (this.opts.now ?? Date.now)();
    const key = keyOf(auth);
    const held = this.#held.get(key);
    if (held && held.until > now) return held.token;
    const entry: Held = { token: Promise.resolve(''), until: Number.POSITIVE_INFINITY };
    entry.token = this.fetchToken(auth, dispatcher).then(
      ({ token, lifetimeMs }) => {
        entry.until = now + lifetimeMs - Math.min(RENEW_BEFORE_MS, lifetimeMs / 10);
        return token;
      },
      (err: unknown) => {
        if (this.#held.get(key) === entry) this.#held.delete(key);
        throw err;
      },
    );
    this.#held.set(key, entry);
    return entry.token;
  }

  private async fetchToken(
    auth: Extract<OutboundAuth, { type: 'oauth2-client-credentials' }>,
    dispatcher: Dispatcher,
  ): Promise<{ token: string; lifetimeMs: number }> {
    const form = new URLSearchParams({ grant_type: 'client_credentials' });
    if (auth.scopes && auth.scopes.length > 0) form.set('scope', auth.scopes.join(' '));
    if (auth.resource !== undefined) form.set('resource', auth.resource);
    if (auth.audience !== undefined) form.set('audience', auth.audience);
    // client_secret_basic (RFC 6749 §2.3.1): each part form-encoded, then base64.
    const basic = Buffer.from(`${encodeURIComponent(auth.clientId)}:${encodeURIComponent(auth.clientSecret)}`);
    const where = `token endpoint ${shown(auth.tokenUrl)}`;
    let res: Dispatcher.ResponseData;
    try {
      res = await request(auth.tokenUrl, {
        method: 'POST',
        dispatcher,
        headers: {
          authorization: `Basic ${basic.toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
        },
        body: form.toString(),
        signal: AbortSignal.timeout(this.opts.timeoutMs),
      });
    } catch (err) {
      throw new TokenError(`${where}: ${(err as Error).message}`, true);
    }
    const text = await boundedText(res.body);
    const answer = parse(text);
    if (res.statusCode !== 200) {
      const code = typeof answer?.error === 'string' ? ` (${answer.error.slice(0, 60)})` : '';
      const retryable = res.statusCode === 429 || res.statusCode >= 500;
      throw new TokenError(`${where} answered HTTP ${res.statusCode}${code}`, retryable);
    }
    const token = answer?.access_token;
    if (typeof token !== 'string' || !/^[\x21-\x7e]+$/.test(token)) {
      throw new TokenError(`${where} answered without a usable access_token`, false);
    }
    this.opts.redactor?.learn(token);
    const expiresIn = typeof answer?.expires_in === 'number' && answer.expires_in > 0 ? answer.expires_in : 300;
    return { token, lifetimeMs: expiresIn * 1000 };
  }
}

/** One held token per client and request: the same client asking for other scopes gets another. */
const keyOf = (auth: Extract<OutboundAuth, { type: 'oauth2-client-credentials' }>): string =>
  JSON.stringify([auth.tokenUrl, auth.clientId, auth.scopes ?? [], auth.resource ?? '', auth.audience ?? '']);

const shown = (url: string): string => {
  try {
    const u = new URL(url);
    return u.origin + u.pathname;
  } catch {
    return 'an invalid URL';
  }
};

async function boundedText(body: Dispatcher.ResponseData['body']): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += (chunk as Buffer).length;
    if (size > MAX_TOKEN_ANSWER) {
      body.destroy();
      throw new TokenError('the token endpoint answered more than 64 KiB', false);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function parse(text: string): { access_token?: unknown; expires_in?: unknown; error?: unknown } | undefined {
  try {
    const value = JSON.parse(text) as unknown;
    return value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** What is wrong with an `auth` object (registry file or http.request config), or undefined. */
export function authProblem(auth: unknown): string | undefined {
  if (auth === null || typeof auth !== 'object') return 'auth must be an object';
  const a = auth as Record<string, unknown>;
  if (a.type === 'bearer') {
    if (typeof a.token !== 'string' || a.token === '') return 'auth.token must be a non-empty string';
    return extraKeys(a, ['type', 'token']);
  }
  if (a.type === 'oauth2-client-credentials') {
    for (const field of ['tokenUrl', 'clientId', 'clientSecret'] as const) {
      if (typeof a[field] !== 'string' || a[field] === '') return `auth.${field} must be a non-empty string`;
    }
    const url = URL.canParse(a.tokenUrl as string) ? new URL(a.tokenUrl as string) : undefined;
    if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:')) return 'auth.tokenUrl must be an http(s) URL';
    if (
      a.scopes !== undefined &&
      (!Array.isArray(a.scopes) || a.scopes.some((s) => typeof s !== 'string' || /\s/.test(s) || s === ''))
    ) {
      return 'auth.scopes must be an array of scope names (no spaces)';
    }
    for (const field of ['resource', 'audience'] as const) {
      if (a[field] !== undefined && (typeof a[field] !== 'string' || a[field] === ''))
        return `auth.${field} must be a non-empty string`;
    }
    return extraKeys(a, ['type', 'tokenUrl', 'clientId', 'clientSecret', 'scopes', 'resource', 'audience']);
  }
  return `auth.type must be one of ${AUTH_TYPES.join(', ')}`;
}

function extraKeys(a: Record<string, unknown>, known: string[]): string | undefined {
  const extra = Object.keys(a).find((k) => !known.includes(k));
  return extra === undefined ? undefined : `auth has no field '${extra.slice(0, 40)}' (${known.join(', ')})`;
}
