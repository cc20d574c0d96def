// SHA-256 over the RFC 8785 (JSON Canonicalization Scheme) form of a JSON value: the hash an
// artifact or a question list is shown with (`artifactHash`) and the audit log's entry hashes.
// The canonical form is the `canonicalize` package's (the RFC's reference implementation for
// JavaScript); the same value hashes the same on every host, whatever order its keys came in.
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';

/** The JCS text of `value`; `undefined` canonicalizes as `null` (an artifact that is absent). */
export function jcs(value: unknown): string {
  try {
    return canonicalize(value ?? null) ?? 'null';
  } catch (err) {
    // JCS refuses a lone UTF-16 surrogate (JSON text may escape one): hash the string as it would
    // be encoded, each lone surrogate as U+FFFD, rather than refuse the decision that showed it.
    if (err instanceof Error && /surrogate/i.test(err.message)) return canonicalize(wellFormed(value)) ?? 'null';
    throw err;
  }
}

/** Lowercase hex SHA-256 of the JCS text of `value`. */
export function jcsSha256(value: unknown): string {
  return createHash('sha256').update(jcs(value)).digest('hex');
}

/** `sha256:<hex>`: how an artifact's or an audit subject's hash is shown and sent back. */
export function contentHash(value: unknown): string {
  return `sha256:${jcsSha256(value)}`;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const fixed = (s: string): string => s.replace(LONE_SURROGATE, '\uFFFD');

function wellFormed(v: unknown): unknown {
  if (typeof v === 'string') return fixed(v);
  if (Array.isArray(v)) return v.map(wellFormed);
  if (v && typeof v === 'object') {
    return Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [fixed(k), wellFormed(x)]));
  }
  return v ?? null;
}
