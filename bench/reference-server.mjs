//! The benchmark's reference: an MCP server written the usual way with the official TypeScript
//! SDK (`Server` + `StreamableHTTPServerTransport` in Node, one transport per session, JSON
//! responses), serving the same catalog document with the same filter semantics and page size
//! as mcp-sieve (bench/reference-core.mjs).
//!   node bench/reference-server.mjs CATALOG.json PORT
import http from 'node:http';
import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { referenceServers } from './reference-core.mjs';

const [file, port] = process.argv.slice(2);
const newServer = referenceServers(JSON.parse(fs.readFileSync(file, 'utf8')));
const transports = new Map();

http.createServer(async (req, res) => {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
  const sid = req.headers['mcp-session-id'];
  let transport = sid ? transports.get(sid) : undefined;
  if (!transport) {
    if (sid || body?.method !== 'initialize') {
      res.writeHead(sid ? 404 : 400).end();
      return;
    }
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      enableJsonResponse: true,
      onsessioninitialized: (id) => transports.set(id, transport),
    });
    await newServer().connect(transport);
  }
  await transport.handleRequest(req, res, body);
}).listen(Number(port), '127.0.0.1', () => console.log(`reference MCP server on http://127.0.0.1:${port}/mcp`));
