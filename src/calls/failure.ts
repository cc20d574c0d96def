// How an outbound call says it failed: a code, whether trying again can help, and texts that the
// caller's redaction has been applied to (they end up in run logs and error messages).

export interface CallFailure<Code extends string> {
  ok: false;
  code: Code;
  retryable: boolean;
  message: string;
  status?: number;
  retryAfterMs?: number;
  /** The start of an unexpected answer (at most 512 characters, redacted). */
  bodyExcerpt?: string;
}

/** Failures and excerpts of one call, with the caller's redaction applied to every text. */
export interface Report<Code extends string> {
  fail(code: Code, retryable: boolean, message: string, extra?: Partial<CallFailure<Code>>): CallFailure<Code>;
  excerpt(text: string): string;
}

const EXCERPT_CHARS = 512;

export function reporter<Code extends string>(redact: (text: string) => string = (t) => t): Report<Code> {
  return {
    fail: (code, retryable, message, extra = {}) => ({
      ok: false,
      code,
      retryable,
      message: redact(message),
      ...extra,
    }),
    // Redacted whole, then cut: cutting first could leave the start of a secret behind.
    excerpt: (text) => redact(text).slice(0, EXCERPT_CHARS),
  };
}
