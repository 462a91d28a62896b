//! The benchmark's floor: a Worker that does no MCP work at all. It reads the request and answers
//! every POST with the same empty `tools/list` result, so its throughput under `wrangler dev` is
//! the most any Worker can reach there on this machine (scripts/bench-load.sh, era `floor`).
const BODY = '{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}';

export default {
  async fetch(request) {
    await request.arrayBuffer();
    return new Response(BODY, { headers: { 'Content-Type': 'application/json' } });
  },
};
