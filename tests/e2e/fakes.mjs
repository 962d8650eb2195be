// Loopback stand-ins the openai harness talks to, started by the tests themselves:
// - a scripted OpenAI-compatible chat-completions server (node:http), and
// - a remote MCP server (the official TypeScript SDK's McpServer over a stateless
//   StreamableHTTPServerTransport), declared in an agent's `mcpServers`.
// Both record every request, so the tests can assert what the Worker sent.
import http from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

function listen(server) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server.address().port));
  });
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString()));
    req.on('error', reject);
  });
}

/**
 * A fake OpenAI-compatible endpoint. `script(body, index)` gets each parsed request body and returns the
 * assistant `message` to answer with (or `{ status, body }` to answer an HTTP error). Every answer
 * carries `usage` = `usage` (prompt/completion tokens). Serves POST {base}/chat/completions, base = /v1.
 */
export async function fakeOpenAI(script, { usage = { prompt_tokens: 7, completion_tokens: 3 } } = {}) {
  const requests = [];
  const server = http.createServer(async (req, res) => {
    const text = await readBody(req);
    let body = null;
    try { body = JSON.parse(text); } catch { /* recorded as null */ }
    requests.push({ method: req.method, url: req.url, headers: req.headers, body });
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions' || !body) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}` } }));
      return;
    }
    let answer;
    try { answer = await script(body, requests.length - 1); } catch (e) { answer = { status: 500, body: { error: { message: String(e) } } }; }
    if (answer?.status) {
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer.body));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({
      id: `chatcmpl-${requests.length}`, object: 'chat.completion', created: Math.floor(Date.now() / 1000),
      model: body.model,
      choices: [{ index: 0, message: { role: 'assistant', ...answer }, finish_reason: answer.tool_calls ? 'tool_calls' : 'stop' }],
      usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
    }));
  });
  const port = await listen(server);
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`, requests,
    close: () => new Promise((r) => { server.closeAllConnections?.(); server.close(() => r()); }),
  };
}

/**
 * A remote MCP server with one tool, `multiply {a, b}` → the product as text, over Streamable HTTP in
 * stateless mode (a new server and transport per request, no session ids). Requires `Authorization:
 * Bearer <token>` when `token` is given. Records each JSON-RPC method it was sent and each tool call.
 */
export async function fakeMcpServer({ token } = {}) {
  const methods = []; const calls = []; const auth = [];
  const build = () => {
    const server = new McpServer({ name: 'e2e-calc', version: '1.0.0' });
    server.registerTool('multiply', {
      description: 'Multiply two numbers and return the product.',
      inputSchema: { a: z.number(), b: z.number() },
    }, async ({ a, b }) => {
      calls.push({ a, b });
      return { content: [{ type: 'text', text: `product=${a * b}` }] };
    });
    return server;
  };
  const httpServer = http.createServer(async (req, res) => {
    auth.push(req.headers.authorization ?? null);
    if (token && req.headers.authorization !== `Bearer ${token}`) {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'bad token' }));
      return;
    }
    if (req.method !== 'POST') { res.writeHead(405).end(); return; }
    const body = JSON.parse(await readBody(req));
    for (const m of [body].flat()) methods.push(m.method);
    const server = build();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => { transport.close(); server.close(); });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  });
  const port = await listen(httpServer);
  return {
    url: `http://127.0.0.1:${port}/mcp`, methods, calls, auth,
    close: () => new Promise((r) => { httpServer.closeAllConnections?.(); httpServer.close(() => r()); }),
  };
}
