// The one error type the A2A core throws, in semantic terms: what went wrong (`kind`), never how a
// wire spells it. Handlers throw `A2AError`; the bindings map a kind to their wire form
// (codec/error-forms.ts: the JSON-RPC code -32001…, the 1.0 google.rpc details, the HTTP+JSON
// status and google.rpc.Status). Anything else that escapes a handler becomes `internal()` so no
// stack or SQL text leaks.
import { TooManyPushConfigs } from '../push/configs.js';
import type { ProtocolVersion } from './versions.js';

/** What went wrong, in A2A's error vocabulary (docs/protocol/a2a.md#v03-errors; 1.0 adds the last
 * two), plus JSON-RPC's own and the host's `try-later`. */
export type A2AErrorKind =
  | 'parse-error'
  | 'invalid-request'
  | 'method-not-found'
  | 'invalid-params'
  | 'internal'
  | 'task-not-found'
  | 'task-not-cancelable'
  | 'push-not-supported'
  | 'unsupported-operation'
  | 'content-type-not-supported'
  | 'invalid-agent-response'
  | 'extended-card-not-configured'
  | 'extension-support-required'
  | 'version-not-supported'
  | 'try-later';

export class A2AError extends Error {
  override readonly name = 'A2AError';
  readonly kind: A2AErrorKind;
  readonly data?: unknown;
  /** Context for the 1.0 forms' google.rpc.ErrorInfo `metadata` (string values only). */
  readonly info?: Readonly<Record<string, string>>;

  constructor(kind: A2AErrorKind, message: string, data?: unknown, info?: Record<string, string>) {
    super(message);
    this.kind = kind;
    if (data !== undefined) this.data = data;
    if (info !== undefined) this.info = info;
  }
}

export const isA2AError = (e: unknown): e is A2AError => e instanceof A2AError;

export const parseError = (msg = 'Invalid JSON payload'): A2AError => new A2AError('parse-error', msg);
export const invalidRequest = (msg: string): A2AError => new A2AError('invalid-request', msg);
export const methodNotFound = (method: string): A2AError =>
  new A2AError('method-not-found', `Method not found: ${method}`);
export const invalidParams = (msg: string, data?: unknown): A2AError => new A2AError('invalid-params', msg, data);

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
export const internal = (msg = 'Internal error'): A2AError => new A2AError('internal', msg);

export const taskNotFound = (id: string): A2AError =>
  new A2AError('task-not-found', `Task not found: ${id}`, undefined, { taskId: id });
/** A task's push config that is not there is "task not found" in A2A's vocabulary. */
export const pushConfigNotFound = (taskId: string, configId: string): A2AError =>
  new A2AError(
    'task-not-found',
    `Push notification config not found: ${JSON.stringify(configId)} for task ${taskId}`,
    undefined,
    { taskId, configId },
  );
export const taskNotCancelable = (id: string): A2AError =>
  new A2AError('task-not-cancelable', `Task not cancelable: ${id}`, undefined, { taskId: id });
export const pushNotSupported = (): A2AError =>
  new A2AError('push-not-supported', 'Push notifications are not supported');
export const unsupportedOperation = (msg: string): A2AError => new A2AError('unsupported-operation', msg);
export const invalidAgentResponse = (msg: string): A2AError => new A2AError('invalid-agent-response', msg);
export const contentTypeNotSupported = (msg: string): A2AError => new A2AError('content-type-not-supported', msg);
export const extendedCardNotConfigured = (): A2AError =>
  new A2AError('extended-card-not-configured', 'Authenticated extended card is not configured');

export const extensionSupportRequired = (uris: readonly string[]): A2AError =>
  new A2AError('extension-support-required', `Extension support required: ${uris.join(', ')}`, undefined, {
    extensions: uris.join(','),
  });
export const versionNotSupported = (
  requested: string,
  supported: readonly string[],
  message = `A2A version '${requested}' is not supported; supported versions: ${supported.join(', ')}`,
): A2AError =>
  new A2AError('version-not-supported', message, undefined, {
    requestedVersion: requested,
    supportedVersions: supported.join(','),
  });

/**
 * The caller is over a quota (HANDOFF_TENANT_RATE, HANDOFF_TENANT_MAX_ACTIVE_RUNS) or the host is
 * at its stream limit; `data.retryAfterSeconds` says when to try again. A2A has no error for it.
 */
export const tryLater = (msg: string, retryAfterSeconds: number): A2AError =>
  new A2AError('try-later', msg, { retryAfterSeconds });

/** Map anything thrown by a handler to a wire-safe error. */
export const toA2AError = (e: unknown): A2AError => {
  if (isA2AError(e)) return e;
  if (e instanceof TooManyPushConfigs) return invalidParams(e.message, { max: e.max });
  return internal();
};
