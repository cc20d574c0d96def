// Verifying a peer's signed agent card against keys pinned in the registry (`cardKeys`). A card is
// trusted when one of its signatures verifies, over the JCS of the card without `signatures`, with
// one of the pinned keys; the card's own `jku` is never followed (a pin that fetched its keys from
// the card's host would trust whoever serves the card). Without `cardKeys` a card is taken as it
// comes ("trust on first use", docs/security.md).
//
//   const verdict = await verifyCard(cardJson, { keys: [pinnedJwk] });   // { ok: true, kid } | { ok: false, why }
import { decodeProtectedHeader, flattenedVerify, importJWK, type JWK } from 'jose';
import { CARD_ALGORITHMS, encodedPayload, signaturesOf } from '../jws/card-signing.js';

export interface CardKeys {
  keys: JWK[];
}

export type CardVerdict = { ok: true; kid?: string } | { ok: false; why: string };

/** Whether `card` (as parsed from the wire) carries a signature one of `pinned` verifies. */
export async function verifyCard(card: unknown, pinned: CardKeys): Promise<CardVerdict> {
  if (card === null || typeof card !== 'object') return { ok: false, why: 'the card is not a JSON object' };
  const signatures = signaturesOf(card);
  if (signatures.length === 0) return { ok: false, why: 'the card carries no signature' };
  const payload = encodedPayload(card);
  for (const sig of signatures) {
    let header: { alg?: string; kid?: string };
    try {
      header = decodeProtectedHeader(sig);
    } catch {
      continue;
    }
    if (header.alg === undefined || !CARD_ALGORITHMS.includes(header.alg)) continue;
    for (const jwk of candidates(pinned.keys, header.kid)) {
      if (await verifies(sig, payload, jwk, header.alg))
        return { ok: true, ...(header.kid ? { kid: header.kid } : {}) };
    }
  }
  return { ok: false, why: 'no signature on the card verifies with a pinned key' };
}

/** The pinned keys that may have made a signature naming `kid`: that key, or every key when none is named. */
const candidates = (keys: JWK[], kid: string | undefined): JWK[] =>
  kid === undefined ? keys : keys.filter((k) => k.kid === undefined || k.kid === kid);

async function verifies(sig: { protected: string; signature: string }, payload: string, jwk: JWK, alg: string) {
  if (jwk.alg !== undefined && jwk.alg !== alg) return false;
  try {
    const key = await importJWK(jwk, alg);
    await flattenedVerify({ ...sig, payload }, key, { algorithms: CARD_ALGORITHMS });
    return true;
  } catch {
    return false;
  }
}

/** A `cardKeys` value from the registry file: `{ "keys": [ <public JWK>… ] }`; a string says what is wrong. */
export function checkCardKeys(value: unknown): CardKeys | string {
  const keys = (value as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys) || keys.length === 0)
    return 'cardKeys must be { "keys": [ <JWK>, … ] } with at least one key';
  for (const k of keys) {
    if (k === null || typeof k !== 'object' || typeof (k as JWK).kty !== 'string') return 'each card key must be a JWK';
    if ('d' in k) return 'cardKeys must hold public keys only (a key has a private part "d")';
    if ((k as JWK).kty === 'oct') return 'cardKeys must be asymmetric keys (no "oct")';
  }
  return { keys: keys as JWK[] };
}
