//! The benchmark reference's MCP server, shared by its Node shell (reference-server.mjs) and its
//! workerd shell (reference-worker.mjs): the official SDK's low-level `Server` with a loose
//! `tools/list` schema that keeps `params.filter`, the same filter semantics and page size as
//! mcp-sieve, and an offset cursor.
import { z } from 'zod';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { compile } from './filters.mjs';

// The stock ListToolsRequestSchema strips unknown params such as `filter`.
const LooseListTools = z.object({
  method: z.literal('tools/list'),
  params: z.object({ filter: z.any().optional(), cursor: z.string().optional() }).passthrough().optional(),
});

/** A factory of SDK servers over catalog document `doc` (one server per session). */
export function referenceServers(doc, options = {}) {
  const catalog = compile(doc);
  const pageSize = doc.options?.pageSize ?? 50;
  return () => {
    const server = new Server({ name: 'reference', version: '1' }, { capabilities: { tools: { listChanged: true } }, ...options });
    server.setRequestHandler(LooseListTools, (req) => {
      const matched = catalog.select(req.params?.filter ?? {});
      const start = req.params?.cursor ? Number.parseInt(req.params.cursor, 10) : 0;
      const page = matched.slice(start, start + pageSize).map((t) => t.json);
      const next = start + pageSize < matched.length ? String(start + pageSize) : undefined;
      return { tools: page, ...(next ? { nextCursor: next } : {}) };
    });
    return server;
  };
}
