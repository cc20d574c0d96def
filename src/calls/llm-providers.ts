// Named model endpoints the operator configures once (HANDOFF_LLM_PROVIDERS, a JSON object), so a
// workflow says `provider: "local"` instead of carrying a URL, and names no key at all:
//
//   HANDOFF_LLM_PROVIDERS='{"local":  {"baseUrl": "http://127.0.0.1:11434/v1", "model": "llama3.2"},
//                           "openai": {"baseUrl": "https://api.openai.com/v1", "apiKeySecret": "OPENAI_KEY"}}'
//   const { baseUrl, apiKey, model } = resolveLlmProvider('openai', config.llmProviders, config.secrets);
import { type Static, Type } from '@sinclair/typebox';
import { SECRET_NAME, type SecretStore } from '../secrets/store.js';
import { schemaError } from './schema.js';

const LlmProviderSchema = Type.Object(
  {
    /** What comes before `/chat/completions` (OpenAI: https://api.openai.com/v1). */
    baseUrl: Type.String({ pattern: '^https?://' }),
    /** The secret holding the API key, sent as `Authorization: Bearer …`; absent: no key. */
    apiKeySecret: Type.Optional(Type.String({ pattern: SECRET_NAME.source })),
    /** The model used when a node names none. */
    model: Type.Optional(Type.String({ minLength: 1 })),
  },
  { additionalProperties: false },
);
const LlmProvidersSchema = Type.Record(
  Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$' }),
  LlmProviderSchema,
  {
    additionalProperties: false,
  },
);

export type LlmProvider = Static<typeof LlmProviderSchema>;

/** The registry from its setting's text; throws saying what is wrong (the caller names the setting). */
export function parseLlmProviders(raw: string): Map<string, LlmProvider> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new Error('must be a JSON object {"name": {"baseUrl": …, "apiKeySecret"?: …, "model"?: …}}');
  }
  const wrong = schemaError(LlmProvidersSchema, parsed);
  if (wrong !== undefined) throw new Error(`${wrong} (provider names: letters, digits, _ . -)`);
  const providers = new Map(Object.entries(parsed as Record<string, LlmProvider>));
  for (const [name, p] of providers) {
    if (!URL.canParse(p.baseUrl)) throw new Error(`provider ${name}: baseUrl is not a URL`);
  }
  return providers;
}

/** What a node naming provider `name` calls: base URL, API key (from its secret), default model. */
export function resolveLlmProvider(
  name: string,
  providers: ReadonlyMap<string, LlmProvider>,
  secrets: SecretStore,
): { baseUrl: string; apiKey?: string; model?: string } {
  const provider = providers.get(name);
  if (provider === undefined) {
    const known = [...providers.keys()].join(', ') || 'none';
    throw new Error(`unknown LLM provider '${name}' (configured in HANDOFF_LLM_PROVIDERS: ${known})`);
  }
  return {
    baseUrl: provider.baseUrl,
    ...(provider.apiKeySecret !== undefined ? { apiKey: secrets.get(provider.apiKeySecret) } : {}),
    ...(provider.model !== undefined ? { model: provider.model } : {}),
  };
}
