// Signing in with the host's OpenID provider (authorization code + PKCE, RFC 7636), when the host
// names a console client (/console/sign-in.json). The access token is kept in memory only: a
// reload signs in again (the provider's own session makes that one click). Only the PKCE verifier
// and the state cross the redirect, in sessionStorage, and are removed when the code comes back.
import { setMemoryToken } from './api.js';

export interface ProviderSignIn {
  issuer: string;
  clientId: string;
  audience: string;
  authorizationEndpoint: string;
  tokenEndpoint: string;
}

const PENDING = 'handoff.oidcPending';
const REDIRECT = () => `${location.origin}/console`;

/** The host's console client, or undefined when it signs in with API keys only. */
export async function providerSignIn(): Promise<ProviderSignIn | undefined> {
  try {
    const res = await fetch('/console/sign-in.json', { cache: 'no-store' });
    return res.ok ? ((await res.json()) as ProviderSignIn) : undefined;
  } catch {
    return undefined;
  }
}

const base64url = (bytes: Uint8Array): string =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');

const random = (): string => base64url(crypto.getRandomValues(new Uint8Array(32)));

/** Go to the provider's sign-in page; it comes back to /console with a code. */
export async function startProviderSignIn(p: ProviderSignIn): Promise<void> {
  const verifier = random();
  const state = random();
  sessionStorage.setItem(PENDING, JSON.stringify({ verifier, state }));
  const challenge = base64url(
    new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))),
  );
  const url = new URL(p.authorizationEndpoint);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: p.clientId,
    redirect_uri: REDIRECT(),
    scope: 'openid runs:create runs:read runs:cancel approvals:respond webhooks:manage manifest:read',
    resource: p.audience,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state,
  }).toString();
  location.assign(url.toString());
}

/**
 * Back from the provider (`?code=…&state=…`): exchange the code for an access token, kept in
 * memory; true when signed in. The code leaves the address bar either way.
 */
export async function finishProviderSignIn(p: ProviderSignIn): Promise<boolean> {
  const params = new URLSearchParams(location.search);
  const code = params.get('code');
  const pending = JSON.parse(sessionStorage.getItem(PENDING) ?? 'null') as { verifier: string; state: string } | null;
  sessionStorage.removeItem(PENDING);
  if (code === null && params.get('error') === null) return false;
  history.replaceState(null, '', location.pathname);
  if (code === null || pending === null || params.get('state') !== pending.state) return false;
  const res = await fetch(p.tokenEndpoint, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT(),
      client_id: p.clientId,
      code_verifier: pending.verifier,
      resource: p.audience,
    }),
  });
  const body = (await res.json().catch(() => ({}))) as { access_token?: unknown };
  if (!res.ok || typeof body.access_token !== 'string') return false;
  setMemoryToken(body.access_token);
  return true;
}
