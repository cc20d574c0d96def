// A local OpenID provider for trying Handoff's token support (README, "Two hosts with an OpenID
// provider"): `oidc-provider` (a devDependency) on http://127.0.0.1:9090, in memory, issuing JWT
// access tokens (ES256) by client credentials. For development only: keys and clients are made
// up at each start.
//
//   node scripts/dev-oidc.mjs [--port 9090] [--resource http://127.0.0.1:8081] [--tenant partner-a]
//
// Client `a-host`, secret `a-host-secret`; tokens are for --resource (their `aud`) and carry the
// claim `tenant`. With --console <redirect URI>, a public client `handoff-console` may sign in
// (authorization code + PKCE; any user name at the provider's development login page).
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '9090' },
    resource: { type: 'string', default: 'http://127.0.0.1:8081' },
    tenant: { type: 'string', default: 'partner-a' },
    console: { type: 'string' },
  },
});
const issuer = `http://127.0.0.1:${values.port}`;
const scopes = 'runs:create runs:read runs:cancel approvals:respond webhooks:manage manifest:read';
const { privateKey } = await generateKeyPair('ES256', { extractable: true });
const jwk = { ...(await exportJWK(privateKey)), alg: 'ES256', use: 'sig', kid: 'dev-1' };

const clients = [
  {
    client_id: 'a-host',
    client_secret: 'a-host-secret',
    grant_types: ['client_credentials'],
    redirect_uris: [],
    response_types: [],
    id_token_signed_response_alg: 'ES256',
  },
];
if (values.console) {
  clients.push({
    client_id: 'handoff-console',
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code'],
    response_types: ['code'],
    redirect_uris: [values.console],
    id_token_signed_response_alg: 'ES256',
  });
}

const provider = new Provider(issuer, {
  clients,
  jwks: { keys: [jwk] },
  scopes: ['openid', ...scopes.split(' ')],
  ttl: {
    ClientCredentials: 3600,
    AccessToken: 3600,
    AuthorizationCode: 60,
    Session: 3600,
    Grant: 3600,
    Interaction: 600,
    IdToken: 3600,
  },
  features: {
    devInteractions: { enabled: true },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => values.resource,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resource) => ({
        scope: scopes,
        audience: resource,
        accessTokenFormat: 'jwt',
        accessTokenTTL: 3600,
        jwt: { sign: { alg: 'ES256' } },
      }),
    },
  },
  extraTokenClaims: () => ({ tenant: values.tenant }),
  findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
});
createServer(provider.callback()).listen(Number(values.port), '127.0.0.1', () => {
  process.stdout.write(
    `OpenID provider ${issuer}: client a-host / a-host-secret, tokens for ${values.resource}, tenant ${values.tenant}\n`,
  );
});
