// JSON-RPC 2.0 and A2A v0.3 error codes (spec/a2a.md §1.6) and the one error type the A2A layer
// throws. Handlers throw `A2AError`; the dispatcher turns it into `{code, message, data?}`.
// Anything else that escapes a handler becomes `internal()` so no stack or SQL text leaks.
import { TooManyPushConfigs } from '../push/configs.js';

export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;

export const TASK_NOT_FOUND = -32001;
export const TASK_NOT_CANCELABLE = -32002;
export const PUSH_NOTIFICATION_NOT_SUPPORTED = -32003;
export const UNSUPPORTED_OPERATION = -32004;
export const CONTENT_TYPE_NOT_SUPPORTED = -32005;
export const INVALID_AGENT_RESPONSE = -32006;
export const AUTHENTICATED_EXTENDED_CARD_NOT_CONFIGURED = -32007;

/** The wire form of an error inside a JSON-RPC response. */
export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

export class A2AError extends Error {
  override readonly name = 'A2AError';
  readonly code: number;
  readonly data?: unknown;

  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.code = code;
    if (data !== undefined) this.data = data;
  }

  /** `data` is omitted, not null, when absent: JSON-RPC makes it optional. */
  toJSON(): JsonRpcErrorObject {
    return this.data === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, data: this.data };
  }
}

export const isA2AError = (e: unknown): e is A2AError => e instanceof A2AError;

export const parseError = (msg = 'Invalid JSON payload'): A2AError => new A2AError(PARSE_ERROR, msg);
export const invalidRequest = (msg: string): A2AError => new A2AError(INVALID_REQUEST, msg);
export const methodNotFound = (method: string): A2AError =>
  new A2AError(METHOD_NOT_FOUND, `Method not found: ${method}`);
export const invalidParams = (msg: string, data?: unknown): A2AError => new A2AError(INVALID_PARAMS, msg, data);
/** Deliberately fixed text: internal failures must not leak details to callers. */
export const internal = (msg = 'Internal error'): A2AError => new A2AError(INTERNAL_ERROR, msg);

export const taskNotFound = (id: string): A2AError => new A2AError(TASK_NOT_FOUND, `Task not found: ${id}`);
export const taskNotCancelable = (id: string): A2AError =>
  new A2AError(TASK_NOT_CANCELABLE, `Task not cancelable: ${id}`);
export const pushNotSupported = (): A2AError =>
  new A2AError(PUSH_NOTIFICATION_NOT_SUPPORTED, 'Push notifications are not supported');
export const unsupportedOperation = (msg: string): A2AError => new A2AError(UNSUPPORTED_OPERATION, msg);
export const contentTypeNotSupported = (msg: string): A2AError => new A2AError(CONTENT_TYPE_NOT_SUPPORTED, msg);
export const extendedCardNotConfigured = (): A2AError =>
  new A2AError(AUTHENTICATED_EXTENDED_CARD_NOT_CONFIGURED, 'Authenticated extended card is not configured');

/**
 * Not an A2A code (A2A defines none for it; JSON-RPC leaves -32000…-32099 to servers): the caller
 * is over a quota (HANDOFF_TENANT_RATE, HANDOFF_TENANT_MAX_ACTIVE_RUNS) or the host is at its
 * stream limit; `data.retryAfterSeconds` says when to try again. Sent with HTTP 429 or 503.
 */
export const TRY_LATER = -32029;

export const tryLater = (msg: string, retryAfterSeconds: number): A2AError =>
  new A2AError(TRY_LATER, msg, { retryAfterSeconds });

/** Map anything thrown by a handler to a wire-safe error. */
export const toA2AError = (e: unknown): A2AError => {
  if (isA2AError(e)) return e;
  if (e instanceof TooManyPushConfigs) return invalidParams(e.message, { max: e.max });
  return internal();
};
