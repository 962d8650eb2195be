// Operability end to end against wrangler dev: a caller's W3C traceparent is continued through the
// session object into the model endpoint, the remote MCP server and a webhook delivery; the turn is
// exported as OpenTelemetry spans (OTLP/HTTP JSON) to a local receiver, turn → step → model and tool
// calls with tokens and cost; GET /v1/metrics counts it; GET /v1/health answers. The canary secrets
// planted here (API key, connector credential, webhook secret, OpenAI key, MCP token, trace-export
// header) are written to .state/canaries.txt; log-canaries.sh greps wrangler dev's whole log for them.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { appendFileSync, mkdirSync } from 'node:fs';
import { rest, createAccount, createWorkspace, addCredit, putSecret, ok, rawMcp, readTurn, ikey, uniq, BASE } from './helpers.mjs';
import { fakeOpenAI, fakeMcpServer } from './fakes.mjs';

const STATE = new URL('./.state/', import.meta.url).pathname;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const TRACE = `${uniq()}${uniq()}${uniq()}${uniq()}`; // 32 hex digits
const PARENT_SPAN = `${uniq()}${uniq()}`;

function plant(...canaries) {
  mkdirSync(STATE, { recursive: true });
  for (const c of canaries) appendFileSync(`${STATE}canaries.txt`, `${c}\n`);
}

/** A loopback receiver recording every request (an OTLP collector, a webhook endpoint). */
async function receiver() {
  const got = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString();
      let body = null;
      try { body = JSON.parse(text); } catch { /* kept as null */ }
      got.push({ method: req.method, url: req.url, headers: req.headers, body, text });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    base: `http://127.0.0.1:${server.address().port}`, got,
    close: () => new Promise((r) => { server.closeAllConnections?.(); server.close(() => r()); }),
  };
}

async function until(what, check, ms = 30_000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

const attr = (span, key) => span.attributes.find((a) => a.key === key)?.value;

describe('logs, traces and metrics', () => {
  let acct; let ws; let openai; let mcpSrv; let otlp; let hooks; let agent;
  const openaiKey = `sk-canary-${uniq()}${uniq()}`;
  const mcpToken = `mcp-canary-${uniq()}${uniq()}`;
  const connectorSecret = `conn-canary-${uniq()}${uniq()}`;
  const otlpHeader = `otlp-canary-${uniq()}${uniq()}`;

  before(async () => {
    acct = await createAccount();
    ws = (await createWorkspace(acct.key)).slug;
    openai = await fakeOpenAI((body) => {
      const last = body.messages.at(-1);
      if (last.role === 'user') {
        return { content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'calc__multiply', arguments: '{"a":6,"b":7}' } }] };
      }
      return { content: `done: ${last.content}` };
    }, { usage: { prompt_tokens: 7, completion_tokens: 3 } });
    mcpSrv = await fakeMcpServer({ token: mcpToken });
    otlp = await receiver();
    hooks = await receiver();
    plant(acct.key, openaiKey, mcpToken, connectorSecret, otlpHeader);
    await putSecret(acct.key, 'OPENAI_BASE_URL', openai.baseUrl, ws);
    await putSecret(acct.key, 'OPENAI_API_KEY', openaiKey, ws);
    await putSecret(acct.key, 'CALC_TOKEN', mcpToken, ws);
    const con = await rest('POST', '/v1/connectors', { key: acct.key, body: { name: 'web', provider: 'vercel', env: 'prod', workspace: ws, credentials: { env: { VERCEL_TOKEN: connectorSecret } } } });
    assert.equal(con.status, 200, JSON.stringify(con.body));
    const r = await rest('POST', '/v1/agents', { key: acct.key, body: {
      name: `Traced ${uniq()}`, harness: 'openai', model: 'e2e-priced', workspace: ws,
      mcpServers: [{ name: 'calc', url: mcpSrv.url, bearer_secret: 'CALC_TOKEN' }],
    } });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    agent = r.body;
    await addCredit(ws, 100_000);
  });
  after(async () => { await openai?.close(); await mcpSrv?.close(); await otlp?.close(); await hooks?.close(); });

  test('trace export is configured through the outbound rule; its header is never shown', async () => {
    let r = await rest('PUT', '/v1/trace-export', { key: acct.key, body: { url: 'http://10.1.2.3/v1/traces', workspace: ws } });
    assert.equal(r.status, 400, JSON.stringify(r.body));
    r = await rest('PUT', '/v1/trace-export', { key: acct.key, body: { url: `${otlp.base}/v1/traces`, header_name: 'x-otlp-key', header_value: otlpHeader, workspace: ws } });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.header_name, 'x-otlp-key');
    const got = await rest('GET', `/v1/trace-export?workspace=${ws}`, { key: acct.key });
    assert.equal(got.body.url, `${otlp.base}/v1/traces`);
    assert.ok(!JSON.stringify(got.body).includes(otlpHeader));
  });

  test('a turn continues the caller\'s trace into the model and the MCP server, and is exported as spans', async () => {
    const traceparent = `00-${TRACE}-${PARENT_SPAN}-01`;
    const started = await rest('POST', '/v1/sessions', { key: acct.key, headers: { traceparent },
      body: { agent_id: agent.agent_id, message: 'multiply 6 by 7', idempotency_key: ikey('tr'), workspace: ws } });
    assert.equal(started.status, 201, JSON.stringify(started.body));
    assert.equal(started.headers.get('x-trace-id'), TRACE, 'the answer names the trace it joined');
    const client = rawMcp(acct.key);
    const turn = await readTurn(client.tool, { session_id: started.body.session.session_id, cursor: started.body.cursor, message_id: started.body.message_id, wait_seconds: 20 });
    assert.equal(turn.events.at(-1).type, 'turn_end', JSON.stringify(turn.events));

    const modelCalls = openai.requests.filter((r) => r.url === '/v1/chat/completions');
    assert.equal(modelCalls.length, 2);
    for (const c of modelCalls) assert.match(c.headers.traceparent ?? '', new RegExp(`^00-${TRACE}-[0-9a-f]{16}-01$`), 'the model call carries the trace');
    const spanIds = new Set(modelCalls.map((c) => c.headers.traceparent.split('-')[2]));
    assert.ok(!spanIds.has(PARENT_SPAN), 'each outbound call is a new span');

    assert.ok(mcpSrv.headers.length >= 2, 'the MCP server was listed and called');
    for (const h of mcpSrv.headers) assert.match(h.traceparent ?? '', new RegExp(`^00-${TRACE}-`), 'MCP calls carry the trace');

    const spans = await until('the turn span', () => {
      const all = otlp.got.filter((g) => g.url === '/v1/traces').flatMap((g) => g.body.resourceSpans[0].scopeSpans[0].spans);
      return all.some((s) => s.name === 'turn') ? all : null;
    });
    const exports = otlp.got.filter((g) => g.url === '/v1/traces');
    assert.ok(exports.every((g) => g.headers['x-otlp-key'] === otlpHeader && g.headers['content-type'] === 'application/json'));
    assert.ok(spans.every((s) => s.traceId === TRACE), JSON.stringify(spans.map((s) => s.traceId)));
    const turnSpan = spans.find((s) => s.name === 'turn');
    assert.match(turnSpan.parentSpanId ?? '', /^[0-9a-f]{16}$/, 'the turn hangs under the request that started it');
    const steps = spans.filter((s) => s.name.startsWith('step '));
    assert.ok(steps.length >= 1 && steps.every((s) => s.parentSpanId === turnSpan.spanId));
    const chats = spans.filter((s) => s.name === 'chat e2e-priced');
    assert.equal(chats.length, 2);
    assert.ok(chats.every((c) => steps.some((s) => s.spanId === c.parentSpanId)));
    assert.deepEqual(attr(chats[0], 'gen_ai.usage.input_tokens'), { intValue: '7' });
    const tool = spans.find((s) => s.name === 'tool calc__multiply');
    assert.ok(tool, `a tool span: ${spans.map((s) => s.name)}`);
    assert.deepEqual(attr(turnSpan, 'gen_ai.usage.input_tokens'), { intValue: '14' });
    assert.deepEqual(attr(turnSpan, 'agentsky.cost_cents'), { intValue: '26' }, '2 calls × (7 + 3×2) cents');
    assert.ok(Number(turnSpan.endTimeUnixNano) >= Number(turnSpan.startTimeUnixNano));
    for (const e of exports) assert.ok(!e.text.includes(openaiKey) && !e.text.includes(mcpToken), 'no secret in a span');

    const m = await rest('GET', `/v1/metrics?workspace=${ws}&window=hour`, { key: acct.key });
    assert.equal(m.status, 200, JSON.stringify(m.body));
    assert.equal(m.body.totals.turns, 1, JSON.stringify(m.body.totals));
    assert.equal(m.body.totals.spend_cents, 26);
    assert.ok(m.body.totals.calls >= 3);
    const day = await rest('GET', `/v1/metrics?workspace=${ws}&window=day`, { key: acct.key });
    assert.equal(day.body.series.length, 96);
    assert.equal(day.body.series.reduce((n, p) => n + p.turns, 0), 1, 'the turn is in one of the day\'s 15-minute points');
    assert.ok(day.body.series.every((p) => p.t_ms % (15 * 60_000) === 0));
    const row = m.body.agents.find((a) => a.agent_id === agent.agent_id);
    assert.equal(row?.turns, 1, JSON.stringify(m.body.agents));
  });

  test('a webhook delivery continues the trace of the request that caused it', async () => {
    const made = await rest('POST', '/v1/webhooks', { key: acct.key, body: { url: `${hooks.base}/hook`, events: ['request.opened'], workspace: ws } });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    plant(made.body.secret);
    const trace = `${uniq()}${uniq()}${uniq()}${uniq()}`;
    const sent = await rest('POST', `/v1/webhooks/${made.body.webhook.webhook_id}/test`, { key: acct.key, headers: { traceparent: `00-${trace}-${PARENT_SPAN}-01` }, body: { workspace: ws } });
    assert.ok([200, 201].includes(sent.status), JSON.stringify(sent.body));
    const got = await until('the test delivery', () => hooks.got.find((g) => g.url === '/hook'));
    assert.match(got.headers.traceparent ?? '', new RegExp(`^00-${trace}-[0-9a-f]{16}-01$`));
  });

  test('MCP calls may carry the trace in _meta; health says each service answers', async () => {
    const trace = `${uniq()}${uniq()}${uniq()}${uniq()}`;
    const res = await fetch(`${BASE}/v1/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acct.key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_agents', arguments: { workspace: ws }, _meta: { traceparent: `00-${trace}-${PARENT_SPAN}-01` } } }),
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-trace-id'), trace);
    const h = await rest('GET', '/v1/health');
    assert.equal(h.status, 200, JSON.stringify(h.body));
    assert.deepEqual(h.body.checks, { d1: { ok: true }, session_object: { ok: true }, r2: { ok: true }, queue: { ok: true } });
    assert.deepEqual(Object.keys(h.body).sort(), ['checks', 'name', 'ok', 'version']);
  });
});
