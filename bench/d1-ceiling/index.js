// No body read, no auth, no MCP: `/` is a hello world, `/d1` the same after one D1 round trip.
export default {
  async fetch(request, env) {
    const result = new URL(request.url).pathname === "/d1" ? await env.DB.prepare("SELECT 1 AS one").first() : {};
    return new Response(JSON.stringify({ jsonrpc: "2.0", id: 1, result }), {
      headers: { "content-type": "application/json" },
    });
  },
};
