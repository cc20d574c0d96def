// OpenID Connect / OAuth2 JWT access tokens, accepted beside API keys (HANDOFF_OIDC_ISSUER). The
// issuer's discovery document names its keys (`jwks_uri`), which are cached and fetched again when
// a token names a key id not seen yet (the provider rotated), at most once per cooldown. Every check
// is jose's: signature, `iss`, `aud`, `exp`/`nbf` with a small clock skew, and an allow-list of
// asymmetric algorithms (never `none`, never an HMAC that a public key could be made to "verify").
//
// The issuer is operator configuration: it is reached directly (a private network, loopback), not
// through the egress guard, like the agent registry's URLs (docs/security.md).
//
//   const oidc = new OidcVerifier(config.oidc);
//   const who = await oidc.verify(token);   // { tenantId, principalId, scopes?, groups?, roles? } or throws TokenRefused
import { createRemoteJWKSet, errors, type JWTPayload, jwtVerify } from 'jose';
import type { OidcSettings } from '../config.js';

/** What the host uses of the provider's discovery document. */
export interface ProviderMetadata {
  issuer: string;
  jwks_uri: string;
  token_endpoint?: string;
  authorization_endpoint?: string;
}

export interface TokenIdentity {
  tenantId: string;
  principalId: string;
  /** Present when HANDOFF_OIDC_SCOPES_CLAIM is set: the operations the token may do. */
  scopes?: ReadonlySet<string>;
  /** Present when HANDOFF_OIDC_GROUPS_CLAIM is set: the approver groups the caller is in. */
  groups?: string[];
  /** Present when HANDOFF_OIDC_ROLES_CLAIM is set: the approver roles the caller holds. */
  roles?: string[];
}

/** Asymmetric algorithms only: `none` and HS* (a public key used as an HMAC secret) are never accepted. */
export const ACCEPTED_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
];

/** Seconds of clock difference tolerated on `exp` and `nbf`. */
const CLOCK_SKEW_S = 30;
/** How long a discovery or key fetch may take. */
const FETCH_TIMEOUT_MS = 5_000;

/** A token that is not accepted; `message` says why (never the token). */
export class TokenRefused extends Error {
  override readonly name = 'TokenRefused';
}

export const discoveryUrl = (issuer: string): string =>
  `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;

/** A compact JWS: three base64url parts (API keys are matched first, so a key of that shape still works). */
export const looksLikeJwt = (token: string): boolean => /^[\w-]+\.[\w-]+\.[\w-]*$/.test(token);

export class OidcVerifier {
  #metadata: Promise<ProviderMetadata> | undefined;
  #keys: ReturnType<typeof createRemoteJWKSet> | undefined;

  constructor(readonly settings: OidcSettings) {}

  /** The discovery document, fetched once; a failed fetch is tried again by the next caller. */
  metadata(): Promise<ProviderMetadata> {
    this.#metadata ??= fetchMetadata(this.settings.issuer).catch((err: unknown) => {
      this.#metadata = undefined;
      throw err;
    });
    return this.#metadata;
  }

  async verify(token: string): Promise<TokenIdentity> {
    const keys = await this.keys();
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, keys, {
        issuer: this.settings.issuer,
        audience: this.settings.audience,
        algorithms: ACCEPTED_ALGORITHMS,
        clockTolerance: CLOCK_SKEW_S,
        requiredClaims: ['exp', 'sub'],
      }));
    } catch (err) {
      throw new TokenRefused(refusal(err));
    }
    const tenant = payload[this.settings.tenantClaim];
    if (typeof tenant !== 'string' || tenant === '') {
      throw new TokenRefused(`the token has no '${this.settings.tenantClaim}' claim naming a tenant`);
    }
    const identity: TokenIdentity = { tenantId: tenant, principalId: payload.sub as string };
    if (this.settings.scopesClaim !== undefined) identity.scopes = scopesOf(payload[this.settings.scopesClaim]);
    if (this.settings.groupsClaim !== undefined) identity.groups = namesOf(payload[this.settings.groupsClaim]);
    if (this.settings.rolesClaim !== undefined) identity.roles = namesOf(payload[this.settings.rolesClaim]);
    return identity;
  }

  private async keys(): Promise<ReturnType<typeof createRemoteJWKSet>> {
    if (this.#keys) return this.#keys;
    let metadata: ProviderMetadata;
    try {
      metadata = await this.metadata();
    } catch (err) {
      throw new TokenRefused(`the token issuer cannot be reached to check it: ${(err as Error).message}`);
    }
    this.#keys ??= createRemoteJWKSet(new URL(metadata.jwks_uri), {
      cooldownDuration: this.settings.jwksCooldownMs,
      timeoutDuration: FETCH_TIMEOUT_MS,
    });
    return this.#keys;
  }
}

async function fetchMetadata(issuer: string): Promise<ProviderMetadata> {
  const url = discoveryUrl(issuer);
  const res = await fetch(url, { redirect: 'error', signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  const doc = (await res.json()) as Partial<ProviderMetadata>;
  // The document must be the issuer's own (OpenID Connect Discovery §4.3).
  if (doc.issuer !== issuer) throw new Error(`${url} names the issuer '${String(doc.issuer)}', not '${issuer}'`);
  if (typeof doc.jwks_uri !== 'string') throw new Error(`${url} has no jwks_uri`);
  return doc as ProviderMetadata;
}

/** A space-separated string (RFC 8693 `scope`) or an array of strings (`scp`). */
function scopesOf(claim: unknown): ReadonlySet<string> {
  if (typeof claim === 'string') return new Set(claim.split(' ').filter(Boolean));
  if (Array.isArray(claim)) return new Set(claim.filter((s): s is string => typeof s === 'string'));
  return new Set();
}

/**
 * Group or role names: a string is ONE name (a group may be called "Finance Admins"), an array
 * several; not split on spaces as scopes are. Empty names are dropped, duplicates kept once.
 */
function namesOf(claim: unknown): string[] {
  const names = typeof claim === 'string' ? [claim] : Array.isArray(claim) ? claim : [];
  return [...new Set(names.filter((s): s is string => typeof s === 'string' && s !== ''))];
}

/** Why jose refused a token, in words that name no value of it. */
function refusal(err: unknown): string {
  if (err instanceof errors.JWTExpired) return 'the token has expired';
  if (err instanceof errors.JWTClaimValidationFailed) return `the token's '${err.claim}' claim is not accepted`;
  if (err instanceof errors.JOSEAlgNotAllowed) return 'the token is signed with an algorithm this host does not accept';
  if (err instanceof errors.JWSSignatureVerificationFailed) return 'the token signature does not verify';
  if (err instanceof errors.JWKSNoMatchingKey) return 'the token is signed with a key the issuer does not publish';
  if (err instanceof errors.JWTInvalid || err instanceof errors.JWSInvalid) return 'the token is malformed';
  if (err instanceof errors.JOSEError) return `the token is not accepted (${err.code})`;
  return 'the token is not accepted';
}

/** What the agent card says of the provider: its discovery URL and, once discovery answered, its token endpoint. */
export async function cardSchemes(
  oidc: OidcVerifier | undefined,
): Promise<{ oidc?: { discoveryUrl: string; tokenUrl?: string } }> {
  if (!oidc) return {};
  const discoveryUrlOf = discoveryUrl(oidc.settings.issuer);
  const tokenUrl = await oidc.metadata().then(
    (m) => m.token_endpoint,
    () => undefined,
  );
  return { oidc: { discoveryUrl: discoveryUrlOf, ...(tokenUrl ? { tokenUrl } : {}) } };
}
