//! Edge peer of the load benchmark (scripts/bench-load.sh), stateless: the official MCP SDK v2
//! server (`@modelcontextprotocol/server`) behind Cloudflare `agents`' `createMcpHandler`
//! (`agents/mcp/server`), a new SDK `Server` per request as that handler requires, serving the
//! bench catalog (the module `bench-catalog`, inlined by esbuild) with the same filter semantics
//! and page size as mcp-sieve (../filters.mjs). It answers the 2026-07-28 era (the SDK's modern
//! path) and, through agents' legacy lane, 2025-11-25 requests without a session.
import { createMcpHandler } from 'agents/mcp/server';
import { Server } from '@modelcontextprotocol/server';
import { z } from 'zod';
import doc from 'bench-catalog';
import { lister } from '../filters.mjs';

const list = lister(doc);
// The SDK v2's own `tools/list` schema strips unknown params such as `filter`; the three-argument
// registration with a loose params schema keeps them.
const LooseParams = z.looseObject({ filter: z.any().optional(), cursor: z.string().optional() });

function newServer() {
  const server = new Server({ name: 'reference-v2', version: '1' }, { capabilities: { tools: { listChanged: true } } });
  server.setRequestHandler('tools/list', { params: LooseParams }, (params) => list(params));
  return server;
}

const handler = createMcpHandler(newServer, { route: '/mcp' });

export default {
  fetch: (request, env, ctx) => handler(request, env, ctx),
};
