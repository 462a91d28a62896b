//! The gateway benchmark's floor (scripts/bench-gateway.sh): a JavaScript Worker that does no MCP
//! work and only proxies. It reads the POST's body, sends it with the request's headers to the
//! upstream named by the variable UPSTREAM (the same server the mcp-sieve Worker gateway fronts),
//! and answers the upstream's response as it comes. What is left above this floor in the gateway
//! is its MCP work: parsing, routing, renaming and the upstream conversation's own headers.
export default {
  async fetch(request, env) {
    const body = await request.arrayBuffer();
    const answer = await fetch(env.UPSTREAM, { method: 'POST', headers: request.headers, body });
    return new Response(answer.body, answer);
  },
};
