// Secrets across workspaces (issue 13, item 1): a public agent whose remote MCP server names a secret is
// started by @handle from another workspace. The MCP server is a loopback fake that records the
// Authorization header of every request it gets: it must see the agent owner's secret, never the
// caller's, even though the agent names the very secret the caller's model key is stored under. The
// caller sees the server's host in the catalog before starting the agent. (Loopback MCP servers and model
// endpoints work here only because run.sh starts the server with ALLOW_LOOPBACK_HTTP=1.)
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rest, createAccount, addCredit, putSecret, rawMcp, readTurn, ok, ikey, uniq } from './helpers.mjs';
import { fakeOpenAI, fakeMcpServer } from './fakes.mjs';

/** The caller's model: call the owner's MCP tool, then answer with what it said. */
function script(body) {
  const last = body.messages.at(-1);
  if (last.role === 'user') {
    return { content: null, tool_calls: [{ id: 'call_mul', type: 'function', function: { name: 'calc__multiply', arguments: JSON.stringify({ a: 3, b: 5 }) } }] };
  }
  if (last.role === 'tool') return { content: `the tool said ${last.content}` };
  throw new Error(`unscripted conversation: ${JSON.stringify(body.messages)}`);
}

describe('a public agent started from another workspace', () => {
  let owner; let caller; let openai; let mcpSrv; let handle;
  const ownerToken = `owner-tools-${uniq()}`;
  const callerKey = `sk-caller-${uniq()}-${uniq()}`;

  before(async () => {
    [owner, caller] = [await createAccount('E2E Owner'), await createAccount('E2E Caller')];
    openai = await fakeOpenAI(script);
    mcpSrv = await fakeMcpServer({ token: ownerToken });
    // The owner keeps the MCP server's token under OPENAI_API_KEY: the name the caller's model key has too.
    await putSecret(owner.key, 'OPENAI_API_KEY', ownerToken, owner.workspace.slug);
    handle = `calc-${uniq()}`;
    const r = await rest('POST', '/v1/agents', {
      key: owner.key,
      body: {
        name: `Calc ${handle}`, handle, harness: 'openai', model: 'e2e-model', is_public: true,
        description: 'Multiplies with a remote tool.',
        mcpServers: [{ name: 'calc', url: mcpSrv.url, bearer_secret: 'OPENAI_API_KEY' }],
      },
    });
    assert.equal(r.status, 201, `POST /v1/agents -> ${r.status} ${JSON.stringify(r.body)}`);
    await putSecret(caller.key, 'OPENAI_BASE_URL', openai.baseUrl, caller.workspace.slug);
    await putSecret(caller.key, 'OPENAI_API_KEY', callerKey, caller.workspace.slug);
    await addCredit(caller.workspace.slug, 200);
  });
  after(async () => { await openai?.close(); await mcpSrv?.close(); });

  test('the catalog shows the caller where the agent sends data, and no secret name', async () => {
    const found = ok(await rawMcp(caller.key).tool('search_catalog', { query: handle }), 'search_catalog');
    const entry = found.agents.find((a) => a.handle === `@${handle}`);
    assert.ok(entry, JSON.stringify(found));
    assert.equal(entry.source, 'public');
    assert.deepEqual(entry.remote_mcp_hosts, ['127.0.0.1']);
    assert.ok(!JSON.stringify(entry).includes('bearer'), JSON.stringify(entry));
  });

  test("the MCP server gets the owner's secret, never the caller's", async () => {
    const client = rawMcp(caller.key);
    const started = ok(await client.tool('start_session', {
      agent_id: `@${handle}`, message: 'multiply 3 by 5', idempotency_key: ikey('pub'),
    }), 'start_session');
    const turn = await readTurn(client.tool, {
      session_id: started.session.session_id, cursor: started.cursor, message_id: started.message_id, wait_seconds: 20,
    });
    assert.equal(turn.events.at(-1).reason, 'completed', JSON.stringify(turn.events, null, 1));
    assert.equal(turn.events.find((e) => e.type === 'tool_result').content, 'product=15');

    assert.ok(mcpSrv.auth.length >= 3, `the MCP server was called: ${mcpSrv.auth.length}`);
    assert.ok(mcpSrv.auth.every((a) => a === `Bearer ${ownerToken}`), JSON.stringify(mcpSrv.auth));
    assert.ok(!mcpSrv.auth.some((a) => a?.includes(callerKey)), "the caller's key never reached the owner's server");
    // The caller's own model endpoint got the caller's key, as before.
    assert.ok(openai.requests.every((r) => r.headers.authorization === `Bearer ${callerKey}`));
  });
});
