// The official TypeScript SDK v1 client (@modelcontextprotocol/sdk 1.32.2, protocol 2025-era
// `initialize`), over Streamable HTTP with the bearer key in requestInit headers: what Claude Code,
// Cursor and most hosts built on the v1 SDK do.
import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  MCP_URL, CORE_TOOLS, WRITE_TOOL, writeToolArgs, uniq,
  createAccount, createKey, createWorkspace, createAgent, ok, toolErrorCode, checked,
} from './helpers.mjs';

async function connect(key, headers = {}) {
  const client = new Client({ name: 'agentsky-e2e-sdk-v1', version: '0.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(MCP_URL), {
    requestInit: { headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers } },
  });
  await client.connect(transport);
  return checked(client, 'TS SDK v1');
}

async function withClient(key, fn) {
  const client = await connect(key);
  try { return await fn(client); } finally { await client.close(); }
}

describe('TypeScript SDK v1 client', () => {
  let acct; let other;
  before(async () => { acct = await createAccount(); other = await createAccount(); });

  test('connects, negotiates a 2025 protocol version and gets instructions', async () => {
    await withClient(acct.key, async (c) => {
      const info = c.getServerVersion();
      assert.ok(info?.name, 'server names itself in initialize');
      assert.ok(c.getServerCapabilities()?.tools, 'server declares the tools capability');
      assert.ok((c.getInstructions() ?? '').length > 40, 'server gives instructions for the model');
      await c.ping();
    });
  });

  test('lists the core tools with schemas and truthful read-only annotations', async () => {
    await withClient(acct.key, async (c) => {
      const { tools } = await c.listTools();
      const byName = new Map(tools.map((t) => [t.name, t]));
      for (const name of CORE_TOOLS) {
        const t = byName.get(name);
        assert.ok(t, `tools/list has ${name}`);
        assert.ok(t.description && t.description.length > 10, `${name} has a description`);
        assert.equal(t.inputSchema?.type, 'object', `${name} inputSchema is an object schema`);
      }
      for (const name of ['list_workspaces', 'list_agents', 'describe_workspace', 'help']) {
        assert.equal(byName.get(name).annotations?.readOnlyHint, true, `${name} is read-only`);
      }
      assert.equal(new Set(tools.map((t) => t.name)).size, tools.length, 'tool names are unique');
    });
  });

  test('list_workspaces shows the personal workspace as current', async () => {
    await withClient(acct.key, async (c) => {
      const res = ok(await c.callTool({ name: 'list_workspaces', arguments: {} }), 'list_workspaces');
      assert.ok(Array.isArray(res.workspaces));
      const mine = res.workspaces.find((w) => w.slug === acct.workspace.slug);
      assert.ok(mine, `personal workspace ${acct.workspace.slug} listed: ${JSON.stringify(res)}`);
      assert.equal(mine.is_personal, true);
      assert.equal(mine.is_current, true);
      assert.equal(mine.role, 'owner');
      assert.equal(typeof mine.name, 'string');
      assert.equal(res.workspaces.filter((w) => w.is_current).length, 1, 'exactly one current workspace');
    });
  });

  test('an agent created over REST shows up in list_agents', async () => {
    const ws = await createWorkspace(acct.key);
    await withClient(acct.key, async (c) => {
      const args = { workspace: ws.slug };
      const before = ok(await c.callTool({ name: 'list_agents', arguments: args }), 'list_agents');
      assert.deepEqual(before.agents, [], 'a new workspace has no agents');

      const agent = await createAgent(acct.key, { name: 'Echo Ada', model: 'echo-1', workspace: ws.slug });
      const after = ok(await c.callTool({ name: 'list_agents', arguments: args }), 'list_agents');
      assert.equal(after.agents.length, 1);
      const [listed] = after.agents;
      assert.equal(listed.id, agent.agent_id);
      assert.equal(listed.name, 'Echo Ada');
      assert.equal(listed.harness, 'echo');
      assert.equal(listed.model, 'echo-1');
      assert.equal(listed.session_count, 0);
    });
  });

  test('describe_workspace and help answer', async () => {
    await withClient(acct.key, async (c) => {
      const d = await c.callTool({ name: 'describe_workspace', arguments: {} });
      assert.notEqual(d.isError, true, JSON.stringify(d));
      assert.ok(d.content?.length > 0, 'describe_workspace has content');
      const h = await c.callTool({ name: 'help', arguments: {} });
      assert.notEqual(h.isError, true, JSON.stringify(h));
      assert.ok(JSON.stringify(h.content).length > 50, 'help lists its topics');
    });
  });

  test('an unknown tool is a protocol error, not a result', async () => {
    await withClient(acct.key, async (c) => {
      await assert.rejects(
        c.callTool({ name: `no_such_tool_${uniq()}`, arguments: {} }),
        (e) => e.code === -32602 || /-32602|unknown tool|not found/i.test(String(e)),
      );
    });
  });

  test('a bad key is refused with 401, and the client shows why', async () => {
    await assert.rejects(connect(`ast_${'x'.repeat(43)}`), (e) => {
      assert.ok(e instanceof StreamableHTTPError, `StreamableHTTPError, got ${e}`);
      assert.equal(e.code, 401);
      assert.match(e.message, /unknown or revoked API key/, `the server's message reaches the client: ${e.message}`);
      return true;
    });
  });

  test('no key is refused with 401, and the client shows why', async () => {
    await assert.rejects(connect(null), (e) => e instanceof StreamableHTTPError && e.code === 401
      && /an API key is required/.test(e.message));
  });

  test('help with no topic, with the workflow topic and with a group answers what its outputSchema says', async () => {
    // The SDK validates structuredContent against the listed outputSchema and refused these two before.
    await withClient(acct.key, async (c) => {
      await c.listTools();
      const all = ok(await c.callTool({ name: 'help', arguments: {} }), 'help');
      assert.ok(all.topics.some((t) => t.topic === 'workflow'), JSON.stringify(all.topics));
      assert.equal(all.operations, undefined, 'no topic, no operations');
      const workflow = ok(await c.callTool({ name: 'help', arguments: { topic: 'workflow' } }), 'help workflow');
      assert.deepEqual(workflow.operations, []);
      assert.match(workflow.steps, /start_session/);
      const sessions = ok(await c.callTool({ name: 'help', arguments: { topic: 'sessions' } }), 'help sessions');
      assert.ok(sessions.operations.some((o) => o.name === 'start_session'));
    });
  });

  test(`a read-only key calling a write tool (${WRITE_TOOL}) gets insufficient_scope`, async () => {
    const ws = await createWorkspace(acct.key);
    const agent = await createAgent(acct.key, { workspace: ws.slug });
    const readKey = await createKey(acct.key, { scopes: ['read'] });
    await withClient(readKey.key, async (c) => {
      // The read key can read ...
      const listed = ok(await c.callTool({ name: 'list_agents', arguments: { workspace: ws.slug } }), 'list_agents (read key)');
      assert.deepEqual(listed.agents.map((x) => x.id), [agent.agent_id]);
      // ... and cannot write.
      const res = await c.callTool({ name: WRITE_TOOL, arguments: writeToolArgs(agent.agent_id) });
      assert.equal(toolErrorCode(res, `${WRITE_TOOL} with a read key`), 'insufficient_scope');
    });
  });

  test('a key locked to workspace A gets universe_mismatch for workspace B', async () => {
    const a = acct;
    const team = await createWorkspace(a.key);
    const locked = await createKey(a.key, { scopes: ['read', 'write'], workspace: a.workspace.slug });

    // Control: the owner's unlocked key may use the other workspace.
    await withClient(a.key, async (c) => {
      ok(await c.callTool({ name: 'list_agents', arguments: { workspace: team.slug } }), 'unlocked key on B');
    });
    await withClient(locked.key, async (c) => {
      // Its own workspace works, named or not ...
      ok(await c.callTool({ name: 'list_agents', arguments: {} }), 'locked key, no slug');
      ok(await c.callTool({ name: 'list_agents', arguments: { workspace: a.workspace.slug } }), 'locked key on A');
      // ... any other slug does not.
      const res = await c.callTool({ name: 'list_agents', arguments: { workspace: team.slug } });
      assert.equal(toolErrorCode(res, 'locked key on B'), 'universe_mismatch');
    });
  });

  test('a slug the caller does not belong to is not_found', async () => {
    await withClient(acct.key, async (c) => {
      const res = await c.callTool({ name: 'list_agents', arguments: { workspace: other.workspace.slug } });
      assert.equal(toolErrorCode(res, "list_agents on someone else's workspace"), 'not_found');
    });
  });
});
