// Signed agent cards (A2A 1.0 AgentCardSignature). With HANDOFF_CARD_SIGNING_KEY_FILE every card the
// host serves carries `signatures: [{ protected, signature }]`: a JWS with a detached payload, the
// RFC 8785 (JCS) canonical JSON of the card without `signatures`. The protected header names the
// algorithm, the key (`kid` = its RFC 7638 JWK thumbprint), `typ` and where the keys are (`jku`).
//
// Rotation: the file holds one or more PEM private keys (ES256 on P-256, or Ed25519), oldest first;
// the last one signs and all of them are published at /.well-known/jwks.json, so a caller that
// pinned an older key keeps verifying while it moves to the new one (docs/security.md).
//
//   const signer = await CardSigner.fromFile('/etc/handoff/card-keys.pem');
//   const signed = await signer.sign(card, 'https://b.example.com/.well-known/jwks.json');
//   cardPayload(signed)   // the bytes the signature covers
import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import canonicalize from 'canonicalize';
import { base64url, calculateJwkThumbprint, exportJWK, FlattenedSign, type JWK } from 'jose';

export const JWKS_PATH = '/.well-known/jwks.json';

/** Algorithms a card signature may use (asymmetric only: a pinned public key is never an HMAC secret). */
export const CARD_ALGORITHMS = ['ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519', 'RS256', 'PS256', 'PS384', 'PS512'];

export interface CardSignature {
  protected: string;
  signature: string;
  header?: Record<string, unknown>;
}

/** The bytes a card signature covers: JCS of the card without its `signatures`. */
export function cardPayload(card: object): Uint8Array {
  const { signatures: _signatures, ...unsigned } = card as { signatures?: unknown };
  return new TextEncoder().encode(canonicalize(unsigned) ?? '');
}

interface SigningKey {
  key: KeyObject;
  alg: 'ES256' | 'EdDSA';
  kid: string;
  publicJwk: JWK;
}

/** Signatures kept per card (versions × base URLs seen); the oldest goes first. */
const SIGNED_CACHE_MAX = 32;

export class CardSigner {
  /**
   * Signature by payload and `jku`: an ES256 signature is randomized, so signing each request anew
   * would change the card's bytes (and its ETag) every time; the same card keeps its signature.
   */
  private readonly signed = new Map<string, CardSignature>();

  private constructor(private readonly keys: SigningKey[]) {}

  /** The PEM file's private keys, oldest first; throws naming the file (never key material). */
  static async fromFile(file: string): Promise<CardSigner> {
    const blocks = readFileSync(file, 'utf8').match(
      /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]+?-----END [A-Z ]*PRIVATE KEY-----/g,
    );
    if (!blocks) throw new Error(`HANDOFF_CARD_SIGNING_KEY_FILE (${file}) holds no PEM private key`);
    const keys: SigningKey[] = [];
    for (const [i, pem] of blocks.entries()) keys.push(await signingKey(pem, `${file}, key ${i + 1}`));
    return new CardSigner(keys);
  }

  /** The public keys, newest last, as a JWK Set. */
  jwks(): { keys: JWK[] } {
    return { keys: this.keys.map((k) => k.publicJwk) };
  }

  /** `card` with `signatures: [one signature by the newest key]` (any signatures it had are replaced). */
  async sign<T extends object>(card: T, jku: string): Promise<T & { signatures: CardSignature[] }> {
    const payload = cardPayload(card);
    const key = `${jku}\n${Buffer.from(payload).toString('base64')}`;
    let signature = this.signed.get(key);
    if (signature === undefined) {
      const newest = this.keys[this.keys.length - 1] as SigningKey;
      const jws = await new FlattenedSign(payload)
        .setProtectedHeader({ alg: newest.alg, kid: newest.kid, typ: 'JOSE', jku })
        .sign(newest.key);
      signature = { protected: jws.protected ?? '', signature: jws.signature };
      if (this.signed.size >= SIGNED_CACHE_MAX) this.signed.delete(this.signed.keys().next().value as string);
      this.signed.set(key, signature);
    }
    const { signatures: _old, ...unsigned } = card as T & { signatures?: unknown };
    return { ...(unsigned as T), signatures: [signature] };
  }
}

async function signingKey(pem: string, where: string): Promise<SigningKey> {
  let key: KeyObject;
  try {
    key = createPrivateKey(pem);
  } catch {
    throw new Error(`HANDOFF_CARD_SIGNING_KEY_FILE (${where}) is not a readable PEM private key`);
  }
  const alg =
    key.asymmetricKeyType === 'ed25519'
      ? 'EdDSA'
      : key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1'
        ? 'ES256'
        : undefined;
  if (alg === undefined) {
    throw new Error(`HANDOFF_CARD_SIGNING_KEY_FILE (${where}) must be an ES256 (P-256) or Ed25519 key`);
  }
  const jwk = await exportJWK(createPublicKey(key));
  const kid = await calculateJwkThumbprint(jwk, 'sha256');
  return { key, alg, kid, publicJwk: { ...jwk, kid, alg, use: 'sig' } };
}

/** The card as served: signed when the host has a signing key, its keys named at `<base>/.well-known/jwks.json`. */
export async function servedCard<T extends object>(signer: CardSigner | undefined, card: T, baseUrl: string) {
  return signer ? signer.sign(card, baseUrl.replace(/\/+$/, '') + JWKS_PATH) : card;
}

/** A card's signatures as served; an absent or malformed list is none. */
export function signaturesOf(card: unknown): CardSignature[] {
  const list = (card as { signatures?: unknown } | null)?.signatures;
  if (!Array.isArray(list)) return [];
  return list.filter(
    (s): s is CardSignature =>
      s !== null && typeof s === 'object' && typeof s.protected === 'string' && typeof s.signature === 'string',
  );
}

/** The payload in the JWS JSON form (`payload` member) for a detached signature. */
export const encodedPayload = (card: object): string => base64url.encode(cardPayload(card));
