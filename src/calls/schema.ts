// Checking a value against a TypeBox schema, for the outbound calls' own inputs (a call request,
// an LLM call's config, the provider registry): the first mismatch, said as `path: message`.
import type { TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

/** Why `value` does not fit `schema` (the first mismatch), or undefined when it does. */
export function schemaError(schema: TSchema, value: unknown): string | undefined {
  const first = Value.Errors(schema, value).First();
  return first && `${first.path || '/'}: ${first.message}`;
}
