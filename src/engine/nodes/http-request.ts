// http.request: one HTTP call through the egress guard (calls/http.ts), retried on a durable
// timer (outbound-call.ts). Every string of the config is a template; `{{ secrets.NAME }}` may
// appear in `headers` and `query` only. Output: {status, headers (allow-listed), body}, so edges
// can branch on it (`nodes.publish.status = 201`).
import { type HttpCallRequest, httpCall } from '../../calls/http.js';
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
    },
    additionalProperties: false,
  },
  secretPaths: [/^config\.headers\.[^.[]+$/, /^config\.query\.[^.[]+(?:\[\d+\])?$/],
  checkConfig(config) {
    if (config.json !== undefined && config.body !== undefined) return ['config: give json or body, not both'];
    return [];
  },
  execute(ctx) {
    return executeCall(ctx, async (calls) => {
      const { headers, query, retry: _retry, ...rest } = ctx.config;
      const request = {
        ...((await renderTemplate(rest, ctx.scope)) as object),
        ...(headers ? { headers: await renderWithSecrets(headers, ctx.scope, calls.secrets) } : {}),
        ...(query ? { query: await renderWithSecrets(query, ctx.scope, calls.secrets) } : {}),
      } as HttpCallRequest;
      const out = await httpCall(request, {
        dispatcher: calls.dispatcher,
        policy: calls.policy,
        idempotencyKey: ctx.idempotencyKey,
        redact: calls.secrets.redact,
      });
      return out.ok ? { ok: true, output: { status: out.status, headers: out.headers, body: out.body } } : out;
    });
  },
};
