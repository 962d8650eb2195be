// What a person does from a chat client, over the operator's MCP tools and the official TypeScript SDK v1
// client (issue 16, items 4 and 5): a new account creates an agent, starts it by `@handle` and reads the
// result over MCP alone; a handle names an agent wherever an agent id is taken (an unknown one is a
// not_found naming it); a hand-off's session gets a short title; decisions, memory and grants are tools
// with truthful annotations.
import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  BASE, MCP_URL, rest, createAccount, createWorkspace, ok, toolError, readTurn, ikey, texts, checked, uniq,
} from './helpers.mjs';

async function sdkClient(key) {
  const client = new Client({ name: 'agentsky-e2e-operator', version: '0.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(MCP_URL), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  }));
  checked(client, 'TS SDK v1');
  const tool = (name, args = {}) => client.callTool({ name, arguments: args }, undefined, { timeout: 120_000 });
  return { client, tool };
}

/** A session tool call on /v1/session/mcp with a session token (the agent's side). */
async function agentTool(token, name, args) {
  const res = await fetch(`${BASE}/v1/session/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`, 'content-type': 'application/json',
      accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
  });
  const body = await res.json();
  assert.equal(body.result?.isError, false, `${name}: ${JSON.stringify(body)}`);
  return JSON.parse(body.result.content[0].text);
}

const handle = (what) => `${what}-${uniq()}`;

describe('operator tools a chat client uses (TypeScript SDK v1 client)', () => {
  let acct;
  before(async () => { acct = await createAccount(); });

  test('a new account creates an agent, starts it by @handle and reads the result, over MCP alone', async () => {
    const fresh = await createAccount();
    const { client, tool } = await sdkClient(fresh.key);
    try {
      const listed = await client.listTools();
      const annotations = Object.fromEntries(listed.tools.map((t) => [t.name, t.annotations]));
      const a = annotations.create_agent;
      assert.deepEqual([a.readOnlyHint, a.destructiveHint, a.idempotentHint], [false, false, false]);
      // Reading and changing an agent are done seldom: one `manage` entry in the list, not two tools.
      const managed = listed.tools.find((t) => t.name === 'manage').inputSchema.properties.operation.enum;
      assert.ok(!annotations.get_agent && managed.includes('get_agent') && managed.includes('update_agent'), managed.join());
      assert.deepEqual(ok(await tool('list_agents'), 'list_agents').agents, [], 'a new account has no agents');

      const h = handle('echo');
      const agent = ok(await tool('create_agent', { name: 'Echo', handle: h, harness: 'echo', model: 'echo-1', description: 'says it back' }), 'create_agent');
      assert.match(agent.agent_id, /^ag_/);
      const agents = ok(await tool('list_agents'), 'list_agents').agents;
      assert.deepEqual(agents.map((a) => [a.id, a.handle]), [[agent.agent_id, `@${h}`]], 'list_agents shows the handle');
      const catalog = ok(await tool('search_catalog', { query: 'echo' }), 'search_catalog').agents;
      assert.ok(catalog.some((a) => a.handle === `@${h}`), JSON.stringify(catalog));

      const s = ok(await tool('start_session', { agent_id: `@${h}`, message: 'hello over MCP', idempotency_key: ikey('new') }), 'start_session');
      const turn = await readTurn(tool, { session_id: s.session.session_id, cursor: s.cursor, message_id: s.message_id });
      assert.deepEqual(texts(turn.events), ['echo: hello over MCP']);
      assert.equal(ok(await tool('collect_result', { session_id: s.session.session_id }), 'collect_result').last_reply, 'echo: hello over MCP');

      const manage = (operation, args) => tool('manage', { operation, arguments: args });
      const changed = ok(await manage('update_agent', { agent_id: `@${h}`, description: 'repeats you' }), 'update_agent');
      assert.equal(changed.description, 'repeats you');
      assert.equal(changed.name, 'Echo', 'fields left out keep their value');
      assert.equal(ok(await manage('get_agent', { agent_id: `@${h}` }), 'get_agent').description, 'repeats you');
      // Its own name still answers, for clients that learned it before it moved under `manage`.
      assert.equal(ok(await tool('get_agent', { agent_id: `@${h}` }), 'get_agent by name').description, 'repeats you');
    } finally {
      await client.close();
    }
  });

  test('@handle names an agent wherever an agent id is taken; an unknown one is a not_found naming it', async () => {
    const ws = await createWorkspace(acct.key);
    const { client, tool } = await sdkClient(acct.key);
    try {
      const h = handle('named');
      const named = ok(await tool('create_agent', { name: 'Named', handle: h, harness: 'echo', model: 'm', workspace: ws.slug }), 'create_agent');
      const other = ok(await tool('create_agent', { name: 'Other', harness: 'echo', model: 'm', workspace: ws.slug }), 'create_agent 2');
      for (const a of [named.agent_id, other.agent_id]) {
        ok(await tool('start_session', { agent_id: a, message: 'hi', idempotency_key: ikey(), workspace: ws.slug }), 'start');
      }
      const byHandle = ok(await tool('list_sessions', { agent_id: `@${h}`, workspace: ws.slug }), 'list_sessions @handle').sessions;
      assert.deepEqual(byHandle.map((x) => x.agent_id), [named.agent_id]);
      const byId = ok(await tool('list_sessions', { agent_id: named.agent_id, workspace: ws.slug }), 'list_sessions id').sessions;
      assert.deepEqual(byId.map((x) => x.session_id), byHandle.map((x) => x.session_id));
      const nobody = `@nobody-${uniq()}`;
      for (const name of ['list_sessions', 'get_agent', 'update_agent']) {
        const e = toolError(await tool(name, { agent_id: nobody }), name);
        assert.equal(e.code, 'not_found', `${name}: ${JSON.stringify(e)}`);
        assert.ok(e.message.includes(nobody), `${name} names the handle: ${e.message}`);
      }
      const r = ok(await tool('create_routine', { name: 'r', agent_id: `@${h}`, message: 'm', workspace: ws.slug }), 'create_routine');
      assert.equal(r.agent_id, named.agent_id);
      // REST takes it in the path too.
      const got = await rest('GET', `/v1/agents/@${h}`, { key: acct.key });
      assert.equal(got.status, 200, JSON.stringify(got.body));
      assert.equal(got.body.agent_id, named.agent_id);
    } finally {
      await client.close();
    }
  });

  test("a hand-off's new session gets a short title, not the whole brief", async () => {
    const ws = await createWorkspace(acct.key);
    const { client, tool } = await sdkClient(acct.key);
    try {
      const [a, b] = [handle('first'), handle('second')];
      for (const h of [a, b]) ok(await tool('create_agent', { name: h, handle: h, harness: 'echo', model: 'm', workspace: ws.slug }), 'create_agent');
      const s = ok(await tool('start_session', { agent_id: `@${a}`, message: 'Fix the login page', idempotency_key: ikey(), workspace: ws.slug }), 'start');
      await readTurn(tool, { session_id: s.session.session_id, cursor: s.cursor, message_id: s.message_id });
      const note = 'Please finish the form validation and the error messages, then run every test\nand report back';
      const h1 = ok(await tool('hand_off_session', { session_id: s.session.session_id, agent_id: `@${b}`, idempotency_key: ikey() }), 'hand off');
      const h2 = ok(await tool('hand_off_session', { session_id: s.session.session_id, agent_id: `@${b}`, message: note, idempotency_key: ikey() }), 'hand off 2');
      const title = async (h) => ok(await tool('get_session', { session_id: h.target_session.session.session_id }), 'get_session').title;
      assert.equal(await title(h1), 'Fix the login page', 'the title of the session it continues');
      assert.equal(await title(h2), 'Please finish the form validation and the error messages,…');
    } finally {
      await client.close();
    }
  });

  test('decisions, memory and grants: recorded, saved, listed, deleted and revoked as tools', async () => {
    const ws = await createWorkspace(acct.key);
    const { client, tool } = await sdkClient(acct.key);
    try {
      const listed = await client.listTools();
      const managed = listed.tools.find((t) => t.name === 'manage').inputSchema.properties.operation.enum;
      for (const n of ['record_session', 'save_memory', 'list_memory', 'delete_memory', 'list_grants', 'revoke_grant']) {
        assert.ok(managed.includes(n), `${n} is reached through manage`);
      }
      const h = handle('rec');
      ok(await tool('create_agent', { name: 'Rec', handle: h, harness: 'echo', model: 'm', workspace: ws.slug }), 'create_agent');
      const s = ok(await tool('start_session', { agent_id: `@${h}`, message: 'ship it', idempotency_key: ikey(), workspace: ws.slug }), 'start');
      const sid = s.session.session_id;
      await readTurn(tool, { session_id: sid, cursor: s.cursor, message_id: s.message_id });

      const rec = ok(await tool('record_session', { session_id: sid, name: 'adopted', note: 'it works', idempotency_key: ikey('rec') }), 'record_session');
      assert.equal(rec.record.name, 'adopted');
      assert.ok(JSON.stringify(ok(await tool('read_session_record', { session_id: sid }), 'read_session_record')).includes('adopted'));

      const text = `Ada prefers short answers ${uniq()}`;
      const saved = ok(await tool('save_memory', { text, workspace: ws.slug }), 'save_memory');
      assert.deepEqual(ok(await tool('list_memory', { workspace: ws.slug }), 'list_memory').entries.map((e) => e.text), [text]);
      assert.equal(ok(await tool('delete_memory', { memory_id: saved.memory_id }), 'delete_memory').deleted, true);
      assert.deepEqual(ok(await tool('list_memory', { workspace: ws.slug }), 'list_memory after').entries, []);

      // A grant a policy gave the session's agent, listed and revoked from the chat client.
      const con = await rest('POST', '/v1/connectors', { key: acct.key, body: { name: 'web', provider: 'vercel', env: 'prod', workspace: ws.slug, credentials: { env: { VERCEL_TOKEN: 'vt-e2e' } } } });
      assert.equal(con.status, 200, JSON.stringify(con.body));
      const pol = await rest('PUT', '/v1/policies', { key: acct.key, body: { workspace: ws.slug, scope: 'read', decision: 'allow' } });
      assert.equal(pol.status, 200, JSON.stringify(pol.body));
      const t = await rest('POST', `/v1/sessions/${sid}/token`, { key: acct.key });
      assert.equal(t.status, 201, JSON.stringify(t.body));
      const granted = await agentTool(t.body.token, 'request_access', { target: 'web', scope: ['read'], reason: 'read the logs' });
      assert.equal(granted.status, 'active', JSON.stringify(granted));
      const grants = ok(await tool('list_grants', { workspace: ws.slug }), 'list_grants').grants;
      assert.deepEqual(grants.map((g) => g.grant_id), [granted.grantId]);
      assert.equal(ok(await tool('revoke_grant', { grant_id: granted.grantId, workspace: ws.slug }), 'revoke_grant').revoked, true);
      assert.equal((await agentTool(t.body.token, 'check_grant', { grantId: granted.grantId })).status, 'denied');
      assert.deepEqual(ok(await tool('list_grants', { workspace: ws.slug }), 'list_grants after').grants, []);
    } finally {
      await client.close();
    }
  });
});
