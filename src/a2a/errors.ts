// JSON-RPC 2.0 and A2A error codes (docs/protocol/a2a.md#v03-errors; 1.0 adds -32008 and -32009) and the one
// error type the A2A layer throws. Handlers throw `A2AError`; each wire form is one function:
// `toJSON()` is the 0.3 JSON-RPC error `{code, message, data?}`, `jsonRpcErrorV1` the 1.0 one
// (`data` a list of google.rpc details), `restError` the HTTP+JSON status and google.rpc.Status body.
// Anything else that escapes a handler becomes `internal()` so no stack or SQL text leaks.
import { TooManyPushConfigs } from '../push/configs.js';
import type { ProtocolVersion } from './versions.js';

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
export const EXTENSION_SUPPORT_REQUIRED = -32008;
export const VERSION_NOT_SUPPORTED = -32009;

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
  /** Context for the 1.0 forms' google.rpc.ErrorInfo `metadata` (string values only). */
  readonly info?: Readonly<Record<string, string>>;

  constructor(code: number, message: string, data?: unknown, info?: Record<string, string>) {
    super(message);
    this.code = code;
    if (data !== undefined) this.data = data;
    if (info !== undefined) this.info = info;
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

/**
 * A push URL the egress guard refused, named where the request carried it: 0.3 nests the config
 * as `pushNotificationConfig`, 1.0 as `taskPushNotificationConfig` inline and flat on its own.
 */
export function pushUrlRefused(
  verdict: { arm: string; code: string; reason: string },
  version: ProtocolVersion,
  inline: boolean,
): A2AError {
  const config = version === '0.3' ? 'pushNotificationConfig.' : inline ? 'taskPushNotificationConfig.' : '';
  const field = `${inline ? 'configuration.' : ''}${config}url`;
  return invalidParams(`${field} refused (${verdict.code}): ${verdict.reason}`, {
    arm: verdict.arm,
    code: verdict.code,
  });
}
/** Deliberately fixed text: internal failures must not leak details to callers. */
export const internal = (msg = 'Internal error'): A2AError => new A2AError(INTERNAL_ERROR, msg);

export const taskNotFound = (id: string): A2AError =>
  new A2AError(TASK_NOT_FOUND, `Task not found: ${id}`, undefined, { taskId: id });
export const taskNotCancelable = (id: string): A2AError =>
  new A2AError(TASK_NOT_CANCELABLE, `Task not cancelable: ${id}`, undefined, { taskId: id });
export const pushNotSupported = (): A2AError =>
  new A2AError(PUSH_NOTIFICATION_NOT_SUPPORTED, 'Push notifications are not supported');
export const unsupportedOperation = (msg: string): A2AError => new A2AError(UNSUPPORTED_OPERATION, msg);
export const invalidAgentResponse = (msg: string): A2AError => new A2AError(INVALID_AGENT_RESPONSE, msg);
export const contentTypeNotSupported = (msg: string): A2AError => new A2AError(CONTENT_TYPE_NOT_SUPPORTED, msg);
export const extendedCardNotConfigured = (): A2AError =>
  new A2AError(AUTHENTICATED_EXTENDED_CARD_NOT_CONFIGURED, 'Authenticated extended card is not configured');

export const extensionSupportRequired = (uris: readonly string[]): A2AError =>
  new A2AError(EXTENSION_SUPPORT_REQUIRED, `Extension support required: ${uris.join(', ')}`, undefined, {
    extensions: uris.join(','),
  });
export const versionNotSupported = (requested: string, supported: readonly string[]): A2AError =>
  new A2AError(
    VERSION_NOT_SUPPORTED,
    `A2A version '${requested}' is not supported; supported versions: ${supported.join(', ')}`,
    undefined,
    { requestedVersion: requested, supportedVersions: supported.join(',') },
  );

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

// ---------------------------------------------------------------- the 1.0 forms

export const A2A_ERROR_DOMAIN = 'a2a-protocol.org';

/** google.rpc.ErrorInfo as a ProtoJSON `Any`: what the error is, machine-readably. */
export interface ErrorInfo {
  '@type': 'type.googleapis.com/google.rpc.ErrorInfo';
  reason: string;
  domain: typeof A2A_ERROR_DOMAIN;
  metadata?: Record<string, string>;
}

/** google.rpc.BadRequest as a ProtoJSON `Any`: which request fields were wrong. */
export interface BadRequest {
  '@type': 'type.googleapis.com/google.rpc.BadRequest';
  fieldViolations: Array<{ field: string; description: string }>;
}

export type ErrorDetail = ErrorInfo | BadRequest;

/** The HTTP+JSON error body (google.rpc.Status in its HTTP form: `code` is the HTTP status). */
export interface RestErrorBody {
  error: { code: number; status: string; message: string; details: ErrorDetail[] };
}

interface ErrorForm {
  /** ErrorInfo reason: the A2A error name in UPPER_SNAKE without "Error". */
  reason: string;
  http: number;
  /** google.rpc.Code name. */
  status: string;
}

const FORMS: Readonly<Record<number, ErrorForm>> = {
  [PARSE_ERROR]: { reason: 'PARSE_ERROR', http: 400, status: 'INVALID_ARGUMENT' },
  [INVALID_REQUEST]: { reason: 'INVALID_REQUEST', http: 400, status: 'INVALID_ARGUMENT' },
  // REST has no method names: an operation this host lacks is a route it does not have.
  [METHOD_NOT_FOUND]: { reason: 'METHOD_NOT_FOUND', http: 404, status: 'NOT_FOUND' },
  // The reason the official SDKs read as RequestMalformedError.
  [INVALID_PARAMS]: { reason: 'INVALID_PARAMS', http: 400, status: 'INVALID_ARGUMENT' },
  [INTERNAL_ERROR]: { reason: 'INTERNAL_ERROR', http: 500, status: 'INTERNAL' },
  [TASK_NOT_FOUND]: { reason: 'TASK_NOT_FOUND', http: 404, status: 'NOT_FOUND' },
  [TASK_NOT_CANCELABLE]: { reason: 'TASK_NOT_CANCELABLE', http: 400, status: 'FAILED_PRECONDITION' },
  [PUSH_NOTIFICATION_NOT_SUPPORTED]: {
    reason: 'PUSH_NOTIFICATION_NOT_SUPPORTED',
    http: 400,
    status: 'FAILED_PRECONDITION',
  },
  [UNSUPPORTED_OPERATION]: { reason: 'UNSUPPORTED_OPERATION', http: 400, status: 'FAILED_PRECONDITION' },
  [CONTENT_TYPE_NOT_SUPPORTED]: { reason: 'CONTENT_TYPE_NOT_SUPPORTED', http: 400, status: 'INVALID_ARGUMENT' },
  [INVALID_AGENT_RESPONSE]: { reason: 'INVALID_AGENT_RESPONSE', http: 500, status: 'INTERNAL' },
  [AUTHENTICATED_EXTENDED_CARD_NOT_CONFIGURED]: {
    reason: 'EXTENDED_AGENT_CARD_NOT_CONFIGURED',
    http: 400,
    status: 'FAILED_PRECONDITION',
  },
  [EXTENSION_SUPPORT_REQUIRED]: { reason: 'EXTENSION_SUPPORT_REQUIRED', http: 400, status: 'FAILED_PRECONDITION' },
  [VERSION_NOT_SUPPORTED]: { reason: 'VERSION_NOT_SUPPORTED', http: 400, status: 'FAILED_PRECONDITION' },
  [TRY_LATER]: { reason: 'TRY_LATER', http: 429, status: 'RESOURCE_EXHAUSTED' },
};

const formOf = (err: A2AError): ErrorForm => FORMS[err.code] ?? (FORMS[INTERNAL_ERROR] as ErrorForm);

/** ErrorInfo first (clients look for it), then the field violations of a -32602 that has them. */
function details(err: A2AError): ErrorDetail[] {
  const info: ErrorInfo = {
    '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
    reason: formOf(err).reason,
    domain: A2A_ERROR_DOMAIN,
  };
  if (err.info !== undefined) info.metadata = { ...err.info };
  const violations = err.code === INVALID_PARAMS ? fieldViolations(err.data) : [];
  if (violations.length === 0) return [info];
  return [info, { '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: violations }];
}

/** The validators' `data.errors` ([{path, message}]) as BadRequest field violations. The field is a
 * path into the request message, so the JSON-RPC `params` root is dropped. */
function fieldViolations(data: unknown): BadRequest['fieldViolations'] {
  const errors = (data as { errors?: unknown } | undefined)?.errors;
  if (!Array.isArray(errors)) return [];
  return errors
    .filter(
      (e): e is { path: string; message: string } => typeof e?.path === 'string' && typeof e?.message === 'string',
    )
    .map((e) => ({ field: e.path.replace(/^params(\.|$)/, ''), description: e.message }));
}

/** The A2A 1.0 JSON-RPC error object: `data` is always a list of google.rpc detail objects. */
export const jsonRpcErrorV1 = (err: A2AError): JsonRpcErrorObject => ({
  code: err.code,
  message: err.message,
  data: details(err),
});

/** The A2A 1.0 HTTP+JSON error: the HTTP status and the google.rpc.Status body to send with it. */
export function restError(err: A2AError): { httpStatus: number; body: RestErrorBody } {
  const form = formOf(err);
  return {
    httpStatus: form.http,
    body: { error: { code: form.http, status: form.status, message: err.message, details: details(err) } },
  };
}
