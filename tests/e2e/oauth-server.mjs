// A real OAuth 2.1 authorization server for the identity tests: npm `oidc-provider` on loopback,
// with resource indicators (RFC 8707) and JWT access tokens (RFC 9068) for the client_credentials
// grant. Its signing keys are generated here, so a test can also sign tokens the server would
// never issue (expired, for another audience, ...) and rotate them (restart with new keys).
import http from 'node:http';
import { generateKeyPairSync, sign, createPublicKey } from 'node:crypto';
import Provider, { errors } from 'oidc-provider';

/** A fresh key pair of `kind` (`RS256`, `ES256`, `EdDSA`) as { kid, alg, privateJwk, publicJwk, key }. */
export function newKey(kind, kid) {
  const { privateKey } = kind === 'RS256'
    ? generateKeyPairSync('rsa', { modulusLength: 2048 })
    : kind === 'ES256' ? generateKeyPairSync('ec', { namedCurve: 'P-256' }) : generateKeyPairSync('ed25519');
  const privateJwk = { ...privateKey.export({ format: 'jwk' }), kid, alg: kind, use: 'sig' };
  const publicJwk = { ...createPublicKey(privateKey).export({ format: 'jwk' }), kid, alg: kind, use: 'sig' };
  return { kid, alg: kind, privateJwk, publicJwk, key: privateKey };
}

const b64u = (v) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');

/** A compact JWS of `claims` signed with `key` (its kid and alg unless `header` says otherwise). */
export function signJwt(claims, key, header = {}) {
  const h = { alg: key.alg, typ: 'at+jwt', kid: key.kid, ...header };
  const input = `${b64u(h)}.${b64u(claims)}`;
  const data = Buffer.from(input);
  const sig = key.alg === 'RS256' ? sign('sha256', data, key.key)
    : key.alg === 'ES256' ? sign('sha256', data, { key: key.key, dsaEncoding: 'ieee-p1363' })
      : sign(null, data, key.key);
  return `${input}.${sig.toString('base64url')}`;
}

/**
 * Starts oidc-provider at http://127.0.0.1:<port> signing with `keys` (the first RSA key signs
 * access tokens). `resources`: the resource indicators it issues tokens for (the first is the
 * default); `clients`: { id: { secret, groups } } for the client_credentials grant, their groups
 * becoming a `groups` claim; `users`: { login: groups } for the authorization-code grant of the
 * public client `cli` (PKCE, redirect to `redirectUri`), signed in through oidc-provider's
 * development login and consent pages (see `signIn`). Returns { issuer, jwksHits(), stop() }.
 */
export async function startAuthServer({ port, keys, resources, clients, users = {}, redirectUri = 'http://127.0.0.1/callback' }) {
  const issuer = `http://127.0.0.1:${port}`;
  const provider = new Provider(issuer, {
    clients: Object.entries(clients).map(([id, c]) => ({
      client_id: id,
      client_secret: c.secret,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      scope: 'mcp',
    })).concat([{
      client_id: 'cli',
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code'],
      response_types: ['code'],
      redirect_uris: [redirectUri],
      scope: 'mcp',
    }]),
    jwks: { keys: keys.map((k) => k.privateJwk) },
    scopes: ['mcp'],
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resources[0],
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, indicator) => {
          if (!resources.includes(indicator)) throw new errors.InvalidTarget();
          return { scope: 'mcp', audience: indicator, accessTokenTTL: 300, accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } };
        },
      },
    },
    extraTokenClaims: (_ctx, token) => ({ groups: (token.accountId ? users[token.accountId] : clients[token.clientId]?.groups) ?? [] }),
  });
  let hits = 0;
  const handler = provider.callback();
  const server = http.createServer((req, res) => {
    if (req.url.startsWith('/jwks')) hits += 1;
    handler(req, res);
  });
  await new Promise((resolve, reject) => { server.once('error', reject); server.listen(port, '127.0.0.1', resolve); });
  return {
    issuer,
    jwksHits: () => hits,
    stop: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}

/**
 * Signs `login` in at the authorization URL a client was sent to, as a person would in a browser:
 * follows redirects with a cookie jar, fills oidc-provider's development login form and consents.
 * Returns { code, iss } as delivered to the redirect URI (RFC 9207's `iss` included).
 */
export async function signIn(authorizationUrl, login, redirectUri = 'http://127.0.0.1/callback') {
  const jar = new Map();
  const go = async (url, init = {}) => {
    const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
    const r = await fetch(url, { ...init, redirect: 'manual', headers: { ...init.headers, ...(cookie ? { cookie } : {}) } });
    for (const c of r.headers.getSetCookie()) {
      const kv = c.split(';')[0];
      const i = kv.indexOf('=');
      jar.set(kv.slice(0, i), kv.slice(i + 1));
    }
    return r;
  };
  let r = await go(String(authorizationUrl));
  for (let step = 0; step < 20; step += 1) {
    const location = r.headers.get('location');
    if (location) {
      const next = new URL(location, authorizationUrl);
      if (next.href.startsWith(redirectUri)) {
        const code = next.searchParams.get('code');
        if (!code) throw new Error(`no code at the redirect: ${next.href}`);
        return { code, iss: next.searchParams.get('iss') };
      }
      r = await go(next);
      continue;
    }
    const html = await r.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    if (!action) throw new Error(`no form on the page (HTTP ${r.status}): ${html.slice(0, 300)}`);
    const body = html.includes('name="login"')
      ? new URLSearchParams({ prompt: 'login', login, password: 'any' })
      : new URLSearchParams({ prompt: 'consent' });
    r = await go(new URL(action, authorizationUrl), { method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  }
  throw new Error('sign-in did not reach the redirect URI');
}
