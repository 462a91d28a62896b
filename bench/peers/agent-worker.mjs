//! Edge peer of the load benchmark (scripts/bench-load.sh), with sessions: Cloudflare `agents`'
//! `McpAgent`, one SQLite-backed Durable Object per 2025-11-25 session (binding MCP_OBJECT),
//! serving an official MCP SDK `Server` (McpAgent accepts SDK v1 servers only) over the bench
//! catalog (the module `bench-catalog`, inlined by esbuild) with the same filter semantics and
//! page size as mcp-sieve (../filters.mjs).
import { McpAgent } from 'agents/mcp';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { z } from 'zod';
import doc from 'bench-catalog';
import { lister } from '../filters.mjs';

const list = lister(doc);
// The SDK's stock ListToolsRequestSchema strips unknown params such as `filter`.
const LooseListTools = z.object({
  method: z.literal('tools/list'),
  params: z.looseObject({ filter: z.any().optional(), cursor: z.string().optional() }).optional(),
});

export class ReferenceAgent extends McpAgent {
  server = (() => {
    const server = new Server({ name: 'reference-agent', version: '1' }, { capabilities: { tools: { listChanged: true } } });
    server.setRequestHandler(LooseListTools, (req) => list(req.params));
    return server;
  })();

  async init() {}
}

export default ReferenceAgent.serve('/mcp', { binding: 'MCP_OBJECT' });
