// The OpenWOP error envelope `{error, message, details?}` (docs/protocol/openwop.md#errors) and the one
// place where engine error codes become HTTP statuses.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { EngineError, type EngineErrorCode } from '../engine/errors.js';

export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

const ENGINE_STATUS: Record<EngineErrorCode, number> = {
  validation_error: 400,
  not_found: 404,
  forbidden: 403,
  run_terminal: 409,
  interrupt_not_found: 404,
  interrupt_already_resolved: 409,
  interrupt_cancelled: 422,
  interrupt_gone: 410,
  correlation_mismatch: 422,
  interrupt_withdrawn: 409,
  idempotency_key_mismatch: 409,
  conflict: 409,
  artifact_changed: 409,
  // Raised only to the node that starts child runs; mapped for completeness.
  child_depth_exceeded: 422,
  parent_ended: 409,
};

export function envelope(code: string, message: string, details?: Record<string, unknown>) {
  return details ? { error: code, message, details } : { error: code, message };
}

export function errorHandler(err: FastifyError | Error, req: FastifyRequest, reply: FastifyReply): void {
  const { status, body } = toResponse(err);
  // A 503 the host chose (at HANDOFF_SSE_MAX_STREAMS) is an answer, not a failure to log.
  if (status >= 500 && !(err instanceof HttpError && status === 503)) req.log.error({ err }, 'request failed');
  void reply.status(status).send(body);
}

export function toResponse(err: FastifyError | Error): { status: number; body: ReturnType<typeof envelope> } {
  if (err instanceof HttpError) return { status: err.statusCode, body: envelope(err.code, err.message, err.details) };
  if (err instanceof EngineError)
    return { status: ENGINE_STATUS[err.code], body: envelope(err.code, err.message, err.details) };
  const fe = err as FastifyError;
  if (fe.validation) {
    // Fastify's message already names the part ("body must have required property 'x'").
    return { status: 400, body: envelope('validation_error', fe.message, { errors: fe.validation }) };
  }
  switch (fe.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, body: envelope('payload_too_large', fe.message) };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return {
        status: 415,
        body: envelope('unsupported_media_type', 'Content-Type must be application/json or application/a2a+json'),
      };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { status: 400, body: envelope('validation_error', 'the JSON body is empty') };
  }
  if (fe.statusCode === 400 && (err instanceof SyntaxError || /JSON/i.test(fe.message))) {
    return { status: 400, body: envelope('validation_error', `malformed JSON body: ${fe.message}`) };
  }
  if (fe.statusCode && fe.statusCode >= 400 && fe.statusCode < 500) {
    return { status: fe.statusCode, body: envelope('bad_request', fe.message) };
  }
  return { status: 500, body: envelope('internal_error', 'internal error') };
}
