//! The benchmark reference's MCP server in Node (reference-server.mjs; the Cloudflare peers are
//! in bench/peers/): the official SDK's low-level `Server` with a loose
//! `tools/list` schema that keeps `params.filter`, the same filter semantics and page size as
//! mcp-sieve, and an offset cursor.
import { z } from 'zod';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { lister } from './filters.mjs';

// The stock ListToolsRequestSchema strips unknown params such as `filter`.
const LooseListTools = z.object({
  method: z.literal('tools/list'),
  params: z.object({ filter: z.any().optional(), cursor: z.string().optional() }).passthrough().optional(),
});

/** A factory of SDK servers over catalog document `doc` (one server per session). */
export function referenceServers(doc, options = {}) {
  const list = lister(doc);
  return () => {
    const server = new Server({ name: 'reference', version: '1' }, { capabilities: { tools: { listChanged: true } }, ...options });
    server.setRequestHandler(LooseListTools, (req) => list(req.params));
    return server;
  };
}
