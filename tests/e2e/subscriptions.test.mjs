// Resource subscriptions on the 2026-07-28 wire with the TypeScript SDK v2 client
// (@modelcontextprotocol/client 2.4.0): `listen()` opens a `subscriptions/listen` stream, the server
// acknowledges what it honors (a session's transcript and result, a task file; never a fixed help article),
// and `notifications/resources/updated` arrives on that stream when a message lands in the session or a new
// version of the file is written. Scoped like resources/read: another account's session is not found.
import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { MCP_URL, createAccount, createAgent, ok, ikey } from './helpers.mjs';

async function withClient(key, fn) {
  const client = new Client({ name: 'agentsky-e2e-subscriptions', version: '0.0.0' }, { versionNegotiation: { mode: 'auto' } });
  const transport = new StreamableHTTPClientTransport(new URL(MCP_URL), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  });
  await client.connect(transport);
  try { return await fn(client); } finally { await client.close(); }
}

/** Resolves with the first update of `uri` seen after this call, or fails after `ms`. */
function nextUpdate(updates, uri, ms) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no update of ${uri} within ${ms} ms: ${JSON.stringify(updates.seen)}`)), ms);
    updates.waiting.push({ uri, resolve: (n) => { clearTimeout(timer); resolve(n); } });
  });
}

describe('subscriptions/listen (2026-07-28, TS SDK v2)', () => {
  let acct; let agent;
  before(async () => { acct = await createAccount(); agent = await createAgent(acct.key); });

  test('a session and a task file tell the listener when they change', async () => {
    await withClient(acct.key, async (c) => {
      assert.equal(c.getProtocolEra(), 'modern');
      assert.equal(c.getDiscoverResult()?.capabilities?.resources?.subscribe, true);
      const started = ok(await c.callTool({
        name: 'start_session', arguments: { agent_id: agent.agent_id, message: 'hello', idempotency_key: ikey('sub') },
      }), 'start_session');
      const sid = started.session.session_id;
      const task = started.session.task_id;
      ok(await c.callTool({ name: 'write_task_file', arguments: { task_id: task, path: 'plan.md', content: 'v1' } }), 'write');
      const transcript = `agentsky://sessions/${sid}/transcript`;
      const file = `agentsky://tasks/${task}/files/plan.md`;
      const { resources } = await c.listResources();
      const help = resources[0].uri;

      const updates = { seen: [], waiting: [] };
      c.setNotificationHandler('notifications/resources/updated', (n) => {
        updates.seen.push(n.params.uri);
        for (const w of updates.waiting.filter((w) => w.uri === n.params.uri)) w.resolve(n);
        updates.waiting = updates.waiting.filter((w) => w.uri !== n.params.uri);
      });
      const sub = await c.listen({ resourceSubscriptions: [transcript, file, help], toolsListChanged: true });
      assert.deepEqual(sub.honoredFilter, { resourceSubscriptions: [transcript, file] });

      // A message lands in the session: its transcript changed.
      const sessionChanged = nextUpdate(updates, transcript, 10_000);
      ok(await c.callTool({
        name: 'send_message', arguments: { session_id: sid, message: 'again', idempotency_key: ikey('again') },
      }), 'send_message');
      await sessionChanged;

      // A new version of the file: told within a few seconds.
      const fileChanged = nextUpdate(updates, file, 10_000);
      ok(await c.callTool({ name: 'write_task_file', arguments: { task_id: task, path: 'plan.md', content: 'v2' } }), 'write');
      await fileChanged;
      assert.ok(!updates.seen.includes(help), 'a fixed resource is never told about');

      await sub.close();
      assert.equal(await sub.closed, 'local');
    });
  });

  test("another account's session cannot be listened to", async () => {
    const started = await withClient(acct.key, async (c) => ok(await c.callTool({
      name: 'start_session', arguments: { agent_id: agent.agent_id, message: 'mine', idempotency_key: ikey('mine') },
    }), 'start_session'));
    const other = await createAccount();
    await withClient(other.key, async (c) => {
      const uri = `agentsky://sessions/${started.session.session_id}/result`;
      await assert.rejects(c.listen({ resourceSubscriptions: [uri] }), /not found/i);
    });
  });
});
