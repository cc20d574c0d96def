// One call to an OpenAI-compatible Chat Completions endpoint (OpenAI, Ollama, vLLM, llama.cpp,
// LiteLLM, …), made by httpCall: the same guard, limits, classification and Idempotency-Key as
// any outbound call, then the completion read into text (and JSON, when asked for).
//
//   const out = await llmChat({ baseUrl, apiKey, model: 'gpt-4o-mini', prompt: 'Say hi', responseFormat: 'json' },
//     { dispatcher, policy, idempotencyKey: 'run:draft:0', redact: secrets.redact });
//   if (out.ok) use(out.json ?? out.text);
import { type Static, Type } from '@sinclair/typebox';
import { Redactor } from '../secrets/redact.js';
import { failSpanWith, inSpan, SpanKind, tracingEnabled } from '../telemetry/tracing.js';
import { type CallFailure, type Report, reporter } from './failure.js';
import { type HttpCallErrorCode, type HttpCallOptions, httpCall } from './http.js';
import { schemaError } from './schema.js';
import { hasUntrusted, UNTRUSTED_NOTICE } from './untrusted.js';

const MessageSchema = Type.Object(
  {
    role: Type.Union([Type.Literal('system'), Type.Literal('user'), Type.Literal('assistant')]),
    content: Type.String(),
  },
  { additionalProperties: false },
);

const LlmChatConfigSchema = Type.Object(
  {
    /** What comes before `/chat/completions`, e.g. https://api.openai.com/v1. */
    baseUrl: Type.String({ minLength: 1 }),
    /** Sent as `Authorization: Bearer …`. */
    apiKey: Type.Optional(Type.String({ minLength: 1 })),
    model: Type.String({ minLength: 1 }),
    /** A system message put before all others. */
    system: Type.Optional(Type.String()),
    /** The conversation; or `prompt`, one user message. Exactly one of the two. */
    messages: Type.Optional(Type.Array(MessageSchema, { minItems: 1 })),
    prompt: Type.Optional(Type.String({ minLength: 1 })),
    temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
    maxTokens: Type.Optional(Type.Integer({ minimum: 1 })),
    /** `json` asks for a JSON object (response_format json_object) and parses the answer. */
    responseFormat: Type.Optional(Type.Union([Type.Literal('text'), Type.Literal('json')])),
    /** Default 120 s: generation is slow. */
    timeoutMs: Type.Optional(Type.Integer({ minimum: 1, maximum: 600_000 })),
  },
  { additionalProperties: false },
);

export type LlmChatConfig = Static<typeof LlmChatConfigSchema>;

export interface LlmUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

export interface LlmChatSuccess {
  ok: true;
  text: string;
  /** The parsed answer, when responseFormat is `json`. */
  json?: unknown;
  usage?: LlmUsage;
  /** The model that answered, as the provider names it. */
  model: string;
  /** `stop`, `length` (cut off at maxTokens), `content_filter`, …; null when the provider says none. */
  finishReason: string | null;
}

/** httpCall's failures, plus `invalid_output`: the model's answer is not the JSON asked for. */
export type LlmChatErrorCode = HttpCallErrorCode | 'invalid_output';
export type LlmChatFailure = CallFailure<LlmChatErrorCode>;
export type LlmChatOutcome = LlmChatSuccess | LlmChatFailure;

const DEFAULT_TIMEOUT_MS = 120_000;

// The part of a chat.completion we read; everything else a provider adds is ignored.
const CompletionSchema = Type.Object({
  model: Type.Optional(Type.String()),
  choices: Type.Array(
    Type.Object({
      message: Type.Object({
        content: Type.Union([Type.String(), Type.Null()]),
        refusal: Type.Optional(Type.Union([Type.String(), Type.Null()])),
      }),
      finish_reason: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    }),
    { minItems: 1 },
  ),
  usage: Type.Optional(
    Type.Object({
      prompt_tokens: Type.Integer({ minimum: 0 }),
      completion_tokens: Type.Integer({ minimum: 0 }),
      total_tokens: Type.Integer({ minimum: 0 }),
    }),
  ),
});
type Completion = Static<typeof CompletionSchema>;

/**
 * One Chat Completions attempt (no retry: see retry.ts). Never throws. `options.redact`, when
 * given, must hide `apiKey` too (SecretStore.redact does: the key is always a secret).
 */
export function llmChat(config: LlmChatConfig, options: HttpCallOptions): Promise<LlmChatOutcome> {
  if (!tracingEnabled()) return chatOnce(config, options);
  // The GenAI conventions' client span: `chat <model>`, the HTTP call's span inside it.
  const attributes = {
    'gen_ai.operation.name': 'chat',
    'gen_ai.request.model': config.model,
    ...(config.temperature !== undefined ? { 'gen_ai.request.temperature': config.temperature } : {}),
    ...(config.maxTokens !== undefined ? { 'gen_ai.request.max_tokens': config.maxTokens } : {}),
  };
  return inSpan(`chat ${config.model}`, { kind: SpanKind.CLIENT, attributes }, async (span) => {
    const out = await chatOnce(config, options);
    if (!out.ok) failSpanWith(span, out.code);
    else {
      span?.setAttribute('gen_ai.response.model', out.model);
      if (out.usage) {
        span?.setAttribute('gen_ai.usage.input_tokens', out.usage.promptTokens);
        span?.setAttribute('gen_ai.usage.output_tokens', out.usage.completionTokens);
      }
    }
    return out;
  });
}

async function chatOnce(config: LlmChatConfig, options: HttpCallOptions): Promise<LlmChatOutcome> {
  // The host's redaction holds the key (a secret); a caller without one still gets the key hidden.
  const redact = options.redact ?? new Redactor(config.apiKey ? [config.apiKey] : []).text;
  const report = reporter<LlmChatErrorCode>(redact);
  const invalid =
    schemaError(LlmChatConfigSchema, config) ??
    ((config.messages === undefined) === (config.prompt === undefined)
      ? 'give messages or prompt, not both'
      : undefined);
  if (invalid !== undefined) return report.fail('invalid_request', false, `invalid LLM call: ${invalid}`);
  const out = await httpCall(
    {
      method: 'POST',
      url: `${config.baseUrl.replace(/\/+$/, '')}/chat/completions`,
      headers: { accept: 'application/json', ...(config.apiKey ? { authorization: `Bearer ${config.apiKey}` } : {}) },
      json: requestBody(config),
      timeoutMs: config.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    },
    { ...options, redact },
  );
  if (!out.ok) return out;
  const body = out.body as { error?: { message?: unknown } } | null;
  if (typeof body === 'object' && body?.error !== undefined) {
    // Some servers answer 200 with an error object instead of a status.
    const said = String(body.error?.message ?? '?');
    return report.fail('invalid_response', false, `the provider answered with an error: ${said}`);
  }
  const wrong = schemaError(CompletionSchema, body);
  if (wrong !== undefined)
    return report.fail('invalid_response', false, `the answer is not a chat completion (${wrong})`);
  return completionOutcome(body as Completion, config, report);
}

function requestBody(config: LlmChatConfig): Record<string, unknown> {
  const conversation = config.messages ?? [{ role: 'user', content: config.prompt! }];
  // Fenced outside content is only data if the model is told so.
  const notice = conversation.some((m) => hasUntrusted(m.content)) ? UNTRUSTED_NOTICE : undefined;
  const system = [config.system, notice].filter((s) => s !== undefined).join('\n\n');
  return {
    model: config.model,
    messages: system === '' ? conversation : [{ role: 'system', content: system }, ...conversation],
    ...(config.temperature !== undefined ? { temperature: config.temperature } : {}),
    ...(config.maxTokens !== undefined ? { max_tokens: config.maxTokens } : {}),
    ...(config.responseFormat === 'json' ? { response_format: { type: 'json_object' } } : {}),
  };
}

function completionOutcome(
  completion: Completion,
  config: LlmChatConfig,
  report: Report<LlmChatErrorCode>,
): LlmChatOutcome {
  const choice = completion.choices[0]!;
  const finishReason = choice.finish_reason ?? null;
  const text = choice.message.content;
  if (text === null) {
    const why = choice.message.refusal ? `the model refused: ${choice.message.refusal}` : 'the answer has no text';
    return report.fail('invalid_response', false, why);
  }
  const u = completion.usage;
  const success: LlmChatSuccess = {
    ok: true,
    text,
    model: completion.model ?? config.model,
    finishReason,
    ...(u
      ? { usage: { promptTokens: u.prompt_tokens, completionTokens: u.completion_tokens, totalTokens: u.total_tokens } }
      : {}),
  };
  if (config.responseFormat !== 'json') return success;
  try {
    return { ...success, json: JSON.parse(withoutCodeFence(text)) };
  } catch {
    // Not retryable: the same Idempotency-Key may be answered with the same text again.
    const cutOff = finishReason === 'length' ? ' (cut off: finish_reason is length, raise maxTokens)' : '';
    return report.fail('invalid_output', false, `the model's answer is not valid JSON${cutOff}`, {
      bodyExcerpt: report.excerpt(text),
    });
  }
}

/** Local models often fence JSON in ```json … ``` even in JSON mode; the fence is not the answer. */
function withoutCodeFence(text: string): string {
  const fenced = /^\s*```(?:json)?\s*\n([\s\S]*?)\n\s*```\s*$/i.exec(text);
  return fenced ? fenced[1]! : text;
}
