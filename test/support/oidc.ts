// A real OpenID provider (the `oidc-provider` package) on loopback, issuing JWT access tokens by
// client credentials, for the token tests. Its signing keys are generated here, so a test can
// rotate them (restart on the same port with a new key first) and craft tokens the provider would
// never issue (expired, another issuer) with its real key.
//
//   const idp = await startProvider({ audience: 'https://b.test', tenant: 'acme' });
//   const token = await idp.token('a-host', { scope: 'runs:create runs:read' });
//   idp.tokenRequests   // how many token requests it answered
//   await idp.rotate(); await idp.close();
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import Provider from 'oidc-provider';

export interface ProviderOptions {
  /** The resource (and `aud`) tokens are issued for when the request names none. */
  audience: string;
  /** The `tenant` claim of every token. */
  tenant: string;
  /** Clients: id → secret (each may use client credentials). Default { 'a-host': 'a-host-secret' }. */
  clients?: Record<string, string>;
  /** A public client for the console (authorization code + PKCE) with this redirect URI. */
  consoleRedirect?: string;
  /** Scopes a client-credentials token may be given. */
  scopes?: string[];
  /** Claims added to the tokens of a client, by client id (e.g. its `groups`). */
  clientClaims?: Record<string, Record<string, unknown>>;
}

export interface TestProvider {
  issuer: string;
  port: number;
  /** The provider's current private signing keys, newest (signing) first. */
  keys: JWK[];
  /** Token endpoint requests answered so far. */
  tokenRequests: number;
  /** A client-credentials access token (a JWT for `resource`, default the audience). */
  token(clientId: string, opts?: { scope?: string; resource?: string }): Promise<string>;
  /** A new signing key first, the old ones still published; the provider restarts on its port. */
  rotate(): Promise<void>;
  close(): Promise<void>;
}

const OPERATION_SCOPES = [
  'runs:create',
  'runs:read',
  'runs:cancel',
  'approvals:respond',
  'webhooks:manage',
  'manifest:read',
];

async function newKey(): Promise<JWK> {
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  return {
    ...(await exportJWK(privateKey)),
    alg: 'ES256',
    use: 'sig',
    kid: `k${Date.now()}${Math.random().toString(36).slice(2, 6)}`,
  };
}

export async function startProvider(opts: ProviderOptions): Promise<TestProvider> {
  const clients = opts.clients ?? { 'a-host': 'a-host-secret' };
  const scopes = opts.scopes ?? OPERATION_SCOPES;
  let keys: JWK[] = [await newKey()];
  let server: Server | undefined;
  const state = { tokenRequests: 0 };
  let port = 0;

  const listen = async (): Promise<void> => {
    const issuer = `http://127.0.0.1:${port}`;
    const provider = providerFor(issuer, keys, clients, scopes, opts);
    const callback = provider.callback();
    server = createServer((req, res) => {
      if (req.method === 'POST' && req.url?.startsWith('/token')) state.tokenRequests++;
      // No kept-alive sockets: a client must not hold one across a restart (rotate).
      res.shouldKeepAlive = false;
      void callback(req, res);
    });
    await new Promise<void>((resolve) => server?.listen(port, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  };
  await listen();
  // The issuer names the port: the provider is built again once the port is known.
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  await listen();

  const close = () =>
    new Promise<void>((resolve) => {
      server?.closeAllConnections();
      server?.close(() => resolve());
    });
  const self: TestProvider = {
    get issuer() {
      return `http://127.0.0.1:${port}`;
    },
    get port() {
      return port;
    },
    get keys() {
      return keys;
    },
    get tokenRequests() {
      return state.tokenRequests;
    },
    set tokenRequests(n: number) {
      state.tokenRequests = n;
    },
    async token(clientId, o = {}) {
      const form = new URLSearchParams({ grant_type: 'client_credentials' });
      if (o.scope) form.set('scope', o.scope);
      form.set('resource', o.resource ?? opts.audience);
      const basic = Buffer.from(`${clientId}:${clients[clientId]}`).toString('base64');
      const res = await fetch(`${self.issuer}/token`, {
        method: 'POST',
        headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
        body: form,
      });
      const body = (await res.json()) as { access_token?: string };
      if (!res.ok || !body.access_token) throw new Error(`token request failed: ${res.status} ${JSON.stringify(body)}`);
      return body.access_token;
    },
    async rotate() {
      keys = [await newKey(), ...keys];
      await close();
      await listen();
    },
    close,
  };
  return self;
}

function providerFor(
  issuer: string,
  keys: JWK[],
  clients: Record<string, string>,
  scopes: string[],
  opts: ProviderOptions,
): Provider {
  const clientList: object[] = Object.entries(clients).map(([id, secret]) => ({
    client_id: id,
    client_secret: secret,
    id_token_signed_response_alg: 'ES256',
    grant_types: ['client_credentials'],
    redirect_uris: [],
    response_types: [],
  }));
  if (opts.consoleRedirect) {
    clientList.push({
      client_id: 'handoff-console',
      token_endpoint_auth_method: 'none',
      id_token_signed_response_alg: 'ES256',
      grant_types: ['authorization_code'],
      response_types: ['code'],
      redirect_uris: [opts.consoleRedirect],
    });
  }
  const provider = new Provider(issuer, {
    clients: clientList as never,
    jwks: { keys: keys as never },
    scopes: ['openid', ...scopes],
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => opts.audience,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resource) => ({
          scope: scopes.join(' '),
          audience: resource,
          accessTokenFormat: 'jwt',
          accessTokenTTL: 3600,
          jwt: { sign: { alg: 'ES256' } },
        }),
      },
    },
    ttl: {
      ClientCredentials: 3600,
      AccessToken: 3600,
      AuthorizationCode: 60,
      Session: 3600,
      Grant: 3600,
      Interaction: 600,
    },
    extraTokenClaims: (_ctx, token) => {
      const clientId = 'clientId' in token ? token.clientId : undefined;
      return { tenant: opts.tenant, ...(clientId ? opts.clientClaims?.[clientId] : {}) };
    },
    // The console's tokens: the signed-in account is the principal.
    findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
  });
  return provider;
}
