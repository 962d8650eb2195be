// Sessions and turns (issue 3) with the echo harness, over the official TypeScript SDK v1 client and a
// bare JSON-RPC client: the contract's "A task, start to finish" loop with a retried start, 50
// concurrent starts with one idempotency key, server-side waiting woken by the event itself,
// session_busy, and stop_session in the middle of a turn.
import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  MCP_URL, createAccount, createWorkspace, createAgent, ok, toolErrorCode, rawMcp, readTurn, readAll,
  ikey, texts, checked, toolError,
} from './helpers.mjs';

async function sdkClient(key) {
  const client = new Client({ name: 'agentsky-e2e-sessions', version: '0.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(MCP_URL), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  }));
  return checked(client, 'TS SDK v1');
}

/** A fresh workspace (so list_sessions counts only this test's sessions) with one echo agent. */
async function freshAgent(acct) {
  const ws = await createWorkspace(acct.key);
  const agent = await createAgent(acct.key, { workspace: ws.slug });
  return { ws, agent };
}

describe('sessions: a task, start to finish (TypeScript SDK v1 client)', () => {
  let acct;
  before(async () => { acct = await createAccount(); });

  test('start, retry the start, read to turn_finished, send, read, collect, stop', async () => {
    const { ws, agent } = await freshAgent(acct);
    const c = await sdkClient(acct.key);
    const tool = (name, args) => c.callTool({ name, arguments: args });
    try {
      // 1. list_agents: pick the agent's id.
      const agents = ok(await tool('list_agents', { workspace: ws.slug }), 'list_agents').agents;
      assert.deepEqual(agents.map((a) => a.id), [agent.agent_id]);

      // 2. start_session with a unique, stable key.
      const startArgs = { agent_id: agents[0].id, message: 'hello from the TS SDK', idempotency_key: ikey('ts'), workspace: ws.slug };
      const first = ok(await tool('start_session', startArgs), 'start_session');
      const sid = first.session.session_id;
      assert.match(sid, /^ses_/);
      assert.match(first.message_id, /^msg_/);
      assert.equal(typeof first.cursor, 'string');
      assert.equal(first.session.task_id, sid, "a new session's task id is its own id");
      assert.equal(first.session.agent_id, agent.agent_id);
      assert.ok(['provisioning', 'idle', 'running'].includes(first.session.status), first.session.status);

      // The response was "lost": retry the exact same call. Same session, message and cursor; no second session.
      const retry = ok(await tool('start_session', startArgs), 'start_session (retry)');
      assert.deepEqual(retry, first, 'the retry replays the original answer');
      const listed = ok(await tool('list_sessions', { workspace: ws.slug }), 'list_sessions');
      assert.deepEqual(listed.sessions.map((s) => s.session_id), [sid], 'exactly one session');

      // 3. read_session with that cursor and message_id, waiting, until turn_finished.
      const t1 = await readTurn(tool, { session_id: sid, cursor: first.cursor, message_id: first.message_id });
      assert.deepEqual(t1.events.map((e) => e.type), ['agent_message', 'turn_end']);
      assert.equal(t1.events[0].text, 'echo: hello from the TS SDK');
      assert.equal(t1.events[1].reason, 'completed');
      assert.equal(t1.status, 'idle');
      assert.equal(ok(await tool('get_session', { session_id: sid }), 'get_session').status, 'idle');

      // Reading again from the end waits for nothing: the turn is over.
      const again = ok(await tool('read_session', { session_id: sid, cursor: t1.cursor, message_id: first.message_id, wait_seconds: 50 }), 'read_session at the end');
      assert.deepEqual(again.events, []);
      assert.equal(again.turn_finished, true);
      assert.equal(again.cursor, t1.cursor);

      // 4. send_message with a new key, retried once, then read its turn.
      const sendArgs = { session_id: sid, message: '/write notes/result.md the result, in a file', idempotency_key: ikey('ts-send') };
      const sent = ok(await tool('send_message', sendArgs), 'send_message');
      assert.equal(sent.session_id, sid);
      assert.notEqual(sent.message_id, first.message_id);
      assert.deepEqual(ok(await tool('send_message', sendArgs), 'send_message (retry)'), sent);
      const conflict = await tool('send_message', { ...sendArgs, message: 'something else' });
      assert.equal(toolErrorCode(conflict, 'send_message, same key, other message'), 'idempotency_conflict');
      const t2 = await readTurn(tool, { session_id: sid, cursor: sent.cursor, message_id: sent.message_id });
      assert.deepEqual(t2.events.map((e) => e.type), ['tool_call', 'tool_result', 'agent_message', 'turn_end']);
      assert.equal(t2.events[0].name, 'write_task_file');
      assert.equal(t2.events[1].is_error, false, JSON.stringify(t2.events[1]));
      assert.equal(t2.events[2].text, `echo: ${sendArgs.message}`);

      // collect_result: the last reply, the file, the task.
      const result = ok(await tool('collect_result', { session_id: sid }), 'collect_result');
      assert.equal(result.last_reply, `echo: ${sendArgs.message}`);
      assert.equal(result.task_id, sid);
      assert.deepEqual(result.files.map((f) => f.path), ['notes/result.md']);
      // The file waits in the session's lane until it lands.
      const file = ok(await tool('read_task_file', { task_id: sid, path: 'notes/result.md', session_id: sid }), 'read_task_file');
      assert.equal(file.content, 'the result, in a file');

      // The whole log: both turns, in order, each event once.
      const log = await readAll(tool, sid);
      assert.deepEqual(log.events.map((e) => e.type), [
        'user_message', 'agent_message', 'turn_end',
        'user_message', 'tool_call', 'tool_result', 'agent_message', 'turn_end',
      ]);
      assert.equal(log.events[0].message_id, first.message_id);
      assert.equal(log.events[0].cursor, first.cursor, 'start_session returned the cursor just after its message');
      assert.equal(log.events[3].cursor, sent.cursor, 'send_message returned the cursor just after its message');
      assert.deepEqual(log.events.slice(1, 3), t1.events);
      assert.deepEqual(log.events.slice(4), t2.events);

      // stop_session archives: status terminated, the transcript stays, new messages are refused.
      const stopped = ok(await tool('stop_session', { session_id: sid }), 'stop_session');
      assert.equal(stopped.status, 'terminated');
      assert.equal(ok(await tool('get_session', { session_id: sid }), 'get_session').status, 'terminated');
      const late = await tool('send_message', { session_id: sid, message: 'anyone?', idempotency_key: ikey() });
      assert.equal(toolErrorCode(late, 'send_message after stop'), 'session_terminated');
      const kept = await readAll(tool, sid);
      assert.deepEqual(kept.events, log.events, 'stopping an idle session changes nothing in its log');
      assert.equal(kept.status, 'terminated');
      // A stopped session still counts once, and its start still replays.
      assert.equal(ok(await tool('list_sessions', { workspace: ws.slug }), 'list_sessions').sessions.length, 1);
      assert.equal(ok(await tool('start_session', startArgs), 'start_session (retry after stop)').session.session_id, sid);
    } finally {
      await c.close();
    }
  });
});

describe('sessions: idempotency under concurrency', () => {
  let acct; let mcp;
  before(async () => { acct = await createAccount(); mcp = rawMcp(acct.key); });

  test('50 concurrent start_session calls with one key: one session, 50 identical answers', async () => {
    const { ws, agent } = await freshAgent(acct);
    const args = { agent_id: agent.agent_id, message: 'only once, please', idempotency_key: ikey('herd'), workspace: ws.slug };
    const results = await Promise.all(Array.from({ length: 50 }, () => mcp.tool('start_session', args)));
    const answers = results.map((r, i) => ok(r, `start_session #${i}`));
    for (const [i, a] of answers.entries()) assert.deepEqual(a, answers[0], `answer #${i} differs from #0`);
    const sid = answers[0].session.session_id;
    const listed = ok(await mcp.tool('list_sessions', { workspace: ws.slug }), 'list_sessions');
    assert.deepEqual(listed.sessions.map((s) => s.session_id), [sid], 'exactly one session exists');
    const turn = await readTurn(mcp.tool, { session_id: sid, cursor: answers[0].cursor, message_id: answers[0].message_id });
    assert.deepEqual(texts(turn.events), ['echo: only once, please']);
    const log = await readAll(mcp.tool, sid);
    assert.equal(log.events.filter((e) => e.type === 'user_message').length, 1, 'the message was submitted once');
    assert.equal(ok(await mcp.tool('list_agents', { workspace: ws.slug }), 'list_agents').agents[0].session_count, 1);

    // The same key with changed input is a conflict, whichever input changed; the original still replays.
    for (const change of [{ message: 'only once, please!' }, { budget_cents: 5 }, { model: 'echo-2' }]) {
      const r = await mcp.tool('start_session', { ...args, ...change });
      assert.equal(toolErrorCode(r, `same key, changed ${Object.keys(change)}`), 'idempotency_conflict');
    }
    assert.deepEqual(ok(await mcp.tool('start_session', args), 'replay'), answers[0]);
    // Argument order does not matter: the fingerprint is canonical.
    const reordered = Object.fromEntries(Object.entries(args).reverse());
    assert.deepEqual(ok(await mcp.tool('start_session', reordered), 'replay, keys reordered'), answers[0]);
    assert.equal(ok(await mcp.tool('list_sessions', { workspace: ws.slug }), 'list_sessions').sessions.length, 1);
  });

  test('20 concurrent send_message calls with one key: one message, identical answers', async () => {
    const { ws, agent } = await freshAgent(acct);
    const s = ok(await mcp.tool('start_session', { agent_id: agent.agent_id, message: 'first', idempotency_key: ikey(), workspace: ws.slug }), 'start');
    const sid = s.session.session_id;
    await readTurn(mcp.tool, { session_id: sid, cursor: s.cursor, message_id: s.message_id });
    const args = { session_id: sid, message: 'second, once', idempotency_key: ikey('herd-send') };
    const answers = (await Promise.all(Array.from({ length: 20 }, () => mcp.tool('send_message', args))))
      .map((r, i) => ok(r, `send_message #${i}`));
    for (const a of answers) assert.deepEqual(a, answers[0]);
    const turn = await readTurn(mcp.tool, { session_id: sid, cursor: answers[0].cursor, message_id: answers[0].message_id });
    assert.deepEqual(texts(turn.events), ['echo: second, once']);
    const log = await readAll(mcp.tool, sid);
    assert.deepEqual(texts(log.events, 'user_message'), ['first', 'second, once']);
  });
});

describe('sessions: waiting, busy and stop', () => {
  let acct; let mcp;
  before(async () => { acct = await createAccount(); mcp = rawMcp(acct.key); });

  test('a waiting read returns as soon as the reply lands; send_message is session_busy meanwhile', async () => {
    const { ws, agent } = await freshAgent(acct);
    const t0 = Date.now();
    const s = ok(await mcp.tool('start_session', { agent_id: agent.agent_id, message: '/sleep 2 wake me', idempotency_key: ikey(), workspace: ws.slug }), 'start');
    const sid = s.session.session_id;
    // The first step says it sleeps; the turn is running.
    const first = ok(await mcp.tool('read_session', { session_id: sid, cursor: s.cursor, message_id: s.message_id, wait_seconds: 50 }), 'read 1');
    assert.deepEqual(first.events.map((e) => e.type), ['status'], JSON.stringify(first));
    assert.equal(first.turn_finished, false);
    assert.equal(first.status, 'running');
    assert.equal(ok(await mcp.tool('get_session', { session_id: sid }), 'get_session').status, 'running');

    // A turn is running: send_message is refused, and the refusal stores nothing for its key.
    const busyArgs = { session_id: sid, message: 'me too', idempotency_key: ikey('busy') };
    assert.equal(toolErrorCode(await mcp.tool('send_message', busyArgs), 'send_message while running'), 'session_busy');

    // This read waits in the session's object until the reply lands (~2 s after the start), not 50 s.
    const t1 = Date.now();
    const second = ok(await mcp.tool('read_session', { session_id: sid, cursor: first.cursor, message_id: s.message_id, wait_seconds: 50 }), 'read 2');
    const back = Date.now();
    assert.ok(second.events.length >= 1, JSON.stringify(second));
    const reply = second.events.find((e) => e.type === 'agent_message');
    assert.equal(reply?.text, 'echo: /sleep 2 wake me');
    assert.ok(back - t0 >= 1900, `the turn sleeps 2 s (took ${back - t0} ms)`);
    assert.ok(back - t1 < 5000, `the waiting read returned ${back - t1} ms after it was sent (the reply was due in ~2 s)`);
    assert.ok(back - reply.at_ms < 1000, `the read returned ${back - reply.at_ms} ms after the reply was appended`);
    const rest = second.turn_finished ? second : ok(await mcp.tool('read_session', { session_id: sid, cursor: second.cursor, message_id: s.message_id, wait_seconds: 50 }), 'read 3');
    assert.equal(rest.turn_finished, true);

    // The turn is over: the refused key now works.
    const sent = ok(await mcp.tool('send_message', busyArgs), 'send_message after the turn');
    const turn = await readTurn(mcp.tool, { session_id: sid, cursor: sent.cursor, message_id: sent.message_id });
    assert.deepEqual(texts(turn.events), ['echo: me too']);
  });

  test('a wait with nothing coming times out at wait_seconds', async () => {
    const { ws, agent } = await freshAgent(acct);
    const s = ok(await mcp.tool('start_session', { agent_id: agent.agent_id, message: '/sleep 10 long', idempotency_key: ikey(), workspace: ws.slug }), 'start');
    const sid = s.session.session_id;
    const first = ok(await mcp.tool('read_session', { session_id: sid, cursor: s.cursor, message_id: s.message_id, wait_seconds: 5 }), 'read 1');
    assert.deepEqual(first.events.map((e) => e.type), ['status']);
    const t0 = Date.now();
    const idle = ok(await mcp.tool('read_session', { session_id: sid, cursor: first.cursor, message_id: s.message_id, wait_seconds: 2 }), 'read 2');
    const took = Date.now() - t0;
    assert.deepEqual(idle.events, []);
    assert.equal(idle.turn_finished, false);
    assert.equal(idle.cursor, first.cursor);
    assert.ok(took >= 1900 && took < 4500, `wait_seconds 2 held the read ${took} ms`);
    ok(await mcp.tool('stop_session', { session_id: sid }), 'stop');
  });

  test('a whole-session read of an idle session is held until the next message lands, or the wait ends', async () => {
    const { ws, agent } = await freshAgent(acct);
    const s = ok(await mcp.tool('start_session', { agent_id: agent.agent_id, message: 'first', idempotency_key: ikey(), workspace: ws.slug }), 'start');
    const sid = s.session.session_id;
    await readTurn(mcp.tool, { session_id: sid, cursor: s.cursor, message_id: s.message_id });
    const end = (await readAll(mcp.tool, sid)).cursor;
    // Nothing comes: held for the whole wait, and says no turn is running.
    let t0 = Date.now();
    const quiet = ok(await mcp.tool('read_session', { session_id: sid, cursor: end, wait_seconds: 2 }), 'idle read');
    const held = Date.now() - t0;
    assert.ok(held >= 1900 && held < 4500, `an idle session's read was held ${held} ms for wait_seconds 2`);
    assert.deepEqual(quiet.events, []);
    assert.equal(quiet.turn_running, false);
    assert.equal(quiet.status, 'idle');
    // Something lands while a read waits: another client's message wakes it at once.
    t0 = Date.now();
    const waiting = mcp.tool('read_session', { session_id: sid, cursor: end, wait_seconds: 30 });
    await new Promise((r) => setTimeout(r, 500));
    ok(await rawMcp(acct.key).tool('send_message', { session_id: sid, message: 'second', idempotency_key: ikey() }), 'send');
    const woke = ok(await waiting, 'woken read');
    assert.ok(Date.now() - t0 < 5000, `the waiting read returned ${Date.now() - t0} ms after it started`);
    assert.equal(woke.events[0].type, 'user_message');
    assert.equal(woke.events[0].text, 'second');
    // A read of one message whose turn has ended is answered at once: nothing more can land for it.
    t0 = Date.now();
    const done = ok(await mcp.tool('read_session', { session_id: sid, cursor: end, message_id: s.message_id, wait_seconds: 30 }), 'finished message');
    assert.equal(done.turn_finished, true);
    assert.ok(Date.now() - t0 < 2000, `a finished message's read returned after ${Date.now() - t0} ms`);
  });

  test('stop_session mid-turn wakes the waiting reader with turn_end reason stopped; the turn never replies', async () => {
    const { ws, agent } = await freshAgent(acct);
    const s = ok(await mcp.tool('start_session', { agent_id: agent.agent_id, message: '/sleep 3 stop me', idempotency_key: ikey(), workspace: ws.slug }), 'start');
    const sid = s.session.session_id;
    const first = ok(await mcp.tool('read_session', { session_id: sid, cursor: s.cursor, message_id: s.message_id, wait_seconds: 50 }), 'read 1');
    assert.deepEqual(first.events.map((e) => e.type), ['status']);
    // A reader waits for the rest of the turn ...
    const t0 = Date.now();
    const waiting = readTurn(mcp.tool, { session_id: sid, cursor: first.cursor, message_id: s.message_id });
    await new Promise((r) => setTimeout(r, 300));
    // ... and the session is stopped under it.
    const stopped = ok(await mcp.tool('stop_session', { session_id: sid }), 'stop_session');
    assert.equal(stopped.status, 'terminated');
    const rest = await waiting;
    const took = Date.now() - t0;
    assert.ok(took < 2500, `the waiting read was woken by the stop (${took} ms), not by the sleep's end or its timeout`);
    assert.equal(rest.events.at(-1).type, 'turn_end');
    assert.equal(rest.events.at(-1).reason, 'stopped');
    assert.deepEqual(texts(rest.events), [], 'no reply');
    assert.equal(rest.status, 'terminated');

    // After the sleep would have ended, still no reply: the stopped turn's step is dropped.
    await new Promise((r) => setTimeout(r, 3500));
    const log = await readAll(mcp.tool, sid);
    assert.deepEqual(log.events.map((e) => e.type), ['user_message', 'status', 'status', 'turn_end'], JSON.stringify(log.events));
    assert.equal(ok(await mcp.tool('get_session', { session_id: sid }), 'get_session').status, 'terminated');
    const result = ok(await mcp.tool('collect_result', { session_id: sid }), 'collect_result');
    assert.equal(result.last_reply ?? null, null);
    // Stopping again changes nothing.
    assert.equal(ok(await mcp.tool('stop_session', { session_id: sid }), 'stop again').status, 'terminated');
    assert.deepEqual((await readAll(mcp.tool, sid)).events, log.events);
  });

  test('a failing turn ends with an error event and leaves the session usable', async () => {
    const { ws, agent } = await freshAgent(acct);
    const s = ok(await mcp.tool('start_session', { agent_id: agent.agent_id, message: '/fail now', idempotency_key: ikey(), workspace: ws.slug }), 'start');
    const sid = s.session.session_id;
    const turn = await readTurn(mcp.tool, { session_id: sid, cursor: s.cursor, message_id: s.message_id });
    assert.deepEqual(turn.events.map((e) => e.type), ['error', 'turn_end']);
    assert.equal(turn.events[1].reason, 'failed');
    const sent = ok(await mcp.tool('send_message', { session_id: sid, message: 'again', idempotency_key: ikey() }), 'send after failure');
    const t2 = await readTurn(mcp.tool, { session_id: sid, cursor: sent.cursor, message_id: sent.message_id });
    assert.deepEqual(texts(t2.events), ['echo: again']);
  });

  // Found by these tests: a message_id the session does not have (another session's, or made up) reads
  // as an empty page with turn_finished false after the full wait, forever, so a client following the
  // contract ("repeat until turn_finished") loops without end. It should be refused at once.
  test('read_session with a message_id of another session is refused, not waited on', async () => {
    const { ws, agent } = await freshAgent(acct);
    const a = ok(await mcp.tool('start_session', { agent_id: agent.agent_id, message: 'a', idempotency_key: ikey(), workspace: ws.slug }), 'start a');
    const b = ok(await mcp.tool('start_session', { agent_id: agent.agent_id, message: 'b', idempotency_key: ikey(), workspace: ws.slug }), 'start b');
    await readTurn(mcp.tool, { session_id: a.session.session_id, cursor: a.cursor, message_id: a.message_id });
    const t0 = Date.now();
    const r = await mcp.tool('read_session', { session_id: a.session.session_id, message_id: b.message_id, wait_seconds: 2 });
    const took = Date.now() - t0;
    assert.equal(r.isError, true, `answered after ${took} ms: ${JSON.stringify(r.structuredContent)}`);
    assert.ok(['not_found', 'invalid_params'].includes(toolError(r).code), JSON.stringify(r));
    assert.ok(took < 1000, `refused at once, not after the wait (${took} ms)`);
  });

  test('paging: a 450-reply turn reads in pages of at most 200, has_more until the end', async () => {
    const { ws, agent } = await freshAgent(acct);
    const s = ok(await mcp.tool('start_session', { agent_id: agent.agent_id, message: '/burst 450', idempotency_key: ikey(), workspace: ws.slug }), 'start');
    const sid = s.session.session_id;
    const turn = await readTurn(mcp.tool, { session_id: sid, cursor: s.cursor, message_id: s.message_id });
    assert.equal(turn.events.length, 452, '450 bursts, the echo, the turn end');
    assert.ok(turn.pages >= 3, `read in ${turn.pages} pages`);
    const replies = texts(turn.events);
    assert.equal(replies[0], 'burst 1 of 450');
    assert.equal(replies[449], 'burst 450 of 450');
    assert.equal(new Set(turn.events.map((e) => e.cursor)).size, 452, 'every cursor once');
    const small = ok(await mcp.tool('read_session', { session_id: sid, cursor: s.cursor, message_id: s.message_id, limit: 7 }), 'limit 7');
    assert.equal(small.events.length, 7);
    assert.equal(small.has_more, true);
    assert.equal(small.turn_finished, false, 'not finished until the turn_end is read');
    assert.deepEqual(small.events, turn.events.slice(0, 7));
  });
});
