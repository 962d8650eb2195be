// The approvals view as an MCP App (the `io.modelcontextprotocol/ui` extension). Over MCP: `list_requests`
// names `ui://agentsky/approvals` in its `_meta.ui.resourceUri`, `resources/list` lists it and
// `resources/read` gives its HTML as `text/html;profile=mcp-app` with its CSP (no domains). Then in headless
// Chromium, a test host page does what a client that renders MCP Apps does: it frames the HTML in a
// sandboxed iframe (`allow-scripts` only, under the CSP the spec builds from the declared domains), speaks
// the bridge over postMessage (answers `ui/initialize`, sends `tool-input` and `tool-result` with the real
// `list_requests` result) and passes the view's `tools/call` to the server. Clicking the view's buttons
// answers an agent's waiting ask_user (a decision, a plan) and request_access. Screenshots land in
// tests/e2e/.state/screenshots/mcp-app-*.png.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { BASE, createAccount, createAgent, rest, ok, rawMcp, ikey, uniq, agentTool } from './helpers.mjs';
import { SHOTS, launch } from './browser.mjs';

const APP = 'ui://agentsky/approvals';
const MIME = 'text/html;profile=mcp-app';

/** One JSON-RPC message to /v1/mcp with `key`, answered as the whole response ({result} or {error}). */
async function mcpMessage(key, method, params) {
  const res = await fetch(`${BASE}/v1/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  assert.equal(res.status, 200, `${method} -> HTTP ${res.status}`);
  const { result, error } = await res.json();
  return error ? { error } : { result };
}


/** The CSP a host builds from a view's declared domains (the spec's construction, verbatim in effect). */
function cspFor(csp = {}) {
  const res = (csp.resourceDomains ?? []).join(' ');
  const connect = (csp.connectDomains ?? []).join(' ');
  return [
    "default-src 'none'", `script-src 'self' 'unsafe-inline' ${res}`, `style-src 'self' 'unsafe-inline' ${res}`,
    `connect-src 'self' ${connect}`, `img-src 'self' data: ${res}`, `font-src 'self' ${res}`,
    `media-src 'self' data: ${res}`, `frame-src ${(csp.frameDomains ?? []).join(' ') || "'none'"}`, "object-src 'none'",
    `base-uri ${(csp.baseUriDomains ?? []).join(' ') || "'self'"}`,
  ].join('; ');
}

// The host: frames the view, answers its `ui/initialize`, then sends the tool's input and result; passes
// `tools/call` and `resources/read` to the server (through `mcpRpc`, the test's key); logs every message.
const HOST_PAGE = `<!DOCTYPE html><html><head><title>MCP Apps test host</title></head>
<body style="font-family: sans-serif; margin: 16px; background: #f4f4f5">
<p>Test host: <code>list_requests</code> rendered by its MCP App</p>
<iframe id="view" title="Open requests" sandbox="allow-scripts" style="width: 680px; height: 200px; border: 1px solid #bbb; background: #fff"></iframe>
<script>
window.hostLog = [];
window.startView = (html, tool, toolInput, toolResult) => {
  const frame = document.getElementById('view');
  window.addEventListener('message', async (e) => {
    if (e.source !== frame.contentWindow) return;
    const m = e.data;
    window.hostLog.push(m);
    const send = (msg) => frame.contentWindow.postMessage({ jsonrpc: '2.0', ...msg }, '*');
    switch (m.method) {
      case 'ui/initialize':
        return send({ id: m.id, result: {
          protocolVersion: '2026-01-26', hostInfo: { name: 'e2e-host', version: '1.0.0' },
          hostCapabilities: { serverTools: {}, serverResources: {}, logging: {} },
          hostContext: { toolInfo: { id: 1, tool }, theme: 'light', displayMode: 'inline', platform: 'web',
            containerDimensions: { width: 680, maxHeight: 2000 } },
        } });
      case 'ui/notifications/initialized':
        send({ method: 'ui/notifications/tool-input', params: { arguments: toolInput } });
        return send({ method: 'ui/notifications/tool-result', params: toolResult });
      case 'ui/notifications/size-changed':
        frame.style.height = Math.min(m.params.height + 2, 2000) + 'px';
        return;
      case 'tools/call':
      case 'resources/read':
        return send({ id: m.id, ...(await window.mcpRpc(m.method, m.params)) });
      default:
        if (m.id !== undefined && m.method) send({ id: m.id, error: { code: -32601, message: 'Method not found' } });
    }
  });
  frame.srcdoc = html;
};
</script></body></html>`;

describe('the approvals view as an MCP App', () => {
  let browser; let acct; let ws; let mcp;

  before(async () => {
    acct = await createAccount(`Ada ${uniq()}`);
    ws = acct.workspace.slug;
    mcp = rawMcp(acct.key);
    browser = await launch();
  });
  after(async () => { await browser?.close(); });

  test('list_requests names the view; resources/list lists it; resources/read gives its HTML and CSP', async () => {
    const tools = (await mcp.rpc('tools/list', {})).tools;
    const list = tools.find((t) => t.name === 'list_requests');
    assert.equal(list._meta?.ui?.resourceUri, APP, JSON.stringify(list._meta));
    assert.equal(list._meta['ui/resourceUri'], APP);
    // The buttons' tool stays callable by the view (no visibility that would hide it from apps).
    const answer = tools.find((t) => t.name === 'answer_request');
    assert.ok(answer && answer._meta?.ui?.visibility === undefined);
    const listed = (await mcp.rpc('resources/list', {})).resources.find((r) => r.uri === APP);
    assert.equal(listed?.mimeType, MIME, JSON.stringify(listed));
    const { contents } = await mcp.rpc('resources/read', { uri: APP });
    assert.equal(contents.length, 1);
    const [c] = contents;
    assert.equal(c.uri, APP);
    assert.equal(c.mimeType, MIME);
    assert.match(c.text, /^<!DOCTYPE html>/);
    assert.deepEqual(c._meta.ui.csp, { connectDomains: [], resourceDomains: [] });
    assert.equal(c._meta.ui.prefersBorder, true);
    assert.doesNotMatch(c.text, /<script[^>]+src=|<link[^>]+href=|@import|innerHTML/);
  });

  test('in a sandboxed frame under its CSP, the view answers requests through the host', { timeout: 120_000 }, async () => {
    const agent = await createAgent(acct.key, { name: 'Planner', workspace: ws });
    const s = ok(await mcp.tool('start_session', { agent_id: agent.agent_id, message: 'Ship the pricing page', idempotency_key: ikey(), workspace: ws }), 'start');
    const sid = s.session.session_id;
    const tok = await rest('POST', `/v1/sessions/${sid}/token`, { key: acct.key });
    assert.equal(tok.status, 201, JSON.stringify(tok.body));
    const token = tok.body.token;
    // Two asks wait in the agent's calls; the decision's prompt carries markup the view must show as text.
    const decided = agentTool(token, 'ask_user', { kind: 'decision', payload: { prompt: 'Which currency? <img src=x onerror="parent.pwned=1"><b>bold</b>', options: ['EUR', 'USD'] } });
    const planned = agentTool(token, 'ask_user', { kind: 'plan', payload: { summary: 'Add a pricing table', files: ['pricing.html'] } });
    const target = await rest('POST', '/v1/connectors', { key: acct.key, body: { name: 'web', provider: 'vercel', env: 'prod', credentials: { env: { VERCEL_TOKEN: 'e2e' } }, workspace: ws } });
    assert.equal(target.status, 200, JSON.stringify(target.body));
    const granted = agentTool(token, 'request_access', { target: 'web', scope: ['deploy'], reason: 'Deploy v2 to production' });
    let requests = [];
    for (let i = 0; i < 50 && requests.length < 3; i++) {
      requests = ok(await mcp.tool('list_requests', { workspace: ws }), 'list_requests').requests.filter((r) => r.session_id === sid);
      if (requests.length < 3) await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal(requests.length, 3, JSON.stringify(requests));

    // What the client got from the server for the tool call it shows the view beside.
    const toolInput = { workspace: ws };
    const toolResult = (await mcpMessage(acct.key, 'tools/call', { name: 'list_requests', arguments: toolInput })).result;
    assert.ok(toolResult?.structuredContent?.requests?.length >= 3, JSON.stringify(toolResult));
    const tool = (await mcp.rpc('tools/list', {})).tools.find((t) => t.name === 'list_requests');
    const [content] = (await mcp.rpc('resources/read', { uri: tool._meta.ui.resourceUri })).contents;
    const html = content.text.replace('<head>', `<head><meta http-equiv="Content-Security-Policy" content="${cspFor(content._meta.ui.csp)}">`);

    const page = await (await browser.newContext({ viewport: { width: 760, height: 900 } })).newPage();
    const problems = [];
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
    const calls = [];
    await page.exposeFunction('mcpRpc', async (method, params) => { calls.push({ method, params }); return mcpMessage(acct.key, method, params); });
    await page.setContent(HOST_PAGE);
    await page.evaluate(([h, t, i, r]) => window.startView(h, t, i, r), [html, tool, toolInput, toolResult]);
    const view = page.frameLocator('#view');

    const decision = view.locator('article[data-kind=decision]');
    await decision.waitFor({ timeout: 10_000 });
    // Request text is text: the markup shows literally and made no element.
    assert.ok((await decision.textContent()).includes('Which currency? <img src=x onerror="parent.pwned=1"><b>bold</b>'));
    assert.equal(await decision.locator('img, b').count(), 0);
    assert.equal(await view.locator('article').count(), requests.length);
    await page.screenshot({ path: `${SHOTS}mcp-app-01-requests.png`, fullPage: true });

    // The handshake went as the spec orders it.
    const log = await page.evaluate(() => window.hostLog.map((m) => m.method ?? `response ${m.id}`));
    assert.equal(log[0], 'ui/initialize');
    assert.ok(log.includes('ui/notifications/initialized'), JSON.stringify(log));

    await decision.getByRole('button', { name: 'USD' }).click();
    assert.deepEqual((await decided).resolution, { kind: 'decision', answer: 'USD' });
    await decision.locator('.outcome', { hasText: 'Answered: USD' }).waitFor({ timeout: 10_000 });
    assert.equal(await decision.getByRole('button').count(), 0, 'the answered card keeps no buttons');

    const plan = view.locator('article[data-kind=plan]');
    await plan.getByRole('textbox', { name: 'Note for the agent' }).fill('Not this week');
    await plan.getByRole('button', { name: 'Reject' }).click();
    assert.deepEqual((await planned).resolution, { kind: 'plan', answer: 'reject', note: 'Not this week' });
    await plan.locator('.outcome', { hasText: 'Answered: reject' }).waitFor({ timeout: 10_000 });

    // Access: the target, scopes and reason; approve once (an "always" grant is the console's).
    const access = view.locator('article[data-kind=access]');
    const text = await access.textContent();
    assert.ok(text.includes('web') && text.includes('prod') && text.includes('deploy') && text.includes('Deploy v2 to production'), text);
    assert.equal(await access.getByRole('button', { name: /always/i }).count(), 0);
    await access.getByRole('button', { name: 'Approve once' }).click();
    const grant = await granted;
    assert.equal(grant.status, 'active', JSON.stringify(grant));
    assert.ok(grant.expiresAt - Date.now() <= 60 * 60_000 + 5000, 'once: for the default hour');
    await access.locator('.outcome', { hasText: 'Answered: approve' }).waitFor({ timeout: 10_000 });

    // Each button was one tools/call of answer_request through the host.
    const word = { plan: 'reject', decision: 'USD', access: 'approve' };
    const answers = calls.filter((c) => c.params?.name === 'answer_request').map((c) => c.params.arguments);
    assert.deepEqual(answers.map((a) => [a.request_id, a.answer]).sort(), requests.map((r) => [r.request_id, word[r.kind]]).sort());
    await page.screenshot({ path: `${SHOTS}mcp-app-02-answered.png`, fullPage: true });

    // The server lists none of them open any more.
    const left = ok(await mcp.tool('list_requests', { workspace: ws }), 'list_requests').requests.filter((r) => r.session_id === sid);
    assert.deepEqual(left, []);

    // Refresh: list_requests again through the host, for the workspace of the tool's input.
    await view.getByRole('button', { name: 'Refresh' }).click();
    await view.getByText('No open requests.').waitFor({ timeout: 10_000 });
    const refreshed = calls.filter((c) => c.params?.name === 'list_requests');
    assert.deepEqual(refreshed.map((c) => c.params.arguments), [{ workspace: ws }]);
    await page.screenshot({ path: `${SHOTS}mcp-app-03-refreshed.png`, fullPage: true });

    assert.equal(await page.evaluate(() => window.pwned), undefined);
    assert.deepEqual(problems, [], 'no script error and no CSP violation in the host or the view');
  });
});
