// A hostile MCP upstream and authorization server for the sign-in client's checks (issue 58 items
// 1-4; oauth-client-checks.test.mjs natively, worker-oauth-checks.test.mjs on the Worker): small
// node servers on 127.0.0.1 that answer what an attacker's would and keep every request they get.
import http from 'node:http';

/** A server on `port` answering with `handler(req, body)` → [status, headers, body]; its requests kept. */
export async function serve(t, port, handler) {
  const requests = [];
  const srv = http.createServer(async (req, res) => {
    let body = '';
    for await (const c of req) body += c;
    requests.push({ method: req.method, url: req.url, authorization: req.headers.authorization, body });
    const [status, headers, text] = handler(req, body) ?? [404, {}, ''];
    res.writeHead(status, headers).end(text);
  });
  await new Promise((r) => srv.listen(port, '127.0.0.1', r));
  t.after(() => { srv.closeAllConnections(); srv.close(); });
  return requests;
}

export const json = (v) => [200, { 'content-type': 'application/json' }, JSON.stringify(v)];

/**
 * A hostile pair: an MCP upstream on `up` (401 with a Bearer challenge naming `challengeUrl`, its
 * well-known metadata `prm`) and an authorization server on `as` (metadata `asMeta` over the
 * defaults; a token endpoint that issues `at-issued`). Returns their request lists.
 */
export async function hostile(t, { up, as, prm, asMeta = {}, challengeUrl }) {
  const issuer = `http://127.0.0.1:${as}`;
  const upstream = await serve(t, up, (req) => {
    if (req.url === '/.well-known/oauth-protected-resource/mcp' && prm) return json(prm);
    if (req.method === 'POST' && !req.headers.authorization) {
      const metadata = challengeUrl ?? `http://127.0.0.1:${up}/.well-known/oauth-protected-resource/mcp`;
      return [401, { 'www-authenticate': `Bearer resource_metadata="${metadata}"` }, ''];
    }
    return undefined;
  });
  const server = await serve(t, as, (req) => {
    if (req.url === '/.well-known/oauth-authorization-server') {
      return json({
        issuer,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        code_challenge_methods_supported: ['S256'],
        ...asMeta,
      });
    }
    if (req.url === '/token') return json({ access_token: 'at-issued', token_type: 'Bearer', expires_in: 300 });
    return undefined;
  });
  return { issuer, upstream, server };
}
