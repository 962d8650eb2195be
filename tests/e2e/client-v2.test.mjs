// The TypeScript SDK v2 client (@modelcontextprotocol/client 2.4.0) in `auto` mode: it probes
// `server/discover` (protocol 2026-07-28) first and falls back to `initialize` only on a legacy answer.
// agentsky serves both eras on one endpoint, so auto must land on the modern era. Also `legacy` mode.
import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import {
  MCP_URL, CORE_TOOLS, WRITE_TOOL, writeToolArgs,
  createAccount, createKey, createWorkspace, createAgent, ok, toolErrorCode, checked,
} from './helpers.mjs';

async function connect(key, mode) {
  const client = new Client(
    { name: 'agentsky-e2e-client-v2', version: '0.0.0' },
    { versionNegotiation: { mode } },
  );
  const transport = new StreamableHTTPClientTransport(new URL(MCP_URL), {
    requestInit: { headers: key ? { authorization: `Bearer ${key}` } : {} },
  });
  await client.connect(transport);
  return checked(client, `TS SDK v2 (${mode})`);
}

async function withClient(key, mode, fn) {
  const client = await connect(key, mode);
  try { return await fn(client); } finally { await client.close(); }
}

for (const [mode, era] of [['auto', 'modern'], ['legacy', 'legacy']]) {
  describe(`TypeScript SDK v2 client, mode ${mode}`, () => {
    let acct;
    before(async () => { acct = await createAccount(); });

    test(`negotiates the ${era} era`, async () => {
      await withClient(acct.key, mode, async (c) => {
        assert.equal(c.getProtocolEra(), era);
        const v = c.getNegotiatedProtocolVersion();
        if (era === 'modern') {
          assert.equal(v, '2026-07-28');
          assert.ok(c.getDiscoverResult()?.supportedVersions?.includes('2026-07-28'));
        } else {
          assert.match(v ?? '', /^2025-/);
        }
      });
    });

    test('lists tools and calls list_workspaces and list_agents', async () => {
      await withClient(acct.key, mode, async (c) => {
        const { tools } = await c.listTools();
        const names = tools.map((t) => t.name);
        for (const n of CORE_TOOLS) assert.ok(names.includes(n), `tools/list has ${n}`);

        const ws = ok(await c.callTool({ name: 'list_workspaces', arguments: {} }), 'list_workspaces');
        const mine = ws.workspaces.find((w) => w.slug === acct.workspace.slug);
        assert.ok(mine?.is_personal && mine?.is_current, JSON.stringify(ws));

        const agent = await createAgent(acct.key);
        const la = ok(await c.callTool({ name: 'list_agents', arguments: {} }), 'list_agents');
        const listed = la.agents.find((x) => x.id === agent.agent_id);
        assert.ok(listed, `agent ${agent.agent_id} listed: ${JSON.stringify(la)}`);
        assert.equal(listed.harness, 'echo');
        assert.equal(listed.session_count, 0);
      });
    });

    test('a bad key cannot connect, and the client shows why', async () => {
      await assert.rejects(connect(`ast_${'y'.repeat(43)}`, mode), (e) => {
        assert.match(`${e?.message} ${e?.status ?? ''} ${e?.code ?? ''} ${JSON.stringify(e?.data ?? {})}`, /401|unauthori[sz]ed/i);
        // Legacy mode puts the server's JSON-RPC error in the message; auto mode's probe keeps its own
        // message and hands the body over as data.text.
        assert.match(`${e?.message} ${JSON.stringify(e?.data ?? {})}`, /unknown or revoked API key/,
          `the server's message reaches the client: ${e} ${JSON.stringify(e?.data)}`);
        return true;
      });
    });

    test(`a read key calling ${WRITE_TOOL} gets insufficient_scope`, async () => {
      const agent = await createAgent(acct.key);
      const readKey = await createKey(acct.key, { scopes: ['read'] });
      await withClient(readKey.key, mode, async (c) => {
        const res = await c.callTool({ name: WRITE_TOOL, arguments: writeToolArgs(agent.agent_id) });
        assert.equal(toolErrorCode(res, `${WRITE_TOOL} with a read key`), 'insufficient_scope');
      });
    });

    test('a key locked to one workspace gets universe_mismatch for another', async () => {
      const team = await createWorkspace(acct.key);
      const locked = await createKey(acct.key, { scopes: ['read'], workspace: acct.workspace.slug });
      await withClient(locked.key, mode, async (c) => {
        ok(await c.callTool({ name: 'list_agents', arguments: { workspace: acct.workspace.slug } }), 'own workspace');
        const res = await c.callTool({ name: 'list_agents', arguments: { workspace: team.slug } });
        assert.equal(toolErrorCode(res, 'locked key on another workspace'), 'universe_mismatch');
      });
    });
  });
}
