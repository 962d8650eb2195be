// Plain HTTP against the MCP endpoint and the key routes: what any client sees before a protocol
// library gets involved (status codes, WWW-Authenticate, revocation taking effect at once).
import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import { BASE, MCP_URL, rest, createAccount, createKey, createWorkspace, uniq } from './helpers.mjs';

const listTools = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };
const legacyHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

async function post(body, headers = {}) {
  return fetch(MCP_URL, { method: 'POST', headers: { ...legacyHeaders, ...headers }, body: JSON.stringify(body) });
}

describe('HTTP face', () => {
  let acct;
  before(async () => { acct = await createAccount(); });

  test('GET /v1/health answers 200', async () => {
    const r = await fetch(`${BASE}/v1/health`);
    assert.equal(r.status, 200);
  });

  test('no key: 401, WWW-Authenticate Bearer realm naming the resource metadata, JSON body', async () => {
    const r = await post(listTools);
    assert.equal(r.status, 401);
    const wa = r.headers.get('www-authenticate') ?? '';
    assert.match(wa, /^Bearer realm="[^"]+"/, `WWW-Authenticate: ${wa}`);
    // OAuth clients discover how to sign in from here (RFC 9728).
    assert.match(wa, /resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource[^"]*"/, `WWW-Authenticate: ${wa}`);
    assert.match(r.headers.get('content-type') ?? '', /application\/json/);
    const body = await r.json(); // a JSON-RPC error, so SDKs show its message
    assert.deepEqual([body.jsonrpc, body.id, body.error?.code, body.error?.data?.code], ['2.0', 1, -32001, 'unauthorized'],
      JSON.stringify(body));
    assert.match(body.error.message, /an API key is required/);
  });

  test('bad key: 401 with error="invalid_token"', async () => {
    const r = await post(listTools, { authorization: `Bearer ast_${'A'.repeat(43)}` });
    assert.equal(r.status, 401);
    const wa = r.headers.get('www-authenticate') ?? '';
    assert.match(wa, /^Bearer realm="[^"]+"/, `WWW-Authenticate: ${wa}`);
    assert.match(wa, /error="invalid_token"/, `WWW-Authenticate: ${wa}`);
    const body = await r.json();
    assert.deepEqual([body.jsonrpc, body.id, body.error?.code], ['2.0', 1, -32001], JSON.stringify(body));
    assert.match(body.error.message, /unknown or revoked API key/);
  });

  test('a body over 4 MiB: 413 as a JSON-RPC error on /v1/mcp, as the API error on REST', async () => {
    const huge = JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call',
      params: { name: 'help', arguments: { topic: 'x'.repeat(4 * 1024 * 1024) } } });
    const mcp = await fetch(MCP_URL, { method: 'POST', headers: { ...legacyHeaders, authorization: `Bearer ${acct.key}` }, body: huge });
    assert.equal(mcp.status, 413);
    const body = await mcp.json();
    assert.deepEqual([body.jsonrpc, body.id, body.error?.code, body.error?.data?.code], ['2.0', null, -32600, 'payload_too_large'],
      JSON.stringify(body));
    const r = await fetch(`${BASE}/v1/agents`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${acct.key}` }, body: huge });
    assert.equal(r.status, 413);
    assert.equal((await r.json()).error?.code, 'payload_too_large');
  });

  test('a good key answers tools/list over plain HTTP with one JSON body', async () => {
    const { key } = acct;
    const r = await post(listTools, { authorization: `Bearer ${key}` });
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /application\/json/);
    assert.equal(r.headers.get('mcp-session-id'), null, 'stateless: no Mcp-Session-Id');
    const body = await r.json();
    assert.equal(body.id, 1);
    assert.ok(body.result.tools.some((t) => t.name === 'list_agents'));
  });

  test('GET and DELETE on the MCP endpoint are 405 with Allow: POST', async () => {
    const { key } = acct;
    for (const method of ['GET', 'DELETE']) {
      const r = await fetch(MCP_URL, { method, headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' } });
      assert.equal(r.status, 405, `${method} /v1/mcp`);
      assert.match(r.headers.get('allow') ?? '', /POST/);
    }
  });

  test('OAuth discovery is offered: both metadata documents answer JSON', async () => {
    for (const p of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-authorization-server']) {
      const r = await fetch(`${BASE}${p}`);
      assert.equal(r.status, 200, p);
      assert.match(r.headers.get('content-type') ?? '', /application\/json/, p);
    }
  });

  test('keys list shows prefixes only, and a revoked key is refused at once', async () => {
    const a = acct;
    const k = await createKey(a.key, { scopes: ['read'] });
    assert.ok(k.key_id && k.prefix && k.key.startsWith(k.prefix), 'prefix is the start of the key');

    const list = await rest('GET', '/v1/keys', { key: a.key });
    assert.equal(list.status, 200);
    const text = JSON.stringify(list.body);
    assert.ok(text.includes(k.key_id), 'the new key is listed');
    assert.ok(!text.includes(k.key), 'the secret is never listed');

    const before = await post(listTools, { authorization: `Bearer ${k.key}` });
    assert.equal(before.status, 200, 'the key works before revocation');
    const del = await rest('DELETE', `/v1/keys/${k.key_id}`, { key: a.key });
    assert.ok(del.status === 200 || del.status === 204, `DELETE /v1/keys/{id} -> ${del.status}`);
    const after = await post(listTools, { authorization: `Bearer ${k.key}` });
    assert.equal(after.status, 401, 'a revoked key is refused');
  });

  test('the per-key limit (600 a minute, leased to the Worker in batches) holds, then 429 with Retry-After', async () => {
    const { key } = await createKey(acct.key, { scopes: ['read'] });
    const t0 = Date.now();
    let allowed = 0;
    let over;
    while (allowed < 1000) {
      const r = await rest('GET', '/v1/agents', { key });
      if (r.status !== 200) { over = r; break; }
      allowed++;
    }
    const seconds = (Date.now() - t0) / 1000;
    assert.ok(over, 'the limit was reached');
    assert.equal(over.status, 429, `after ${allowed}: ${over.status} ${JSON.stringify(over.body)}`);
    assert.equal(over.body.error.code, 'rate_limited');
    assert.ok(Number(over.headers.get('retry-after')) >= 1, `Retry-After: ${over.headers.get('retry-after')}`);
    // The burst of 600, plus what refilled meanwhile (10 a second); leasing never serves more.
    assert.ok(allowed >= 600 && allowed <= 600 + Math.ceil(seconds * 10) + 1, `${allowed} calls allowed in ${seconds} s`);
  });

  test('over REST a read key cannot write (403 insufficient_scope) and a write key can', async () => {
    const a = acct;
    const readKey = await createKey(a.key, { scopes: ['read'] });
    const agent = { name: `Echo ${uniq()}`, harness: 'echo', model: 'echo-1' };
    const denied = await rest('POST', '/v1/agents', { key: readKey.key, body: agent });
    assert.equal(denied.status, 403, JSON.stringify(denied.body));
    assert.equal(denied.body?.error?.code, 'insufficient_scope');
    const made = await rest('POST', '/v1/agents', { key: a.key, body: agent });
    assert.equal(made.status, 201, JSON.stringify(made.body));
  });

  test('over REST a workspace-locked key is refused another workspace (universe_mismatch)', async () => {
    const a = acct;
    const team = await createWorkspace(a.key);
    const locked = await createKey(a.key, { scopes: ['read', 'write'], workspace: a.workspace.slug });
    const agent = { name: `Echo ${uniq()}`, harness: 'echo', model: 'echo-1' };
    const mine = await rest('POST', '/v1/agents', { key: locked.key, body: { ...agent, workspace: a.workspace.slug } });
    assert.equal(mine.status, 201, JSON.stringify(mine.body));
    const other = await rest('POST', '/v1/agents', { key: locked.key, body: { ...agent, workspace: team.slug } });
    assert.equal(other.body?.error?.code, 'universe_mismatch', JSON.stringify(other.body));
    assert.equal(other.status, 403);
  });

  test('REST needs a key too, and answers in its own shape', async () => {
    const r = await rest('GET', '/v1/workspaces');
    assert.equal(r.status, 401);
    assert.match(r.headers.get('www-authenticate') ?? '', /^Bearer realm=/);
    assert.equal(r.body?.error?.code, 'unauthorized', JSON.stringify(r.body));
    assert.equal(r.body.jsonrpc, undefined);
  });
});
