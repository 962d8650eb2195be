// A server killed in the middle of a turn and started again (issue 3, "Shown by tests"). This file owns
// its own wrangler dev (tests/e2e/own-server.sh, state in tests/e2e/.state/restart), not the run's:
// it starts a `/sleep 6` turn, SIGKILLs the server's whole process group (wrangler and workerd, as a
// crash would), starts it again on the SAME persisted state and port, and reads on from the client's
// cursor. Nothing committed may be lost, the turn must finish (or end with an error event), cursors
// continue, and idempotency receipts survive.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { restAt, rawMcp, readTurn, readAll, ok, ikey, texts, uniq } from './helpers.mjs';
import { fakeOpenAI } from './fakes.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const STATE = join(ROOT, 'tests/e2e/.state/restart');
const LOG = join(STATE, 'wrangler-dev.log');
// The same vars on every start: secrets sealed before the crash must open after it.
const ADMIN = `restart-admin-${uniq()}`;
const VARS = ['--var', `ADMIN_TOKEN:${ADMIN}`, '--var', 'SECRETS_KEY:restart-secrets-key',
  '--var', 'PRICES:{"e2e-priced":[1000000,2000000]}'];

/** Starts tests/e2e/own-server.sh; resolves once it printed READY. */
function ownServer(mode, port) {
  const env = { ...process.env };
  if (port) env.PORT = String(port); else delete env.PORT;
  const proc = spawn('bash', [join(ROOT, 'tests/e2e/own-server.sh'), mode, join(STATE, 'wrangler'), LOG, ...VARS],
    { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise((r) => proc.once('exit', r));
  return new Promise((resolve, reject) => {
    let out = ''; let err = '';
    const timer = setTimeout(() => reject(new Error(`own-server.sh ${mode}: not READY in 240 s\n${err}`)), 240_000);
    proc.stderr.on('data', (d) => { err += d; });
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/^READY (\S+) (\d+)$/m);
      if (m) { clearTimeout(timer); resolve({ base: m[1], port: Number(new URL(m[1]).port), pgid: Number(m[2]), proc, exited }); }
    });
    proc.once('exit', (code) => { clearTimeout(timer); reject(new Error(`own-server.sh ${mode} exited ${code} before READY\n${err}`)); });
  });
}

let current;
const killGroup = (sig) => { try { if (current) process.kill(-current.pgid, sig); } catch { /* gone */ } };
process.on('exit', () => killGroup('SIGKILL'));

/** SIGKILL wrangler and workerd together, as a crash would. */
async function crash() {
  killGroup('SIGKILL');
  await current.exited;
  current = undefined;
}

describe('restart: wrangler dev killed mid-turn and started again on the same state', () => {
  before(async () => { current = await ownServer('fresh'); });
  after(async () => {
    if (!current) return;
    current.proc.kill('SIGTERM');
    await current.exited;
    current = undefined;
  });

  test('no committed event is lost, the turn ends, cursors continue, receipts survive', async (t) => {
    const base = current.base; const port = current.port;
    const acct = await restAt(base, 'POST', '/v1/accounts', { body: { name: 'Restart', email: `restart-${uniq()}@example.com` } });
    assert.equal(acct.status, 201, JSON.stringify(acct.body));
    const key = acct.body.key.key;
    const agent = await restAt(base, 'POST', '/v1/agents', { key, body: { name: 'Echo restart', harness: 'echo', model: 'echo-1' } });
    assert.equal(agent.status, 201, JSON.stringify(agent.body));
    const mcp = rawMcp(key, { base });

    // A finished first turn, then a second that sleeps 6 s between its steps.
    const startArgs = { agent_id: agent.body.agent_id, message: 'before the crash', idempotency_key: ikey('restart') };
    const started = ok(await mcp.tool('start_session', startArgs), 'start_session');
    const sid = started.session.session_id;
    await readTurn(mcp.tool, { session_id: sid, cursor: started.cursor, message_id: started.message_id });
    const sendArgs = { session_id: sid, message: '/sleep 6 across the restart', idempotency_key: ikey('restart-send') };
    const sent = ok(await mcp.tool('send_message', sendArgs), 'send_message');
    const first = ok(await mcp.tool('read_session', { session_id: sid, cursor: sent.cursor, message_id: sent.message_id, wait_seconds: 50 }), 'read (status)');
    assert.deepEqual(first.events.map((e) => e.type), ['status'], JSON.stringify(first));
    assert.equal(first.status, 'running');
    const committed = await readAll(mcp.tool, sid);
    assert.deepEqual(committed.events.map((e) => e.type), ['user_message', 'agent_message', 'turn_end', 'user_message', 'status']);
    const clientCursor = first.cursor;

    // A second session whose 2 s sleep ends while the server is down, and which nobody reads afterwards.
    const lone = ok(await mcp.tool('start_session', { agent_id: agent.body.agent_id, message: '/sleep 2 nobody reads me', idempotency_key: ikey() }), 'start lone');
    const loneSid = lone.session.session_id;
    const lonePage = ok(await mcp.tool('read_session', { session_id: loneSid, cursor: lone.cursor, message_id: lone.message_id, wait_seconds: 50 }), 'read lone');
    assert.deepEqual(lonePage.events.map((e) => e.type), ['status']);

    // A client is waiting on the turn when the server dies under it.
    const cut = mcp.tool('read_session', { session_id: sid, cursor: clientCursor, message_id: sent.message_id, wait_seconds: 50 })
      .then(() => 'answered', () => 'cut');
    await new Promise((r) => setTimeout(r, 500));
    const crashedAt = Date.now();
    await crash();
    assert.equal(await cut, 'cut', 'the waiting read was cut by the crash');
    const down = await restAt(base, 'GET', '/v1/health').then(() => 'up', () => 'down');
    assert.equal(down, 'down', 'the server is really gone');

    // Started again on the same state and port.
    current = await ownServer('resume', port);
    assert.equal(current.base, base);
    t.diagnostic(`down for ${Date.now() - crashedAt} ms`);

    // The lone session's step fell due while the server was down: its alarm survived and runs it without
    // any read_session to re-arm it. get_session reads only the D1 index.
    const loneDeadline = Date.now() + 20_000;
    let loneStatus;
    while (Date.now() < loneDeadline) {
      loneStatus = ok(await mcp.tool('get_session', { session_id: loneSid }), 'get_session lone').status;
      if (loneStatus !== 'running') break;
      await new Promise((r) => setTimeout(r, 250));
    }
    assert.equal(loneStatus, 'idle', 'the unread turn finished on its own after the restart');
    const loneLog = await readAll(mcp.tool, loneSid);
    assert.deepEqual(loneLog.events.map((e) => e.type), ['user_message', 'status', 'agent_message', 'turn_end']);
    assert.equal(loneLog.events[2].text, 'echo: /sleep 2 nobody reads me');

    // The client reads on from its cursor: the turn ends, with its reply or a visible error.
    const rest = await readTurn(mcp.tool, { session_id: sid, cursor: clientCursor, message_id: sent.message_id, wait_seconds: 50, deadlineMs: 60_000 });
    const end = rest.events.at(-1);
    assert.equal(end.type, 'turn_end', JSON.stringify(rest.events));
    t.diagnostic(`the interrupted turn ended: ${end.reason}`);
    if (end.reason === 'completed') {
      assert.deepEqual(texts(rest.events), ['echo: /sleep 6 across the restart'], JSON.stringify(rest.events));
      const reply = rest.events.find((e) => e.type === 'agent_message');
      assert.ok(reply.at_ms - first.events[0].at_ms >= 5900, 'the reply came after the sleep, not early');
    } else {
      assert.equal(end.reason, 'failed', JSON.stringify(rest.events));
      assert.ok(rest.events.some((e) => e.type === 'error'), 'a failed turn says why');
    }
    assert.equal(rest.status, 'idle');

    // The whole log: everything committed before the crash, unchanged, then exactly what the client read.
    const after = await readAll(mcp.tool, sid);
    assert.deepEqual(after.events.slice(0, committed.events.length), committed.events, 'no committed event lost or changed');
    assert.deepEqual(after.events.slice(committed.events.length), rest.events, 'the cursor continues where the client was');
    assert.equal(new Set(after.events.map((e) => e.cursor)).size, after.events.length, 'every cursor once');

    // Receipts survived: the start and the send replay; nothing was submitted twice.
    assert.deepEqual(ok(await mcp.tool('start_session', startArgs), 'start_session replay'), started);
    assert.deepEqual(ok(await mcp.tool('send_message', sendArgs), 'send_message replay'), sent);
    assert.equal(ok(await mcp.tool('list_sessions', {}), 'list_sessions').sessions.length, 2);

    // And the session goes on.
    const next = ok(await mcp.tool('send_message', { session_id: sid, message: 'after the restart', idempotency_key: ikey() }), 'send after restart');
    const t3 = await readTurn(mcp.tool, { session_id: sid, cursor: next.cursor, message_id: next.message_id });
    assert.deepEqual(texts(t3.events), ['echo: after the restart']);
    const final = await readAll(mcp.tool, sid);
    assert.deepEqual(final.events.slice(0, after.events.length), after.events);
  });
  test('the session index converges on each object after SIGKILLs at random points (10 runs)', async (t) => {
    const base = current.base; const port = current.port;
    const acct = await restAt(base, 'POST', '/v1/accounts', { body: { name: 'Crashes', email: `crashes-${uniq()}@example.com` } });
    assert.equal(acct.status, 201, JSON.stringify(acct.body));
    const key = acct.body.key.key;
    const agent = await restAt(base, 'POST', '/v1/agents', { key, body: { name: 'Burst', harness: 'echo', model: 'echo-1' } });
    const mcp = rawMcp(key, { base });
    const sids = [];
    for (let run = 0; run < 10; run++) {
      // A long turn: thousands of events to copy into the search index after its last step.
      for (let i = 0; i < 2; i++) {
        const s = ok(await mcp.tool('start_session', { agent_id: agent.body.agent_id, message: '/burst 3000 crash me', idempotency_key: ikey() }), 'start');
        sids.push(s.session.session_id);
      }
      const at = 400 + Math.floor(Math.random() * 3100);
      await new Promise((r) => setTimeout(r, at));
      await crash();
      current = await ownServer('resume', port);
      // Nothing reads the objects: their alarms (the turn's, or the one standing by for the index) bring
      // the index level by themselves. list_sessions and get_session read only the index.
      const deadline = Date.now() + 45_000;
      let running = sids;
      while (running.length && Date.now() < deadline) {
        const listed = ok(await mcp.tool('list_sessions', { limit: 100 }), 'list_sessions').sessions;
        running = listed.filter((x) => x.status === 'running' || x.status === 'provisioning').map((x) => x.session_id);
        if (running.length) await new Promise((r) => setTimeout(r, 300));
      }
      t.diagnostic(`run ${run + 1}: killed ${at} ms after the starts; ${running.length} still running in the index after the wait`);
      for (const sid of sids) {
        const indexed = ok(await mcp.tool('get_session', { session_id: sid }), 'get_session').status;
        const object = ok(await mcp.tool('read_session', { session_id: sid, limit: 1 }), 'read_session').status;
        assert.equal(indexed, object, `run ${run + 1}: ${sid}: the index says ${indexed}, the object ${object}`);
      }
    }
  });

  test('killed while a model call is in flight: the step runs again after the restart and is charged once', async (t) => {
    const base = current.base; const port = current.port;
    let release; const held = new Promise((r) => { release = r; });
    let slow = 0;
    const model = await fakeOpenAI(async (body) => {
      const last = body.messages.at(-1);
      if (last.role !== 'user' || last.content !== 'answer slowly') throw new Error('unscripted');
      slow += 1;
      if (slow === 1) { await held; return { content: 'this answer went to a dead server' }; }
      return { content: 'answered after the restart' };
    });
    try {
      const acct = await restAt(base, 'POST', '/v1/accounts', { body: { name: 'Restart 2', email: `restart2-${uniq()}@example.com` } });
      assert.equal(acct.status, 201, JSON.stringify(acct.body));
      const key = acct.body.key.key; const slug = acct.body.workspace.slug;
      for (const [name, value] of [['OPENAI_BASE_URL', model.baseUrl], ['OPENAI_API_KEY', 'sk-restart']]) {
        const r = await restAt(base, 'PUT', `/v1/secrets/${name}`, { key, body: { value } });
        assert.equal(r.status, 200, JSON.stringify(r.body));
      }
      const credit = await restAt(base, 'POST', `/v1/workspaces/${slug}/credit`, { key: ADMIN, body: { amount_cents: 100_000 } });
      assert.equal(credit.status, 200, JSON.stringify(credit.body));
      const agent = await restAt(base, 'POST', '/v1/agents', { key, body: { name: 'Slow model', harness: 'openai', model: 'e2e-priced' } });
      assert.equal(agent.status, 201, JSON.stringify(agent.body));
      const mcp = rawMcp(key, { base });

      const started = ok(await mcp.tool('start_session', { agent_id: agent.body.agent_id, message: 'answer slowly', idempotency_key: ikey() }), 'start_session');
      const sid = started.session.session_id;
      for (let i = 0; i < 200 && slow === 0; i++) await new Promise((r) => setTimeout(r, 50));
      assert.equal(slow, 1, 'the Worker is waiting on the model');
      await crash();
      release();

      current = await ownServer('resume', port);
      const turn = await readTurn(mcp.tool, { session_id: sid, cursor: started.cursor, message_id: started.message_id, wait_seconds: 50, deadlineMs: 60_000 });
      const end = turn.events.at(-1);
      t.diagnostic(`the interrupted step ended: ${end.reason}; the model was called ${model.requests.length} times`);
      assert.equal(end.type, 'turn_end', JSON.stringify(turn.events));
      const log = await readAll(mcp.tool, sid);
      assert.ok(!texts(log.events).includes('this answer went to a dead server'), 'the lost answer never appears');
      const usage = ok(await mcp.tool('get_usage', { session_id: sid }), 'get_usage');
      if (end.reason === 'completed') {
        assert.deepEqual(texts(turn.events), ['answered after the restart']);
        assert.equal(model.requests.length, 2, 'the step ran again, once');
        // Charged for the persisted step only: 7 input tokens × 1 + 3 output × 2 = 13 cents, once.
        assert.equal(usage.session.spent_cents, 13);
        assert.equal(usage.session.entries.length, 1);
        assert.equal(usage.balance_cents, 100_000 - 13, 'the hold taken before the crash was settled once');
      } else {
        assert.equal(end.reason, 'failed', JSON.stringify(turn.events));
        assert.ok(turn.events.some((e) => e.type === 'error'));
      }
      assert.deepEqual(log.events.map((e) => e.type), ['user_message', ...turn.events.map((e) => e.type)]);
      assert.equal(ok(await mcp.tool('get_session', { session_id: sid }), 'get_session').status, 'idle');
    } finally {
      release();
      await model.close();
    }
  });
});
