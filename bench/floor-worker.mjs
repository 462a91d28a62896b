//! The load benchmark's floors (scripts/bench-load.sh): a JavaScript Worker that does no MCP
//! work. It reads the request body and answers a fixed `tools/list` page: the Worker's own answer
//! to a typical filter, captured before the run (the modules `bench-page` for the stateless era
//! and `bench-page-session` for the session era, inlined by esbuild), so a floor response has
//! the same size as a real one of its era.
//!   POST /mcp     answered by the Worker itself: the floor of the stateless 2026-07-28 era;
//!   POST /do/mcp  forwarded to a no-op Durable Object named by the Mcp-Session-Id header, which
//!                 answers the page: the floor of the 2025-11-25 session era (one object per
//!                 session, as the mcp-sieve Worker keeps them).
import { DurableObject } from 'cloudflare:workers';
import PAGE from 'bench-page';
import SESSION_PAGE from 'bench-page-session';

const HEADERS = { 'Content-Type': 'application/json' };

export class FloorObject extends DurableObject {
  async fetch(request) {
    await request.arrayBuffer();
    return new Response(SESSION_PAGE, { headers: HEADERS });
  }
}

export default {
  async fetch(request, env) {
    const { pathname } = new URL(request.url);
    if (pathname === '/do/mcp') {
      const sid = request.headers.get('mcp-session-id');
      if (!sid) return new Response('Mcp-Session-Id required', { status: 400 });
      return env.FLOOR.get(env.FLOOR.idFromName(sid)).fetch(request);
    }
    await request.arrayBuffer();
    return new Response(PAGE, { headers: HEADERS });
  },
};
