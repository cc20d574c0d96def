// Conditional GETs of what the host serves from memory (the console's files, the agent card): a
// strong ETag from a hash of the exact bytes sent, and `If-None-Match` answered 304 without a body.
import { createHash } from 'node:crypto';

/** A strong ETag of `body`: the bytes decide it, so two equal bodies share it and any change moves it. */
export const strongEtag = (body: string | Buffer): string =>
  `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;

/** `If-None-Match`: a list of tags, weak or strong (compared weakly, RFC 9110 §13.1.2), or `*`. */
export function matchesEtag(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t === etag || t === `W/${etag}`;
  });
}
