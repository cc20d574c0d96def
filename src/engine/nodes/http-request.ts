// http.request: one HTTP call through the egress guard (calls/http.ts), retried on a durable
// timer (outbound-call.ts). Every string of the config is a template; `{{ secrets.NAME }}` may
// appear in `headers`, `query`, `auth.token` and `auth.clientSecret` only. Output: {status, headers
// (allow-listed), body}, so edges can branch on it (`nodes.publish.status = 201`).
//
// `auth` is the registry file's object (src/calls/client-credentials.ts): a bearer token, or OAuth2
// client credentials whose token is fetched through the same egress guard as the call, held in
// memory until shortly before it expires, and fetched once more when the server answers 401.
import { authProblem, type OutboundAuth, TokenError } from '../../calls/client-credentials.js';
import { type HttpCallOutcome, type HttpCallRequest, httpCall } from '../../calls/http.js';
import { checkCallUrl } from '../../egress/address.js';
import type { CallServices } from './services.js';
import { renderTemplate } from '../workflow/evaluate.js';
import { renderWithSecrets } from '../workflow/secret-refs.js';
import { executeCall, RETRY_SCHEMA, type RetryConfig } from './outbound-call.js';
import { type NodeType, SCHEMA_DIALECT } from './types.js';

interface HttpRequestConfig {
  method: string;
  url: string;
  headers?: Record<string, string>;
  query?: Record<string, unknown>;
  json?: unknown;
  body?: string;
  timeoutMs?: number | string;
  responseLimitBytes?: number | string;
  followRedirects?: boolean | number | string;
  expect?: number[];
  responseHeaders?: string[];
  retry?: RetryConfig;
  auth?: Record<string, unknown>;
}

const templated = (schema: object) => ({ anyOf: [schema, { type: 'string', pattern: '\\{\\{' }] });
const SCALAR = { type: ['string', 'number', 'boolean'] };

export const httpRequest: NodeType<HttpRequestConfig> = {
  typeId: 'http.request',
  inline: false,
  configSchema: {
    $schema: SCHEMA_DIALECT,
    type: 'object',
    required: ['method', 'url'],
    properties: {
      // GET, POST, … or a template; the rendered method is checked by the call.
      method: { type: 'string', minLength: 1 },
      url: { type: 'string', minLength: 1 },
      headers: { type: 'object', additionalProperties: { type: 'string' } },
      query: { type: 'object', additionalProperties: { anyOf: [SCALAR, { type: 'array', items: SCALAR }] } },
      json: true,
      body: { type: 'string' },
      timeoutMs: templated({ type: 'integer', minimum: 1, maximum: 600_000 }),
      responseLimitBytes: templated({ type: 'integer', minimum: 1, maximum: 64 * 1024 * 1024 }),
      followRedirects: templated({ type: ['boolean', 'integer'], minimum: 0, maximum: 20 }),
      expect: { type: 'array', minItems: 1, items: { type: 'integer', minimum: 100, maximum: 599 } },
      responseHeaders: { type: 'array', items: { type: 'string', minLength: 1 } },
      retry: RETRY_SCHEMA,
      auth: {
        type: 'object',
        required: ['type'],
        properties: {
          type: { enum: ['bearer', 'oauth2-client-credentials'] },
          token: { type: 'string', minLength: 1 },
          tokenUrl: { type: 'string', minLength: 1 },
          clientId: { type: 'string', minLength: 1 },
          clientSecret: { type: 'string', minLength: 1 },
          scopes: { type: 'array', items: { type: 'string', minLength: 1 } },
          resource: { type: 'string', minLength: 1 },
          audience: { type: 'string', minLength: 1 },
        },
        additionalProperties: false,
      },
    },
    additionalProperties: false,
  },
  secretPaths: [
    /^config\.headers\.[^.[]+$/,
    /^config\.query\.[^.[]+(?:\[\d+\])?$/,
    /^config\.auth\.(token|clientSecret)$/,
  ],
  checkConfig(config) {
    if (config.json !== undefined && config.body !== undefined) return ['config: give json or body, not both'];
    return [];
  },
  execute(ctx) {
    return executeCall(ctx, async (calls) => {
      const { headers, query, retry: _retry, auth, ...rest } = ctx.config;
      const request = {
        ...((await renderTemplate(rest, ctx.scope)) as object),
        ...(headers ? { headers: await renderWithSecrets(headers, ctx.scope, calls.secrets) } : {}),
        ...(query ? { query: await renderWithSecrets(query, ctx.scope, calls.secrets) } : {}),
      } as HttpCallRequest;
      const options = {
        dispatcher: calls.dispatcher,
        policy: calls.policy,
        idempotencyKey: ctx.idempotencyKey,
        redact: calls.secrets.redact,
      };
      const out = auth
        ? await withAuth(calls, (await renderWithSecrets(auth, ctx.scope, calls.secrets)) as object, (authorization) =>
            httpCall({ ...request, headers: { ...request.headers, authorization } }, options),
          )
        : await httpCall(request, options);
      return out.ok ? { ok: true, output: { status: out.status, headers: out.headers, body: out.body } } : out;
    });
  },
};

/** The call with `auth`'s Authorization header; a client-credentials token refused with 401 is fetched anew once. */
async function withAuth(
  calls: CallServices,
  raw: object,
  call: (authorization: string) => Promise<HttpCallOutcome>,
): Promise<HttpCallOutcome> {
  const problem = authProblem(raw);
  if (problem !== undefined) return refused('invalid_request', problem);
  const auth = raw as OutboundAuth;
  if (auth.type === 'oauth2-client-credentials') {
    const verdict = checkCallUrl(auth.tokenUrl, calls.policy);
    if (!verdict.ok) return refused('egress_denied', `auth.tokenUrl: ${verdict.reason}`);
  }
  const tokens = calls.tokens;
  if (tokens === undefined) return refused('invalid_request', 'this engine has no token source for auth');
  const once = async (): Promise<HttpCallOutcome> => {
    try {
      return await call(await tokens.authorization(auth, calls.dispatcher));
    } catch (err) {
      if (!(err instanceof TokenError)) throw err;
      const message = calls.secrets.redact(`no access token: ${err.message}`);
      return { ok: false, code: 'network', retryable: err.retryable, message };
    }
  };
  const first = await once();
  if (first.ok || first.status !== 401 || auth.type !== 'oauth2-client-credentials') return first;
  tokens.forget(auth);
  return once();
}

const refused = (code: 'invalid_request' | 'egress_denied', message: string): HttpCallOutcome => ({
  ok: false,
  code,
  retryable: false,
  message,
});
