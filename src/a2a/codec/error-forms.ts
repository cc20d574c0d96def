// The wire forms of the core's semantic errors (../errors.ts), for the bindings only: the JSON-RPC
// code of each kind (docs/protocol/a2a.md#v03-errors; 1.0 adds -32008 and -32009), the 0.3
// JSON-RPC error `{code, message, data?}`, the 1.0 one (`data` a list of google.rpc details), and
// the HTTP+JSON status with its google.rpc.Status body.
import type { A2AError, A2AErrorKind } from '../errors.js';

/** The JSON-RPC `error` member. */
export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;
export const TASK_NOT_FOUND = -32001;
export const UNSUPPORTED_OPERATION = -32004;
/**
 * Not an A2A code (A2A defines none for it; JSON-RPC leaves -32000…-32099 to servers): sent with
 * HTTP 429 or 503 for `try-later`.
 */
export const TRY_LATER = -32029;

/** Each kind's JSON-RPC code. */
export const JSON_RPC_CODES: Readonly<Record<A2AErrorKind, number>> = {
  'parse-error': -32700,
  'invalid-request': -32600,
  'method-not-found': -32601,
  'invalid-params': INVALID_PARAMS,
  internal: INTERNAL_ERROR,
  'task-not-found': TASK_NOT_FOUND,
  'task-not-cancelable': -32002,
  'push-not-supported': -32003,
  'unsupported-operation': UNSUPPORTED_OPERATION,
  'content-type-not-supported': -32005,
  'invalid-agent-response': -32006,
  'extended-card-not-configured': -32007,
  'extension-support-required': -32008,
  'version-not-supported': -32009,
  'try-later': TRY_LATER,
};

/** The A2A 0.3 JSON-RPC error object: `data` is omitted, not null, when absent. */
export const jsonRpcErrorV0_3 = (err: A2AError): JsonRpcErrorObject =>
  err.data === undefined
    ? { code: JSON_RPC_CODES[err.kind], message: err.message }
    : { code: JSON_RPC_CODES[err.kind], message: err.message, data: err.data };

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

const FORMS: Readonly<Record<A2AErrorKind, ErrorForm>> = {
  'parse-error': { reason: 'PARSE_ERROR', http: 400, status: 'INVALID_ARGUMENT' },
  'invalid-request': { reason: 'INVALID_REQUEST', http: 400, status: 'INVALID_ARGUMENT' },
  // REST has no method names: an operation this host lacks is a route it does not have.
  'method-not-found': { reason: 'METHOD_NOT_FOUND', http: 404, status: 'NOT_FOUND' },
  // The reason the official SDKs read as RequestMalformedError.
  'invalid-params': { reason: 'INVALID_PARAMS', http: 400, status: 'INVALID_ARGUMENT' },
  internal: { reason: 'INTERNAL_ERROR', http: 500, status: 'INTERNAL' },
  'task-not-found': { reason: 'TASK_NOT_FOUND', http: 404, status: 'NOT_FOUND' },
  'task-not-cancelable': { reason: 'TASK_NOT_CANCELABLE', http: 400, status: 'FAILED_PRECONDITION' },
  'push-not-supported': { reason: 'PUSH_NOTIFICATION_NOT_SUPPORTED', http: 400, status: 'FAILED_PRECONDITION' },
  'unsupported-operation': { reason: 'UNSUPPORTED_OPERATION', http: 400, status: 'FAILED_PRECONDITION' },
  'content-type-not-supported': { reason: 'CONTENT_TYPE_NOT_SUPPORTED', http: 400, status: 'INVALID_ARGUMENT' },
  'invalid-agent-response': { reason: 'INVALID_AGENT_RESPONSE', http: 500, status: 'INTERNAL' },
  'extended-card-not-configured': {
    reason: 'EXTENDED_AGENT_CARD_NOT_CONFIGURED',
    http: 400,
    status: 'FAILED_PRECONDITION',
  },
  'extension-support-required': { reason: 'EXTENSION_SUPPORT_REQUIRED', http: 400, status: 'FAILED_PRECONDITION' },
  'version-not-supported': { reason: 'VERSION_NOT_SUPPORTED', http: 400, status: 'FAILED_PRECONDITION' },
  'try-later': { reason: 'TRY_LATER', http: 429, status: 'RESOURCE_EXHAUSTED' },
};

const formOf = (err: A2AError): ErrorForm => FORMS[err.kind];

/** ErrorInfo first (clients look for it), then the field violations of a -32602 that has them. */
function details(err: A2AError): ErrorDetail[] {
  const info: ErrorInfo = {
    '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
    reason: formOf(err).reason,
    domain: A2A_ERROR_DOMAIN,
  };
  if (err.info !== undefined) info.metadata = { ...err.info };
  const violations = err.kind === 'invalid-params' ? fieldViolations(err.data) : [];
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
  code: JSON_RPC_CODES[err.kind],
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
