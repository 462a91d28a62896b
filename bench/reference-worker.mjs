//! The benchmark reference in workerd: the same SDK server as reference-server.mjs behind the
//! SDK's web-standard Streamable HTTP transport, one transport per session kept in isolate
//! memory. scripts/bench-load.sh bundles it with esbuild, the catalog document inlined as
//! the module `bench-catalog`.
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import doc from 'bench-catalog';
import { referenceServers } from './reference-core.mjs';

// The SDK's default JSON Schema validator (Ajv) is never asked to compile here: no tool has an
// outputSchema the server validates.
const newServer = referenceServers(doc);
const transports = new Map();

export default {
  async fetch(request) {
    const sid = request.headers.get('mcp-session-id');
    let transport = sid ? transports.get(sid) : undefined;
    if (!transport) {
      if (sid) return new Response(null, { status: 404 });
      transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => crypto.randomUUID(),
        enableJsonResponse: true,
        onsessioninitialized: (id) => transports.set(id, transport),
      });
      await newServer().connect(transport);
    }
    return transport.handleRequest(request);
  },
};
