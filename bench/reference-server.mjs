//! The benchmark's reference: an MCP server written the usual way with the official TypeScript
//! SDK (`Server` + `StreamableHTTPServerTransport` in Node, one transport per session, JSON
//! responses), serving the same catalog document with the same filter semantics and page size
//! as mcp-sieve, through its own loose `tools/list` schema that keeps `params.filter`.
//!   node bench/reference-server.mjs CATALOG.json PORT
import http from 'node:http';
import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { compile } from './filters.mjs';

const [file, port] = process.argv.slice(2);
const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
const catalog = compile(doc);
const pageSize = doc.options?.pageSize ?? 50;

// The stock ListToolsRequestSchema strips unknown params such as `filter`.
const LooseListTools = z.object({
  method: z.literal('tools/list'),
  params: z.object({ filter: z.any().optional(), cursor: z.string().optional() }).passthrough().optional(),
});

function newServer() {
  const server = new Server({ name: 'reference', version: '1' }, { capabilities: { tools: { listChanged: true } } });
  server.setRequestHandler(LooseListTools, (req) => {
    const matched = catalog.select(req.params?.filter ?? {});
    const start = req.params?.cursor ? Number.parseInt(req.params.cursor, 10) : 0;
    const page = matched.slice(start, start + pageSize).map((t) => t.json);
    const next = start + pageSize < matched.length ? String(start + pageSize) : undefined;
    return { tools: page, ...(next ? { nextCursor: next } : {}) };
  });
  return server;
}

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
