// A real authorization server for the team tests: oidc-provider (a
// certified OpenID Provider), on a loopback port, issuing JWT access tokens
// for one resource (RFC 8707 resource indicators) to two confidential
// clients through the client-credentials grant:
//
//   agent   client secret "agent-secret",  may get mcp:tools and mcp:write
//   reader  client secret "reader-secret", may get mcp:tools only
//
// Usage: node oidc.mjs PORT RESOURCE. Prints `issuer URL` when it listens.
import { generateKeyPairSync } from 'node:crypto';
import Provider from 'oidc-provider';

const [port, resource] = process.argv.slice(2);
if (!port || !resource) {
  console.error('usage: node oidc.mjs PORT RESOURCE');
  process.exit(2);
}
const issuer = `http://127.0.0.1:${port}`;
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'team-test-key', use: 'sig', alg: 'RS256' };

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: 'agent',
      client_secret: 'agent-secret',
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      scope: 'mcp:tools mcp:write',
    },
    {
      client_id: 'reader',
      client_secret: 'reader-secret',
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      scope: 'mcp:tools',
    },
  ],
  jwks: { keys: [jwk] },
  scopes: ['mcp:tools', 'mcp:write'],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resource,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, indicator) => {
        if (indicator !== resource) {
          throw new Error(`unknown resource ${indicator}`);
        }
        return {
          scope: 'mcp:tools mcp:write',
          audience: resource,
          accessTokenTTL: 600,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
});
provider.listen(Number(port), '127.0.0.1', () => {
  console.log(`issuer ${issuer}`);
});
