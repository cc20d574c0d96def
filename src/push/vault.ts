// The token vault: caller secrets (push tokens, credentials) encrypted at rest with AES-256-GCM
// under a host key. The ciphertexts are kept by reference in the store's `secrets` table; records
// elsewhere hold at most a salted fingerprint.
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

export class Vault {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('the host secret key must be 32 bytes');
  }

  /** Encrypt `plain` (AES-256-GCM, a fresh IV each time): iv | tag | data, base64. */
  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), data]).toString('base64');
  }

  /** Decrypt what `seal` made; throws if it was made under another key or altered. */
  open(sealed: string): string {
    const raw = Buffer.from(sealed, 'base64');
    const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
  }

  /** A salted, truncated digest (≤ 32 chars, RFC 0100 `tokenFingerprint`), never the token. */
  fingerprint(token: string): string {
    return createHmac('sha256', this.key).update(`push-token:${token}`).digest('hex').slice(0, 16);
  }
}

/**
 * The host key: HANDOFF_SECRET_KEY (base64 of 32 bytes) when set — required when several
 * instances share a database — else a key file in the data directory, made on first start.
 */
export function loadHostKey(envKey: string | undefined, keyFile: string): Buffer {
  if (envKey) {
    const key = Buffer.from(envKey, 'base64');
    if (key.length !== 32) throw new Error('HANDOFF_SECRET_KEY must be the base64 of 32 bytes');
    return key;
  }
  if (existsSync(keyFile)) return Buffer.from(readFileSync(keyFile, 'utf8').trim(), 'base64');
  mkdirSync(dirname(keyFile), { recursive: true });
  const key = randomBytes(32);
  try {
    writeFileSync(keyFile, key.toString('base64'), { mode: 0o600, flag: 'wx' });
    chmodSync(keyFile, 0o600);
    return key;
  } catch (err) {
    // Another process made it first: use theirs.
    if ((err as NodeJS.ErrnoException).code === 'EEXIST')
      return Buffer.from(readFileSync(keyFile, 'utf8').trim(), 'base64');
    throw err;
  }
}
