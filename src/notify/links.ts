// Signed one-time decision links. A token is 128 random bits and an HMAC-SHA256 of them under the
// host's link key (HANDOFF_LINK_SECRET, else a key file in the data directory), both base64url:
// `<random>.<signature>`. The store keeps only the token's sha256 (decision_links), bound to a
// run, an interrupt, a recipient and an expiry. A token whose signature does not check is refused
// before any lookup, and answers exactly as an unknown one does (404).
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/** A link lives until the gate's deadline, or this long when the gate has none. */
export const LINK_DEFAULT_TTL_MS = 7 * 24 * 3_600_000;

const RANDOM_BYTES = 16;
const SIGNATURE_BYTES = 32;

export class LinkSigner {
  constructor(private readonly key: Buffer) {
    if (key.length < 32) throw new Error('HANDOFF_LINK_SECRET must hold at least 32 bytes');
  }

  /** A new token and the hash the store keeps of it. */
  mint(): { token: string; hash: string } {
    const random = randomBytes(RANDOM_BYTES);
    const token = `${random.toString('base64url')}.${this.sign(random).toString('base64url')}`;
    return { token, hash: hashOf(token) };
  }

  /** The hash to look `token` up by, or undefined when it is malformed or its signature fails. */
  check(token: string): string | undefined {
    const m = /^([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/.exec(token);
    if (!m) return undefined;
    const random = Buffer.from(m[1] as string, 'base64url');
    const given = Buffer.from(m[2] as string, 'base64url');
    if (random.length !== RANDOM_BYTES || given.length !== SIGNATURE_BYTES) return undefined;
    return timingSafeEqual(given, this.sign(random)) ? hashOf(token) : undefined;
  }

  private sign(random: Buffer): Buffer {
    return createHmac('sha256', this.key).update('handoff-decision-link:').update(random).digest();
  }
}

const hashOf = (token: string): string => createHash('sha256').update(token).digest('hex');

/**
 * The link key: HANDOFF_LINK_SECRET when set (its UTF-8 bytes; at least 32) — the same on every
 * instance sharing a database — else a key file in the data directory, made on first start.
 */
export function loadLinkKey(secret: string | undefined, keyFile: string): Buffer {
  if (secret) return Buffer.from(secret, 'utf8');
  if (existsSync(keyFile)) return Buffer.from(readFileSync(keyFile, 'utf8').trim(), 'base64');
  mkdirSync(dirname(keyFile), { recursive: true });
  const key = randomBytes(32);
  try {
    writeFileSync(keyFile, key.toString('base64'), { mode: 0o600, flag: 'wx' });
    chmodSync(keyFile, 0o600);
    return key;
  } catch (err) {
    // Another process made it first: use theirs.
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
      return Buffer.from(readFileSync(keyFile, 'utf8').trim(), 'base64');
    }
    throw err;
  }
}
