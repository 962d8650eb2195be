// Live progress on the 2025 wire: a waiting read_session, asked with a progressToken by a client that
// accepts text/event-stream, is answered with a stream whose notifications/progress go out as each event
// lands in the session, then the result. An echo turn `/tick 3` lands one status a second, so the first
// notification must reach the client seconds before the result. Seen through the TS SDK v1 (`onprogress`)
// and through a raw fetch reading the body chunk by chunk.
//
// A wait that outlives the client's clock: an agent's ask_user through the TS SDK with its default 60 s
// timeout and progress on (`resetTimeoutOnProgress`) is answered after 90 s: the session server's keep-alive
// progress every 15 s keeps the call open, and the agent gets the person's answer.
import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { BASE, MCP_URL, createAccount, createAgent, ok, ikey, rest } from './helpers.mjs';

async function withClient(key, fn) {
  const client = new Client({ name: 'agentsky-e2e-progress', version: '0.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(MCP_URL), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  });
  await client.connect(transport);
  try { return await fn(client); } finally { await client.close(); }
}

/** Starts an echo turn that lands `tick 1 of N` … `tick N of N` a second apart, then its reply. */
async function tickingTurn(c, agent, n) {
  const args = { agent_id: agent.agent_id, message: `/tick ${n}`, idempotency_key: ikey('tick') };
  return ok(await c.callTool({ name: 'start_session', arguments: args }), 'start_session');
}

describe('live progress (2025 wire)', () => {
  let acct; let agent;
  before(async () => { acct = await createAccount(); agent = await createAgent(acct.key); });

  test('the SDK hears each event as it lands, well before the result', async () => {
    await withClient(acct.key, async (c) => {
      const started = await tickingTurn(c, agent, 3);
      const read = {
        session_id: started.session.session_id, message_id: started.message_id, cursor: started.cursor, wait_seconds: 30,
      };
      const notes = [];
      const t0 = Date.now();
      const page = ok(
        await c.callTool({ name: 'read_session', arguments: read }, undefined, {
          onprogress: (p) => notes.push({ ...p, at: Date.now() - t0 }),
        }),
        'read_session',
      );
      const done = Date.now() - t0;
      assert.equal(page.turn_finished, true, JSON.stringify(page));
      // One notification per event, in order, numbered 1, 2, …; the result holds the same events.
      assert.equal(notes.length, page.events.length, JSON.stringify({ notes, page }));
      notes.forEach((n, i) => assert.equal(n.progress, i + 1));
      const ticks = notes.filter((n) => /^status: tick \d of 3$/.test(n.message));
      assert.equal(ticks.length, 3, JSON.stringify(notes));
      assert.match(notes.at(-1).message, /^turn_end/);
      // Live: the first notification came at least 1.5 s before the result, and the ticks a second apart.
      assert.ok(done - notes[0].at >= 1500, `first progress at ${notes[0].at} ms, result at ${done} ms`);
      assert.ok(ticks[2].at - ticks[0].at >= 1500, `ticks at ${ticks.map((t) => t.at)}`);
    });
  });

  test('a raw stream carries each notification as it lands, then the response, with no session or ids', async () => {
    const started = await withClient(acct.key, (c) => tickingTurn(c, agent, 3));
    const t0 = Date.now();
    const res = await fetch(MCP_URL, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${acct.key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-11-25',
      },
      body: JSON.stringify({
        jsonrpc: '2.0', id: 7, method: 'tools/call',
        params: {
          name: 'read_session',
          arguments: { session_id: started.session.session_id, message_id: started.message_id, wait_seconds: 30 },
          _meta: { progressToken: 'raw-1' },
        },
      }),
    });
    const headAt = Date.now() - t0;
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    assert.equal(res.headers.get('mcp-session-id'), null, 'stateless: no session');
    assert.ok(res.headers.get('x-request-id'), 'the head carries the request id');
    const events = [];
    let text = '';
    const decoder = new TextDecoder();
    for await (const chunk of res.body) {
      text += decoder.decode(chunk, { stream: true });
      let cut;
      while ((cut = text.indexOf('\n\n')) >= 0) {
        const raw = text.slice(0, cut);
        text = text.slice(cut + 2);
        assert.ok(!/^id:/m.test(raw), `no event ids, nothing to resume: ${raw}`);
        const data = raw.split('\n').find((l) => l.startsWith('data: '));
        events.push({ at: Date.now() - t0, message: JSON.parse(data.slice(6)) });
      }
    }
    const last = events.at(-1);
    assert.equal(last.message.id, 7, JSON.stringify(last));
    assert.equal(last.message.result.structuredContent.turn_finished, true);
    const notes = events.slice(0, -1);
    assert.ok(notes.length >= 4, JSON.stringify(events));
    for (const n of notes) {
      assert.equal(n.message.method, 'notifications/progress');
      assert.equal(n.message.params.progressToken, 'raw-1');
    }
    // The head and the first notification came seconds before the response did.
    assert.ok(last.at - notes[0].at >= 1500, `first at ${notes[0].at} ms, response at ${last.at} ms`);
    assert.ok(last.at - headAt >= 1500, `head at ${headAt} ms, response at ${last.at} ms`);
  });

  test('without a token the same read is one JSON body', async () => {
    const started = await withClient(acct.key, (c) => tickingTurn(c, agent, 1));
    const res = await fetch(MCP_URL, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${acct.key}`, 'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0', id: 8, method: 'tools/call',
        params: { name: 'read_session', arguments: { session_id: started.session.session_id, wait_seconds: 5 } },
      }),
    });
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.ok((await res.json()).result.structuredContent.events.length >= 1);
  });
});

describe('a wait longer than the client timeout (session server)', () => {
  test('ask_user answered after 90 s reaches the TS SDK with its default timeout and progress on', { timeout: 150_000 }, async () => {
    const acct = await createAccount();
    const agent = await createAgent(acct.key);
    const started = await withClient(acct.key, (c) => c.callTool({
      name: 'start_session', arguments: { agent_id: agent.agent_id, message: 'hi', idempotency_key: ikey('wait') },
    })).then((r) => ok(r, 'start_session'));
    const sid = started.session.session_id;
    const tok = await rest('POST', `/v1/sessions/${sid}/token`, { key: acct.key });
    assert.equal(tok.status, 201, JSON.stringify(tok.body));
    const client = new Client({ name: 'agentsky-e2e-long-wait', version: '0.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${BASE}/v1/session/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${tok.body.token}` } },
    }));
    try {
      const notes = [];
      const t0 = Date.now();
      const asking = client.callTool(
        { name: 'ask_user', arguments: { kind: 'question', payload: { prompt: 'Which day?' } } },
        undefined,
        { onprogress: (p) => notes.push({ ...p, at: Date.now() - t0 }), resetTimeoutOnProgress: true },
      );
      // The person answers after 90 s, past the SDK's 60 s.
      await new Promise((done) => setTimeout(done, 90_000));
      const listed = await rest('GET', '/v1/requests', { key: acct.key });
      const req = listed.body.requests.find((r) => r.session_id === sid);
      assert.ok(req, JSON.stringify(listed.body));
      const a = await rest('POST', `/v1/tasks/${req.task_id}/requests/${req.request_id}/answer`, { key: acct.key, body: { answer: 'Monday' } });
      assert.equal(a.status, 200, JSON.stringify(a.body));
      const answered = JSON.parse((await asking).content[0].text);
      assert.equal(answered.resolution.answer, 'Monday', JSON.stringify(answered));
      assert.ok(Date.now() - t0 >= 90_000);
      assert.ok(notes.length >= 5, `a keep-alive every 15 s: ${JSON.stringify(notes)}`);
      assert.match(notes[0].message, /^waiting for a person to answer request req_/);
    } finally {
      await client.close();
    }
  });
});
