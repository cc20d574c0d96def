// Request validation for Fastify routes. Bodies are validated strictly (no coercion, unknown
// fields refused where a schema is closed); query strings and path params arrive as text, so
// those validators coerce "5" to 5.
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { FastifySchema } from 'fastify';

const strict = new Ajv2020({
  removeAdditional: false,
  coerceTypes: false,
  useDefaults: true,
  allErrors: false,
  strict: false,
});
const coercing = new Ajv2020({
  removeAdditional: false,
  coerceTypes: true,
  useDefaults: true,
  allErrors: false,
  strict: false,
});

export function compileValidator(schema: FastifySchema | object, httpPart?: string) {
  const ajv = httpPart === 'body' ? strict : coercing;
  return ajv.compile(schema as object);
}
