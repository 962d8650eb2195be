// Scheduled routines and standing goals (issue 5, "Shown by tests"), end to end under `wrangler dev
// --test-scheduled` with the echo harness: the Cron Trigger (GET /__scheduled) run twice for one minute
// fires a routine once, through the real Queue, into a session that replies; run_routine retried with one
// key runs once; a goal with a text criterion iterates until it is met, and one with a low max_iterations
// stops at the limit. The cron test waits for a real minute boundary (up to 60 s), so the tests of this
// file run concurrently: the others finish inside that wait. Each test uses its own key (the per-key
// rate limit) and its own workspace.
import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import {
  BASE, createAccount, createKey, createWorkspace, createAgent, ok, toolErrorCode, rawMcp, readTurn, readAll,
  ikey, texts, toolError, rest,
} from './helpers.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Runs the Worker's scheduled handler once, as the Cron Trigger would (wrangler dev --test-scheduled). */
async function triggerCron() {
  const res = await fetch(`${BASE}/__scheduled?cron=${encodeURIComponent('* * * * *')}`);
  const text = await res.text();
  assert.equal(res.status, 200, `GET /__scheduled -> ${res.status} ${text}`);
}

/** The keys of the local R2 bucket (miniflare keeps them in SQLite under the server's state folder). */
function r2Keys() {
  const dir = process.env.AGENTSKY_E2E_R2_DIR;
  assert.ok(dir, 'AGENTSKY_E2E_R2_DIR is set by tests/e2e/run.sh');
  const py = `import glob, json, sqlite3, sys
keys = []
for f in glob.glob(sys.argv[1] + "/miniflare-R2BucketObject/*.sqlite"):
    if not f.endswith("metadata.sqlite"):
        keys += [r[0] for r in sqlite3.connect(f).execute("SELECT key FROM _mf_objects")]
print(json.dumps(keys))`;
  return JSON.parse(execFileSync('python3', ['-c', py, dir]).toString());
}

/** The routine as list_routines shows it. */
async function listed(mcp, slug, routineId) {
  const all = ok(await mcp.tool('list_routines', { workspace: slug }), 'list_routines').routines;
  const r = all.find((x) => x.routine_id === routineId);
  assert.ok(r, `routine ${routineId} is listed: ${JSON.stringify(all)}`);
  return r;
}

let acct;
/** A fresh key of the file's account (each test its own rate bucket), a workspace, an echo agent. */
async function setup() {
  const key = (await createKey(acct.key, { scopes: ['read', 'write'] })).key;
  const ws = await createWorkspace(acct.key);
  const agent = await createAgent(acct.key, { workspace: ws.slug });
  return { mcp: rawMcp(key), ws, agent };
}

describe('routines and goals (wrangler dev --test-scheduled, echo harness)', { concurrency: true }, () => {
  before(async () => { acct = await createAccount(); });

  // Two steps on one routine, in order (the suite around them runs concurrently): the trigger records one
  // fire for one minute; then the queue consumer runs it into a session that replies.
  describe('a cron routine', { concurrency: 1 }, () => {
    let ctx;

    test('the cron trigger run four times in the same minute records one fire, for that minute', async () => {
      const { mcp, ws, agent } = await setup();
      const created = ok(await mcp.tool('create_routine', {
        name: 'every minute', agent_id: agent.agent_id, message: 'daily standup, please', cron: '* * * * *', timezone: 'UTC', workspace: ws.slug,
      }), 'create_routine');
      const rid = created.routine_id;
      assert.match(rid, /^rt_/);
      const due = created.next_fire_ms;
      assert.equal(due % 60_000, 0, 'the next whole minute');
      assert.ok(due > Date.now() - 1000 && due <= Date.now() + 60_000, `next_fire_ms ${due} is within the next minute`);
      // describe_workspace lists the routine and its trigger.
      const described = ok(await mcp.tool('describe_workspace', { workspace: ws.slug }), 'describe_workspace');
      assert.ok(described.routines.some((r) => r.routine_id === rid && r.next_fire_ms === due), JSON.stringify(described.routines));

      // Before it is due, a trigger fires nothing (checked unless the minute is about to turn).
      if (Date.now() < due - 2000) {
        await triggerCron();
        assert.deepEqual((await listed(mcp, ws.slug, rid)).recent_fires, [], 'nothing is due yet');
      }

      // Past the minute (and well inside it), trigger twice, then twice more at the same time.
      await sleep(Math.max(0, due + 1500 - Date.now()));
      await triggerCron();
      await triggerCron();
      await Promise.all([triggerCron(), triggerCron()]);
      assert.ok(Date.now() < due + 60_000, 'all four triggers ran within the same minute');

      const r = await listed(mcp, ws.slug, rid);
      assert.equal(r.recent_fires.length, 1, `one fire for one minute, whatever the triggers: ${JSON.stringify(r.recent_fires)}`);
      const fire = r.recent_fires[0];
      assert.equal(fire.trigger, 'cron');
      assert.equal(fire.scheduled_ms, due);
      assert.ok(['queued', 'done'].includes(fire.status), JSON.stringify(fire));
      assert.ok(r.next_fire_ms >= due + 60_000, `the routine moved on to a later minute: ${r.next_fire_ms}`);
      ctx = { mcp, ws, agent, rid, due };
    });

    // Found by this test: the fire never runs under workerd. The Worker enqueues `{"fire_id": …}` with
    // worker::Queue::send(serde_json::Value), which converts it with serde_wasm_bindgen (a JS Map), and the
    // queue's json encoding turns a Map into `{}`: the consumer logs "queue: dropping a message without
    // fire_id: {}" and acks it, so every cron fire stays `queued` forever (the stranded re-send drops too).
    test('the queue consumer runs the fire: one session, and it replies', async () => {
      assert.ok(ctx, 'the trigger step ran');
      const { mcp, ws, agent, rid, due } = ctx;
      let r;
      const t0 = Date.now();
      for (;;) {
        r = await listed(mcp, ws.slug, rid);
        if (r.recent_fires.every((f) => f.status !== 'queued')) break;
        assert.ok(Date.now() - t0 < 10_000, `the fire was not run within 10 s: ${JSON.stringify(r.recent_fires)}`);
        await sleep(250);
      }
      assert.equal(r.recent_fires.length, 1, JSON.stringify(r.recent_fires));
      const fire = r.recent_fires[0];
      assert.equal(fire.status, 'done', JSON.stringify(fire));
      assert.equal(fire.scheduled_ms, due);
      assert.match(fire.session_id, /^ses_/);

      // The session is the agent's, in the routine's workspace, and it replies.
      const sessions = ok(await mcp.tool('list_sessions', { workspace: ws.slug }), 'list_sessions').sessions;
      assert.deepEqual(sessions.map((s) => s.session_id), [fire.session_id], 'exactly one session was started');
      assert.equal(sessions[0].agent_id, agent.agent_id);
      const turn = await readTurn(mcp.tool, { session_id: fire.session_id, message_id: fire.message_id });
      assert.deepEqual(texts(turn.events), ['echo: daily standup, please']);
      assert.equal(ok(await mcp.tool('collect_result', { session_id: fire.session_id }), 'collect_result').last_reply, 'echo: daily standup, please');
      assert.equal((await listed(mcp, ws.slug, rid)).recent_fires[0].spent_cents, 0, 'the echo harness is free');

      // Triggering again in the same minute still adds nothing.
      if (Date.now() < due + 55_000) {
        await triggerCron();
        await sleep(1500);
        assert.equal((await listed(mcp, ws.slug, rid)).recent_fires.length, 1);
        assert.equal(ok(await mcp.tool('list_sessions', { workspace: ws.slug }), 'list_sessions').sessions.length, 1);
      }
    });
  });

  test('run_routine retried with the same key runs once; a new key runs again', async () => {
    const { mcp, ws, agent } = await setup();
    const r = ok(await mcp.tool('create_routine', { name: 'by hand', agent_id: agent.agent_id, message: 'run the report', workspace: ws.slug }), 'create_routine');
    assert.equal(r.cron, null);
    assert.equal(r.next_fire_ms, null, 'a routine without cron never fires by itself');

    const args = { routine_id: r.routine_id, idempotency_key: ikey('run') };
    const answers = (await Promise.all(Array.from({ length: 8 }, () => mcp.tool('run_routine', args))))
      .map((x, i) => ok(x, `run_routine #${i}`));
    for (const [i, a] of answers.entries()) assert.deepEqual(a, answers[0], `answer #${i} differs from #0`);
    const fire = answers[0];
    assert.equal(fire.trigger, 'manual');
    assert.equal(fire.status, 'done', JSON.stringify(fire));
    assert.match(fire.session_id, /^ses_/);
    // And again later, sequentially: the same fire.
    assert.deepEqual(ok(await mcp.tool('run_routine', args), 'run_routine (late retry)'), fire);

    const sessions = ok(await mcp.tool('list_sessions', { workspace: ws.slug }), 'list_sessions').sessions;
    assert.deepEqual(sessions.map((s) => s.session_id), [fire.session_id], 'one run, one session');
    const turn = await readTurn(mcp.tool, { session_id: fire.session_id, message_id: fire.message_id });
    assert.deepEqual(texts(turn.events), ['echo: run the report']);
    const log = await readAll(mcp.tool, fire.session_id);
    assert.equal(log.events.filter((e) => e.type === 'user_message').length, 1, 'the message was sent once');
    assert.equal((await listed(mcp, ws.slug, r.routine_id)).recent_fires.length, 1);

    // The same key for another routine is a conflict; a new key is a new run.
    const other = ok(await mcp.tool('create_routine', { name: 'other', agent_id: agent.agent_id, message: 'x', workspace: ws.slug }), 'create_routine 2');
    assert.equal(toolErrorCode(await mcp.tool('run_routine', { ...args, routine_id: other.routine_id }), 'same key, other routine'), 'idempotency_conflict');
    const second = ok(await mcp.tool('run_routine', { routine_id: r.routine_id, idempotency_key: ikey('run2') }), 'run_routine (new key)');
    assert.notEqual(second.fire_id, fire.fire_id);
    assert.notEqual(second.session_id, fire.session_id);
    assert.equal(ok(await mcp.tool('list_sessions', { workspace: ws.slug }), 'list_sessions').sessions.length, 2);
    assert.equal((await listed(mcp, ws.slug, r.routine_id)).recent_fires.length, 2);
  });

  test('a person updates, pauses, resumes and deletes a routine; next_fire_ms is never in the past; a failed run is an error', async () => {
    const { mcp, ws, agent } = await setup();
    const r = ok(await mcp.tool('create_routine', { name: 'hourly', agent_id: agent.agent_id, message: 'm', cron: '0 * * * *', workspace: ws.slug }), 'create_routine');
    const changed = ok(await mcp.tool('update_routine', {
      routine_id: r.routine_id, cron: '30 9 * * 1-5', timezone: 'Europe/Berlin', message: 'standup', budget_cents: 50,
    }), 'update_routine');
    assert.deepEqual([changed.cron, changed.timezone, changed.message, changed.budget_cents, changed.name],
      ['30 9 * * 1-5', 'Europe/Berlin', 'standup', 50, 'hourly']);
    assert.ok(changed.next_fire_ms > Date.now(), `next_fire_ms ${changed.next_fire_ms} is ahead`);
    const paused = ok(await mcp.tool('pause_routine', { routine_id: r.routine_id }), 'pause_routine');
    assert.equal(paused.enabled, false);
    assert.equal(paused.next_fire_ms, null, 'a paused routine has no next fire');
    assert.equal((await listed(mcp, ws.slug, r.routine_id)).next_fire_ms, null);
    const resumed = ok(await mcp.tool('resume_routine', { routine_id: r.routine_id }), 'resume_routine');
    assert.ok(resumed.enabled && resumed.next_fire_ms > Date.now(), JSON.stringify(resumed));

    // Its agent deleted, a run fails: an error with the reason, and the fire recorded as failed.
    const gone = await rest('DELETE', `/v1/agents/${agent.agent_id}`, { key: acct.key });
    assert.equal(gone.status, 200, JSON.stringify(gone.body));
    const e = toolError(await mcp.tool('run_routine', { routine_id: r.routine_id, idempotency_key: ikey('fail') }), 'run_routine');
    assert.equal(e.code, 'not_found', JSON.stringify(e));
    assert.ok(e.message.includes('failed') && e.message.includes(agent.agent_id), e.message);
    const fires = (await listed(mcp, ws.slug, r.routine_id)).recent_fires;
    assert.deepEqual(fires.map((f) => [f.trigger, f.status]), [['manual', 'failed']]);

    assert.equal(ok(await mcp.tool('delete_routine', { routine_id: r.routine_id }), 'delete_routine').deleted, true);
    const left = ok(await mcp.tool('list_routines', { workspace: ws.slug }), 'list_routines').routines;
    assert.deepEqual(left, []);
  });

  // The Worker reads time zones from the runtime's own database (Intl), not a bundled one: each next fire,
  // read back in its zone by Node's Intl, is the wall-clock time its cron names, within the next day.
  test("next fires are the cron's wall-clock time in the routine's zone, daylight saving or not", async () => {
    const { mcp, ws, agent } = await setup();
    const wall = (ms, timeZone) => new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(ms);
    for (const [cron, timezone, expected] of [
      ['15 9 * * *', 'Asia/Kolkata', '09:15'],
      ['0 9 * * *', 'America/New_York', '09:00'],
      ['45 23 * * *', 'Pacific/Chatham', '23:45'],
      ['30 6 * * *', 'europe/berlin', '06:30'],
    ]) {
      const r = ok(await mcp.tool('create_routine', { name: timezone, agent_id: agent.agent_id, message: 'm', cron, timezone, workspace: ws.slug }), `create_routine ${timezone}`);
      assert.equal(wall(r.next_fire_ms, timezone), expected, `${cron} in ${timezone}: next fire ${new Date(r.next_fire_ms).toISOString()}`);
      assert.ok(r.next_fire_ms > Date.now() && r.next_fire_ms <= Date.now() + 25 * 3600_000, `${timezone}: within the next day`);
    }
  });

  test('a routine can message an existing session; bad schedules name their field', async () => {
    const { mcp, ws, agent } = await setup();
    const s = ok(await mcp.tool('start_session', { agent_id: agent.agent_id, message: 'hello', idempotency_key: ikey(), workspace: ws.slug }), 'start');
    const sid = s.session.session_id;
    await readTurn(mcp.tool, { session_id: sid, cursor: s.cursor, message_id: s.message_id });
    const r = ok(await mcp.tool('create_routine', { name: 'nudge', session_id: sid, message: 'any news?', workspace: ws.slug }), 'create_routine');
    const fire = ok(await mcp.tool('run_routine', { routine_id: r.routine_id, idempotency_key: ikey() }), 'run_routine');
    assert.equal(fire.session_id, sid);
    const turn = await readTurn(mcp.tool, { session_id: sid, message_id: fire.message_id });
    assert.deepEqual(texts(turn.events), ['echo: any news?']);
    const msg = (await readAll(mcp.tool, sid)).events.find((e) => e.message_id === fire.message_id && e.type === 'user_message');
    assert.equal(msg.from?.routine?.routine_id, r.routine_id, `marked as from the routine: ${JSON.stringify(msg)}`);

    for (const [extra, field] of [
      [{ cron: '0 9 * *' }, '`cron`'],
      [{ cron: '61 * * * *' }, '`cron`'],
      [{ cron: '0 9 * * *', timezone: 'Nowhere/Land' }, '`timezone`'],
      [{ cron: '0 9 * * *', timezone: '+02:00' }, '`timezone`'],
    ]) {
      const bad = await mcp.tool('create_routine', { name: 'bad', agent_id: agent.agent_id, message: 'm', workspace: ws.slug, ...extra });
      assert.equal(toolErrorCode(bad, JSON.stringify(extra)), 'invalid_params');
      assert.ok(toolError(bad).message.includes(field), `${JSON.stringify(extra)}: ${toolError(bad).message}`);
    }
  });

  // Found by these tests: get_goal, set_goal and clear_goal all answer `internal` under workerd; the
  // session object's reply SessionReply::Goal(Option<Box<Goal>>) is a newtype variant holding an Option in
  // an internally tagged (`reply`) enum, which serde_json cannot serialize ("Failed to encode data to json").
  test('a goal with a text criterion iterates until it is met, each check an event in the transcript', async () => {
    const { mcp, ws, agent } = await setup();
    const s = ok(await mcp.tool('start_session', { agent_id: agent.agent_id, message: 'hello', idempotency_key: ikey(), workspace: ws.slug }), 'start');
    const sid = s.session.session_id;
    const first = await readTurn(mcp.tool, { session_id: sid, cursor: s.cursor, message_id: s.message_id });

    const args = { session_id: sid, objective: 'count to three', criteria: ['iteration 3'], max_iterations: 5, idempotency_key: ikey('goal') };
    const set = ok(await mcp.tool('set_goal', args), 'set_goal');
    assert.equal(set.goal.status, 'active');
    assert.equal(set.goal.iterations, 1, 'an idle session starts on its goal at once');
    assert.deepEqual(ok(await mcp.tool('set_goal', args), 'set_goal (retry)'), set, 'a retry replays');

    // Read on from the end of the first turn, without a message id, until the session is idle again.
    const rest = await readTurn(mcp.tool, { session_id: sid, cursor: first.cursor, deadlineMs: 60_000 });
    const checks = rest.events.filter((e) => e.type === 'goal_check');
    assert.deepEqual(checks.map((c) => [c.iteration, c.status]), [[1, 'active'], [2, 'active'], [3, 'met']], JSON.stringify(checks));
    assert.deepEqual(checks.map((c) => c.verdicts[0].met), [false, false, true]);
    const prompts = texts(rest.events, 'user_message');
    assert.equal(prompts.length, 3, JSON.stringify(prompts));
    prompts.forEach((p, i) => assert.ok(p.includes(`iteration ${i + 1} of 5`), p));
    // The goal's turns come from the goal, not from a person.
    assert.deepEqual(rest.events.filter((e) => e.type === 'user_message').map((e) => e.from), ['goal', 'goal', 'goal']);
    assert.equal(rest.status, 'idle');

    const g = ok(await mcp.tool('get_goal', { session_id: sid }), 'get_goal').goal;
    assert.equal(g.status, 'met');
    assert.equal(g.iterations, 3);
    assert.equal(g.last_verdicts[0].met, true);
    assert.match(g.stopped_reason, /met/);
    assert.ok(ok(await mcp.tool('collect_result', { session_id: sid }), 'collect_result').last_reply.includes('iteration 3 of 5'));
    assert.equal(ok(await mcp.tool('get_session', { session_id: sid }), 'get_session').status, 'idle');
    // Stopped means stopped: nothing more arrives.
    const after = ok(await mcp.tool('read_session', { session_id: sid, cursor: rest.cursor, wait_seconds: 1 }), 'read after');
    assert.deepEqual(after.events, []);
  });

  test("the cron purges a deleted workspace's bytes from R2; another workspace's copy stays", async () => {
    const { mcp, ws, agent } = await setup();
    const home = await createWorkspace(acct.key);
    const homeAgent = await createAgent(acct.key, { workspace: home.slug });
    const content = `bytes to purge ${ikey()}`;
    const sha = createHash('sha256').update(content).digest('hex');
    let homeTask;
    for (const [slug, a] of [[ws.slug, agent], [home.slug, homeAgent]]) {
      const s = ok(await mcp.tool('start_session', { agent_id: a.agent_id, message: 'hi', idempotency_key: ikey(), workspace: slug }), 'start');
      ok(await mcp.tool('write_task_file', { task_id: s.session.task_id, path: 'p.txt', content }), 'write');
      if (slug === home.slug) homeTask = s.session.task_id;
    }
    const copies = r2Keys().filter((k) => k.endsWith(`/${sha}`));
    assert.equal(copies.length, 2, `one copy under each workspace: ${JSON.stringify(copies)}`);
    assert.ok(copies.every((k) => k.startsWith('w/ws_')), JSON.stringify(copies));
    ok(await mcp.tool('delete_workspace', { workspace: ws.slug, confirm: ws.slug }), 'delete_workspace');
    await triggerCron();
    const left = r2Keys().filter((k) => k.endsWith(`/${sha}`));
    assert.equal(left.length, 1, `the deleted workspace's copy is gone: ${JSON.stringify(left)}`);
    const read = ok(await mcp.tool('read_task_file', { task_id: homeTask, path: 'p.txt' }), 'read_task_file');
    assert.equal(read.content, content);
  });

  test('a goal with a low max_iterations stops at the limit', async () => {
    const { mcp, ws, agent } = await setup();
    const s = ok(await mcp.tool('start_session', { agent_id: agent.agent_id, message: 'hello', idempotency_key: ikey(), workspace: ws.slug }), 'start');
    const sid = s.session.session_id;
    const first = await readTurn(mcp.tool, { session_id: sid, cursor: s.cursor, message_id: s.message_id });
    ok(await mcp.tool('set_goal', { session_id: sid, objective: 'never', criteria: ['unreachable words'], max_iterations: 2, idempotency_key: ikey('goal') }), 'set_goal');
    const rest = await readTurn(mcp.tool, { session_id: sid, cursor: first.cursor, deadlineMs: 60_000 });
    const checks = rest.events.filter((e) => e.type === 'goal_check');
    assert.deepEqual(checks.map((c) => [c.iteration, c.status]), [[1, 'active'], [2, 'limit_reached']], JSON.stringify(checks));
    assert.equal(texts(rest.events, 'user_message').length, 2, 'two turns, no third');
    const g = ok(await mcp.tool('get_goal', { session_id: sid }), 'get_goal').goal;
    assert.equal(g.status, 'limit_reached');
    assert.equal(g.iterations, 2);
    assert.match(g.stopped_reason, /max_iterations/);
    assert.equal(g.last_verdicts[0].met, false);
    const after = ok(await mcp.tool('read_session', { session_id: sid, cursor: rest.cursor, wait_seconds: 1 }), 'read after');
    assert.deepEqual(after.events, [], 'no third iteration');
    // The session takes ordinary messages again.
    const sent = ok(await mcp.tool('send_message', { session_id: sid, message: 'thanks', idempotency_key: ikey() }), 'send');
    const t = await readTurn(mcp.tool, { session_id: sid, cursor: sent.cursor, message_id: sent.message_id });
    assert.deepEqual(texts(t.events), ['echo: thanks']);
  });
});
