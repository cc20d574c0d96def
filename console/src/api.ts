// Every call the console makes goes through here: the host's public REST and A2A JSON-RPC APIs,
// with the signed-in API key as a Bearer token. Failures become ApiErrors whose message a person
// can read.
const KEY_STORAGE = 'handoff.apiKey';

/** An access token from the OpenID provider (oidc.ts): in memory only, never stored. */
let memoryToken: string | undefined;

export function setMemoryToken(token: string | undefined): void {
  memoryToken = token;
}

/**
 * The credential of this browser tab's session: an access token from the provider, or the API key
 * entered (kept in sessionStorage only).
 */
export function apiKey(): string | undefined {
  return memoryToken ?? sessionStorage.getItem(KEY_STORAGE) ?? undefined;
}

/** Keep an API key for the session; `undefined` signs out (the token is forgotten too). */
export function setApiKey(key: string | undefined): void {
  if (key) sessionStorage.setItem(KEY_STORAGE, key);
  else {
    sessionStorage.removeItem(KEY_STORAGE);
    memoryToken = undefined;
  }
}

export function authHeaders(key = apiKey()): Record<string, string> {
  return key ? { Authorization: `Bearer ${key}` } : {};
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    /** The host's error code (`not_found`, `interrupt_already_resolved`, …), or `network`. */
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

let unauthorized: () => void = () => {};

/** Called when the host refuses the key (401): the app goes back to sign-in. */
export function onUnauthorized(fn: () => void): void {
  unauthorized = fn;
}

export function reportUnauthorized(): void {
  unauthorized();
}

/** A JSON request. `key` overrides the session's key (sign-in tries a key before keeping it). */
export async function api<T>(path: string, init: { method?: string; body?: unknown; key?: string } = {}): Promise<T> {
  let res: Response;
  try {
    res = await fetch(path, {
      method: init.method ?? 'GET',
      headers: {
        Accept: 'application/json',
        // The host's audit log records what this page does as the console's acts.
        'Handoff-Surface': 'console',
        ...authHeaders(init.key ?? apiKey()),
        ...(init.body === undefined ? {} : { 'Content-Type': 'application/json' }),
      },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
      cache: 'no-store',
    });
  } catch {
    throw new ApiError(0, 'network', 'The Handoff host cannot be reached. Check that it is running.');
  }
  const text = await res.text();
  const body = parse(text);
  if (res.ok) return body as T;
  const envelope = body as { error?: string; message?: string } | undefined;
  const error = new ApiError(
    res.status,
    envelope?.error ?? `http_${res.status}`,
    describe(res.status, envelope?.message),
  );
  if (res.status === 401 && init.key === undefined) reportUnauthorized();
  throw error;
}

/** One A2A JSON-RPC call on /v1/a2a; a JSON-RPC error becomes an ApiError with its message. */
export async function rpc<T>(method: string, params: unknown): Promise<T> {
  const answer = await api<{ result?: T; error?: { code: number; message: string } }>('/v1/a2a', {
    method: 'POST',
    body: { jsonrpc: '2.0', id: crypto.randomUUID(), method, params },
  });
  if (answer.error) throw new ApiError(200, `rpc_${answer.error.code}`, answer.error.message);
  return answer.result as T;
}

function parse(text: string): unknown {
  try {
    return text === '' ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}

function describe(status: number, message: string | undefined): string {
  switch (status) {
    case 401:
      return 'This host did not accept the API key. Sign in again.';
    case 403:
      return message ? `Not allowed: ${message}.` : 'You are not allowed to do this.';
    case 404:
      return message ? `Not found: ${message}.` : 'Not found.';
    case 503:
      return message ? `The host is not available: ${message}.` : 'The host is not available right now.';
  }
  if (message) return `${message.charAt(0).toUpperCase()}${message.slice(1)}.`;
  return status >= 500 ? `The host failed to answer (HTTP ${status}).` : `The request was refused (HTTP ${status}).`;
}

/** Words for any error thrown at the UI. */
export function errorText(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
