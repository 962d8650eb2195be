// MCP tasks and progress with the official TypeScript SDK v1 client (@modelcontextprotocol/sdk 1.32.2,
// the 2025-11-25 experimental tasks): start_session (echo agent) runs as a task through
// `client.experimental.tasks.callToolStream` to the turn's end, another is cancelled mid-turn (the session
// then takes its next message), and a
// waiting read_session streams its events as progress notifications the SDK hands to `onprogress`.
import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { MCP_URL, createAccount, createAgent, ok, ikey } from './helpers.mjs';

async function withClient(key, fn) {
  const client = new Client({ name: 'agentsky-e2e-tasks', version: '0.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(MCP_URL), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  });
  await client.connect(transport);
  try { return await fn(client); } finally { await client.close(); }
}

/** Every message callToolStream yields, to the end. */
async function drain(stream) {
  const seen = [];
  for await (const message of stream) seen.push(message);
  return seen;
}

describe('MCP tasks and progress (TS SDK v1)', () => {
  let acct; let agent;
  before(async () => { acct = await createAccount(); agent = await createAgent(acct.key); });

  test('the server declares tasks and the four turn-starting tools offer them', async () => {
    await withClient(acct.key, async (c) => {
      assert.ok(c.getServerCapabilities()?.tasks?.requests?.tools?.call, 'tasks on tools/call declared');
      const { tools } = await c.listTools();
      const optional = tools.filter((t) => t.execution?.taskSupport === 'optional').map((t) => t.name);
      assert.deepEqual(optional.sort(), ['hand_off_session', 'run_routine', 'send_message', 'start_session']);
    });
  });

  test('start_session runs as a task to the end of its turn', async () => {
    await withClient(acct.key, async (c) => {
      await c.listTools(); // the SDK reads execution.taskSupport and the outputSchema from the list
      const args = { agent_id: agent.agent_id, message: '/write report.md all done', idempotency_key: ikey('task') };
      const seen = await drain(c.experimental.tasks.callToolStream({ name: 'start_session', arguments: args }));
      const kinds = seen.map((m) => m.type);
      assert.equal(kinds[0], 'taskCreated', JSON.stringify(seen));
      assert.equal(kinds.at(-1), 'result', JSON.stringify(seen.at(-1)));
      const created = seen[0].task;
      assert.match(created.taskId, /^mtk_/);
      assert.ok(created.pollInterval > 0 && created.ttl > 0);
      const out = ok(seen.at(-1).result, 'start_session as a task');
      assert.equal(out.turn.final_reply, 'echo: /write report.md all done');
      assert.equal(out.turn.end_reason, 'completed');
      assert.deepEqual(out.turn.files.map((f) => f.path), ['report.md']);
      assert.equal(out.turn.session_id, out.session.session_id);
      const again = await c.experimental.tasks.getTask(created.taskId);
      assert.equal(again.status, 'completed');
      const { tasks } = await c.experimental.tasks.listTasks();
      assert.ok(tasks.some((t) => t.taskId === created.taskId), 'tasks/list shows it');
    });
  });

  test('a task cancelled mid-turn ends that turn, and the same session takes the next message', async () => {
    await withClient(acct.key, async (c) => {
      await c.listTools();
      const args = { agent_id: agent.agent_id, message: '/sleep 30', idempotency_key: ikey('cancel') };
      const stream = c.experimental.tasks.callToolStream({ name: 'start_session', arguments: args });
      let taskId;
      const seen = [];
      for await (const message of stream) {
        seen.push(message);
        if (message.type === 'taskCreated') {
          taskId = message.task.taskId;
          const cancelled = await c.experimental.tasks.cancelTask(taskId);
          assert.equal(cancelled.status, 'cancelled');
        }
      }
      assert.ok(taskId, JSON.stringify(seen));
      assert.equal(seen.at(-1).type, 'error', 'the stream ends with the cancellation');
      assert.match(String(seen.at(-1).error?.message), /cancelled/);
      assert.equal((await c.experimental.tasks.getTask(taskId)).status, 'cancelled');
      const sessions = ok(await c.callTool({ name: 'list_sessions', arguments: {} }), 'list_sessions');
      const session = sessions.sessions[0];
      assert.equal(session.status, 'idle', 'only the turn ended; the session lives on');
      const read = ok(await c.callTool({ name: 'read_session', arguments: { session_id: session.session_id } }), 'read_session');
      const ends = read.events.filter((e) => e.type === 'turn_end').map((e) => e.reason);
      assert.deepEqual(ends, ['cancelled'], JSON.stringify(read.events));
      // The next message on the same session runs, here as a task too, to its end.
      const next = { session_id: session.session_id, message: 'after the cancel', idempotency_key: ikey('next') };
      const after = await drain(c.experimental.tasks.callToolStream({ name: 'send_message', arguments: next }));
      assert.equal(after.at(-1).type, 'result', JSON.stringify(after.at(-1)));
      const out = ok(after.at(-1).result, 'send_message as a task');
      assert.equal(out.turn.final_reply, 'echo: after the cancel');
      assert.equal(out.turn.end_reason, 'completed');
    });
  });

  test('another account cannot see the task', async () => {
    const other = await createAccount();
    const taskId = await withClient(acct.key, async (c) => {
      await c.listTools();
      const args = { agent_id: agent.agent_id, message: 'mine', idempotency_key: ikey('mine') };
      const seen = await drain(c.experimental.tasks.callToolStream({ name: 'start_session', arguments: args }));
      return seen[0].task.taskId;
    });
    await withClient(other.key, async (c) => {
      await assert.rejects(c.experimental.tasks.getTask(taskId), /not found/);
      await assert.rejects(c.experimental.tasks.cancelTask(taskId), /not found/);
    });
  });

  test('a waiting read_session streams its events as progress', async () => {
    await withClient(acct.key, async (c) => {
      const args = { agent_id: agent.agent_id, message: '/burst 3', idempotency_key: ikey('progress') };
      const started = ok(await c.callTool({ name: 'start_session', arguments: args }), 'start_session');
      const notes = [];
      const read = { session_id: started.session.session_id, message_id: started.message_id, cursor: started.cursor, wait_seconds: 30 };
      const page = ok(
        await c.callTool({ name: 'read_session', arguments: read }, undefined, { onprogress: (p) => notes.push(p) }),
        'read_session',
      );
      assert.equal(notes.length, page.events.length, JSON.stringify({ notes, page }));
      assert.ok(notes.length >= 1);
      notes.forEach((n, i) => assert.equal(n.progress, i + 1));
      assert.match(notes[0].message, /^(status|agent_message)/);
    });
  });
});
