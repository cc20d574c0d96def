// llm.chat: one OpenAI-compatible Chat Completions call (calls/llm.ts, on the same egress guard,
// retry timer and record as http.request: outbound-call.ts). The endpoint is a provider the
// operator named (HANDOFF_LLM_PROVIDERS) or a baseUrl with an optional `{{ secrets.NAME }}` key.
//
// The trust boundary: every value a template puts into a prompt (a caller's input, another
// node's output, a variable) is fenced as <UNTRUSTED source="the expression">…</UNTRUSTED>; only
// the text the workflow author wrote is instruction. Output: {text, json?, usage, model, finishReason}.
import { type LlmChatConfig, llmChat } from '../../calls/llm.js';
import { resolveLlmProvider } from '../../calls/llm-providers.js';
import { wrapUntrusted } from '../../calls/untrusted.js';
import { evaluateExpression, parseTemplate, renderTemplate } from '../workflow/evaluate.js';
import { renderWithSecrets } from '../workflow/secret-refs.js';
import { executeCall, RETRY_SCHEMA, type RetryConfig } from './outbound-call.js';
import type { CallServices } from './services.js';
import type { EvalScope, NodeType } from './types.js';
import { SCHEMA_DIALECT } from './types.js';

interface Message {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

interface LlmChatNodeConfig {
  provider?: string;
  baseUrl?: string;
  apiKey?: string;
  model?: string;
  system?: string;
  messages?: Message[];
  prompt?: string;
  temperature?: number | string;
  maxTokens?: number | string;
  responseFormat?: 'text' | 'json';
  timeoutMs?: number | string;
  retry?: RetryConfig;
}

const templated = (schema: object) => ({ anyOf: [schema, { type: 'string', pattern: '\\{\\{' }] });
const SECRET_ONLY = /^\{\{\s*secrets\.[A-Z0-9_]+\s*\}\}$/;

export const llmChatNode: NodeType<LlmChatNodeConfig> = {
  typeId: 'llm.chat',
  inline: false,
  configSchema: {
    $schema: SCHEMA_DIALECT,
    type: 'object',
    properties: {
      provider: { type: 'string', minLength: 1 },
      baseUrl: { type: 'string', minLength: 1 },
      apiKey: { type: 'string', minLength: 1 },
      model: { type: 'string', minLength: 1 },
      system: { type: 'string' },
      messages: {
        type: 'array',
        minItems: 1,
        items: {
          type: 'object',
          required: ['role', 'content'],
          properties: { role: { enum: ['system', 'user', 'assistant'] }, content: { type: 'string' } },
          additionalProperties: false,
        },
      },
      prompt: { type: 'string', minLength: 1 },
      temperature: templated({ type: 'number', minimum: 0, maximum: 2 }),
      maxTokens: templated({ type: 'integer', minimum: 1 }),
      responseFormat: { enum: ['text', 'json'] },
      timeoutMs: templated({ type: 'integer', minimum: 1, maximum: 600_000 }),
      retry: RETRY_SCHEMA,
    },
    additionalProperties: false,
  },
  secretPaths: [/^config\.apiKey$/],
  checkConfig(c) {
    const problems: string[] = [];
    if ((c.messages === undefined) === (c.prompt === undefined)) problems.push('config: give messages or prompt');
    if ((c.provider === undefined) === (c.baseUrl === undefined)) problems.push('config: give provider or baseUrl');
    if (c.provider !== undefined && c.apiKey !== undefined)
      problems.push('config.apiKey: a provider brings its own key (apiKeySecret in HANDOFF_LLM_PROVIDERS)');
    if (c.apiKey !== undefined && !SECRET_ONLY.test(c.apiKey))
      problems.push('config.apiKey must be a secret reference, {{ secrets.NAME }}');
    if (c.provider === undefined && c.model === undefined) problems.push('config.model is required with baseUrl');
    return problems;
  },
  execute(ctx) {
    return executeCall(ctx, async (calls) => {
      const out = await llmChat(await chatConfig(ctx.config, ctx.scope, calls), {
        dispatcher: calls.dispatcher,
        policy: calls.policy,
        idempotencyKey: ctx.idempotencyKey,
        redact: calls.secrets.redact,
      });
      if (!out.ok) return out;
      const { ok: _ok, ...output } = out;
      return { ok: true, output: { ...output, usage: output.usage ?? null } };
    });
  },
};

/** The call's config: the endpoint resolved, the settings rendered, the prompt fenced. */
async function chatConfig(c: LlmChatNodeConfig, scope: EvalScope, calls: CallServices): Promise<LlmChatConfig> {
  const endpoint =
    c.provider !== undefined
      ? resolveLlmProvider(String(await renderTemplate(c.provider, scope)), calls.llmProviders, calls.secrets)
      : {
          baseUrl: String(await renderTemplate(c.baseUrl, scope)),
          ...(c.apiKey !== undefined
            ? { apiKey: String(await renderWithSecrets(c.apiKey, scope, calls.secrets)) }
            : {}),
        };
  const model = c.model !== undefined ? String(await renderTemplate(c.model, scope)) : endpoint.model;
  if (model === undefined) throw new Error(`provider ${c.provider} names no default model: set config.model`);
  const settings = (await renderTemplate(
    { temperature: c.temperature, maxTokens: c.maxTokens, timeoutMs: c.timeoutMs },
    scope,
  )) as Record<string, unknown>;
  const config: Record<string, unknown> = {
    baseUrl: endpoint.baseUrl,
    ...(endpoint.apiKey !== undefined ? { apiKey: endpoint.apiKey } : {}),
    model,
    ...(c.system !== undefined ? { system: await fenced(c.system, scope) } : {}),
    ...(c.prompt !== undefined ? { prompt: await fenced(c.prompt, scope) } : {}),
    ...(c.responseFormat !== undefined ? { responseFormat: c.responseFormat } : {}),
  };
  if (c.messages !== undefined) {
    const messages: Message[] = [];
    for (const m of c.messages) messages.push({ role: m.role, content: await fenced(m.content, scope) });
    config.messages = messages;
  }
  for (const [key, value] of Object.entries(settings)) if (value !== undefined && value !== null) config[key] = value;
  return config as LlmChatConfig;
}

/** A prompt template rendered with every interpolated value fenced as untrusted data. */
async function fenced(template: string, scope: EvalScope): Promise<string> {
  if (!template.includes('{{')) return template;
  let out = '';
  for (const part of parseTemplate(template)) {
    if ('text' in part) {
      out += part.text;
      continue;
    }
    const value = await evaluateExpression(part.expr, scope);
    if (value === undefined || value === null || value === '') continue;
    out += wrapUntrusted(part.expr, typeof value === 'string' ? value : JSON.stringify(value));
  }
  return out;
}
