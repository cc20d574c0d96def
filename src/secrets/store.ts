// Secrets by reference: a workflow names a secret (`API_TOKEN`); only the host holds its value,
// from `HANDOFF_SECRET_<NAME>` variables or the JSON file `HANDOFF_SECRETS_FILE`. Values are never
// stored in definitions or run logs, and `redact` scrubs them — and the host's other credentials,
// such as agent tokens — from any text we show or log, in every spelling (src/secrets/redact.ts).
//
//   const secrets = loadSecrets({ env: process.env, file: '/run/secrets/handoff.json' });
//   headers.authorization = `Bearer ${secrets.get('API_TOKEN')}`;
//   log.warn(secrets.redact(err.message));
import { readFileSync } from 'node:fs';
import { Redactor } from './redact.js';

/** Secret names: upper-case letters, digits and `_` (the same in env variable names and in the file). */
export const SECRET_NAME = /^[A-Z0-9_]+$/;

const ENV_PREFIX = 'HANDOFF_SECRET_';
// The host key that encrypts push tokens shares the prefix but is a setting, not a secret named KEY:
// a secret called KEY can only come from the file.
const HOST_KEY_VARIABLE = 'HANDOFF_SECRET_KEY';

export class SecretStore {
  // Private fields stay out of JSON.stringify and util.inspect, so a logged config shows no value.
  readonly #values: ReadonlyMap<string, string>;
  readonly #redactor: Redactor;

  /**
   * `credentials`: values that are no secret a workflow may name but are redacted all the same
   * (the agent tokens of HANDOFF_AGENT_TOKEN_<NAME>).
   */
  constructor(values: ReadonlyMap<string, string>, credentials: Iterable<string> = []) {
    this.#values = values;
    this.#redactor = new Redactor([...values.values(), ...credentials]);
  }

  has(name: string): boolean {
    return this.#values.has(name);
  }

  /** The value of a defined secret; throws naming the secret (never a value) when it is not. */
  get(name: string): string {
    const value = this.#values.get(name);
    if (value === undefined) throw new Error(`secret ${name} is not defined`);
    return value;
  }

  /** The one redactor of the host: every secret value and credential, in every spelling. */
  get redactor(): Redactor {
    return this.#redactor;
  }

  /**
   * `text` with every secret value and credential (raw, percent-encoded, JSON-escaped, base64…)
   * replaced by `[redacted]`. A bound function, so it can be handed over as is:
   * `httpCall(req, { …, redact: secrets.redact })`.
   */
  readonly redact = (text: string): string => this.#redactor.text(text);
}

/**
 * Secrets from `HANDOFF_SECRET_<NAME>` variables and, when given, a JSON file `{"NAME": "value"}`.
 * A variable overrides the file's entry of the same name. Throws, naming the variable or the file
 * (never a value), on a bad name, an empty value or a file that is not such an object.
 */
export function loadSecrets(opts: {
  env: NodeJS.ProcessEnv;
  file?: string;
  /** Other credentials the host holds, redacted like secrets (see SecretStore). */
  credentials?: Iterable<string>;
}): SecretStore {
  const values = new Map<string, string>();
  if (opts.file !== undefined) {
    const where = `HANDOFF_SECRETS_FILE (${opts.file})`;
    for (const [name, value] of Object.entries(readSecretsFile(opts.file))) {
      values.set(checkedName(name, where), checkedValue(value, `${where}, ${name}`));
    }
  }
  for (const [variable, value] of Object.entries(opts.env)) {
    if (!variable.startsWith(ENV_PREFIX) || variable === HOST_KEY_VARIABLE || value === undefined) continue;
    const name = checkedName(variable.slice(ENV_PREFIX.length), variable);
    values.set(name, checkedValue(value, variable));
  }
  return new SecretStore(values, opts.credentials);
}

function readSecretsFile(file: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    // JSON.parse messages quote the text around the error: they could show a value.
    const why = (err as NodeJS.ErrnoException).code ?? 'not valid JSON';
    throw new Error(`HANDOFF_SECRETS_FILE: cannot read ${file}: ${why}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new Error(`HANDOFF_SECRETS_FILE: ${file} must hold a JSON object {"NAME": "value", …}`);
  }
  return parsed as Record<string, unknown>;
}

function checkedName(name: string, where: string): string {
  if (!SECRET_NAME.test(name)) {
    throw new Error(`${where}: secret names are A-Z, 0-9 and _ only, got '${name.slice(0, 64)}'`);
  }
  return name;
}

function checkedValue(value: unknown, where: string): string {
  if (typeof value !== 'string' || value === '') throw new Error(`${where}: a secret must be a non-empty string`);
  return value;
}
