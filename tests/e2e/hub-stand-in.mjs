// A loopback stand-in for the Hugging Face Hub (issue 61), for the tests that fetch a model
// through HF_ENDPOINT: the endpoints the `hf-hub` crate calls to download one file —
// HEAD and GET /{owner}/{name}/resolve/{revision}/{file} — answered as huggingface.co answers
// them: X-Repo-Commit, an ETag (the file's git blob hash), and for an LFS file (model.safetensors)
// a 302 to a CDN URL with X-Linked-Etag (its sha256) and X-Linked-Size, the CDN serving the bytes.
// The files come from a model folder (scripts/bootstrap.sh unpacks all-MiniLM-L6-v2 from PyPI into
// target/models/all-minilm-l6-v2). Every request is recorded; `corrupt` serves other bytes than the
// announced ones; `bytesPerSecond` slows the CDN (to see progress lines).
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';

/** The commit the stand-in says `main` is at. */
export const COMMIT = 'c9745ed1d9f207416be6d2e6f8de32d1f16199bf';
/** Files stored in LFS on the real hub (served through the CDN redirect). */
const LFS = new Set(['model.safetensors']);

/**
 * Serves the model folder `dir` as repository `repo` on 127.0.0.1 (`port`: 0 for any free one).
 * Returns { endpoint, port, requests, set(options), close() }.
 */
export async function startHub({ dir, repo = 'sentence-transformers/all-MiniLM-L6-v2', port = 0, corrupt = false, bytesPerSecond = 0 } = {}) {
  const opts = { corrupt, bytesPerSecond };
  const requests = [];
  const files = new Map();
  for (const name of fs.readdirSync(dir)) {
    const file = path.join(dir, name);
    if (!fs.statSync(file).isFile()) continue;
    const bytes = fs.readFileSync(file);
    const gitSha = crypto.createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex');
    const sha256 = crypto.createHash('sha256').update(bytes).digest('hex');
    files.set(name, { bytes, gitSha, sha256 });
  }
  const server = http.createServer((req, res) => {
    requests.push({ method: req.method, url: req.url, authorization: req.headers.authorization ?? null });
    const url = new URL(req.url, 'http://x');
    const cdn = url.pathname.match(/^\/cdn\/([0-9a-f]{64})$/);
    if (cdn) {
      const f = [...files.values()].find((v) => v.sha256 === cdn[1]);
      if (!f) return void res.writeHead(404).end();
      let body = f.bytes;
      if (opts.corrupt) {
        body = Buffer.from(body);
        body[body.length - 1] ^= 0xff;
      }
      res.writeHead(200, { 'Content-Length': body.length, 'Content-Type': 'application/octet-stream' });
      if (req.method === 'HEAD') return void res.end();
      return void send(res, body, opts.bytesPerSecond);
    }
    const m = url.pathname.match(/^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/);
    if (!m || m[1] !== repo) {
      res.writeHead(404, { 'X-Error-Code': 'RepoNotFound', 'Content-Type': 'application/json' });
      return void res.end(JSON.stringify({ error: 'Repository not found' }));
    }
    const [, , revision, name] = m;
    const f = files.get(decodeURIComponent(name));
    if (!f || (revision !== 'main' && revision !== COMMIT)) {
      res.writeHead(404, { 'X-Error-Code': 'EntryNotFound', 'Content-Type': 'application/json' });
      return void res.end(JSON.stringify({ error: 'Entry not found' }));
    }
    const base = { 'X-Repo-Commit': COMMIT, ETag: `"${f.gitSha}"` };
    if (LFS.has(name)) {
      res.writeHead(302, {
        ...base,
        'X-Linked-Etag': `"${f.sha256}"`,
        'X-Linked-Size': String(f.bytes.length),
        Location: `http://127.0.0.1:${server.address().port}/cdn/${f.sha256}`,
        'Content-Length': 0,
      });
      return void res.end();
    }
    res.writeHead(200, { ...base, 'Content-Length': f.bytes.length, 'Content-Type': 'application/octet-stream' });
    res.end(req.method === 'HEAD' ? undefined : f.bytes);
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const bound = server.address().port;
  return {
    endpoint: `http://127.0.0.1:${bound}`,
    port: bound,
    requests,
    set: (o) => Object.assign(opts, o),
    close: () => new Promise((resolve) => {
      server.closeAllConnections?.();
      server.close(() => resolve());
    }),
  };
}

/** Writes `body` to `res`, at most `rate` bytes a second when `rate` is set. */
function send(res, body, rate) {
  if (!rate) return void res.end(body);
  const chunk = Math.max(1, Math.floor(rate / 20));
  let at = 0;
  const tick = setInterval(() => {
    if (res.destroyed) return void clearInterval(tick);
    const next = Math.min(body.length, at + chunk);
    res.write(body.subarray(at, next));
    at = next;
    if (at >= body.length) {
      clearInterval(tick);
      res.end();
    }
  }, 50);
}
