// Tasks as the unit of work (issue 4, "Shown by tests"), end to end against wrangler dev with the echo
// harness: two agents in one task write one folder and see each other's files; a published artifact and
// a shared session fetched anonymously over HTTP, and 404 once turned off; a hand-off that carries the
// conversation and the files, exactly once under 10 concurrent retries; threads that show the tree;
// deleting a workspace leaves nothing of it readable and moves its credit home; oversized files, bad
// paths and another account's ids get clear errors. The main flow runs over the official TypeScript SDK
// v1 client; concurrent retries over a bare JSON-RPC client.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  BASE, MCP_URL, rest, createAccount, createKey, createWorkspace, createAgent, addCredit, ok, toolErrorCode,
  rawMcp, readTurn, readAll, ikey, texts, uniq, checked, toolError,
} from './helpers.mjs';

async function sdkClient(key) {
  const client = new Client({ name: 'agentsky-e2e-tasks', version: '0.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(MCP_URL), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  }));
  return checked(client, 'TS SDK v1');
}

/** GET a public link with no credentials at all. */
async function anon(url) {
  const res = await fetch(url, { redirect: 'manual' });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** start_session and read its first turn to the end; returns { started, sid, turn }. */
async function startAndRead(tool, args) {
  const started = ok(await tool('start_session', { idempotency_key: ikey('start'), ...args }), 'start_session');
  const sid = started.session.session_id;
  const turn = await readTurn(tool, { session_id: sid, cursor: started.cursor, message_id: started.message_id });
  return { started, sid, turn };
}

/** send_message and read its turn to the end. */
async function sendAndRead(tool, session_id, message) {
  const sent = ok(await tool('send_message', { session_id, message, idempotency_key: ikey('send') }), 'send_message');
  return readTurn(tool, { session_id, cursor: sent.cursor, message_id: sent.message_id });
}

describe('tasks: two agents, one folder, artifacts, share links, hand-offs and threads (TS SDK v1)', () => {
  let acct; let c; let tool;
  before(async () => {
    acct = await createAccount();
    c = await sdkClient(acct.key);
    tool = (name, args) => c.callTool({ name, arguments: args });
  });
  after(async () => { await c?.close(); });

  test('two agents in a task without lanes read and write one folder and see each other\'s files; threads show the tree', async () => {
    const ws = await createWorkspace(acct.key);
    const planner = await createAgent(acct.key, { workspace: ws.slug, name: 'Planner' });
    const reviewer = await createAgent(acct.key, { workspace: ws.slug, name: 'Reviewer' });

    // The first session's id is the task id. A new task gives each session its own lane; this one is one
    // shared folder.
    const a = await startAndRead(tool, { agent_id: planner.agent_id, message: 'hello', workspace: ws.slug });
    const task = a.started.session.task_id;
    assert.equal(task, a.sid);
    assert.equal(ok(await tool('get_task', { task_id: task }), 'get_task').settings.lanes, true, 'lanes by default');
    assert.equal(ok(await tool('set_task_settings', { task_id: task, lanes: false }), 'lanes off').lanes, false);
    // The first agent writes plan.md through its harness.
    const wrote = await sendAndRead(tool, a.sid, '/write plan.md step one: parse');
    assert.equal(wrote.events.find((e) => e.type === 'tool_result')?.is_error, false, JSON.stringify(wrote.events));

    // The second joins the same task by task_id (no workspace: it is derived) and writes review.md.
    const b = await startAndRead(tool, { agent_id: reviewer.agent_id, task_id: task, message: '/write review.md plan looks fine' });
    assert.equal(b.started.session.task_id, task, 'the second session joined the task');
    assert.notEqual(b.sid, a.sid);

    // Both files in one folder, each with its writer.
    let files = ok(await tool('list_task_files', { task_id: task }), 'list_task_files').files;
    assert.deepEqual(files.map((f) => [f.path, f.writer_session_id, f.version]),
      [['plan.md', a.sid, 1], ['review.md', b.sid, 1]]);

    // Each agent changes the other's file: the folder is one, and every write is a new version by its writer.
    await sendAndRead(tool, b.sid, '/write plan.md step one: parse, then validate');
    await sendAndRead(tool, a.sid, '/write review.md plan looks fine; validated too');
    files = ok(await tool('list_task_files', { task_id: task }), 'list_task_files').files;
    assert.deepEqual(files.map((f) => [f.path, f.writer_session_id, f.version]),
      [['plan.md', b.sid, 2], ['review.md', a.sid, 2]]);
    const plan = ok(await tool('read_task_file', { task_id: task, path: 'plan.md' }), 'read plan.md');
    assert.equal(plan.content, 'step one: parse, then validate');
    assert.equal(plan.writer_session_id, b.sid);
    const planV1 = ok(await tool('read_task_file', { task_id: task, path: 'plan.md', version: 1 }), 'read plan.md v1');
    assert.equal(planV1.content, 'step one: parse');
    assert.equal(planV1.writer_session_id, a.sid);

    // An operator writes too; the path is normalised into the folder, and the write is the key's.
    const w = ok(await tool('write_task_file', { task_id: task, path: 'task/./notes//todo.md', content: 'ship it' }), 'write_task_file');
    assert.equal(w.path, 'notes/todo.md');
    assert.equal(w.writer_session_id, null);
    assert.equal(typeof w.writer_key_id, 'string');
    // Writing the same text again adds no version.
    assert.equal(ok(await tool('write_task_file', { task_id: task, path: 'notes/todo.md', content: 'ship it' }), 'rewrite').version, 1);
    // One name is one file: a decomposed name (e + combining acute) is stored composed (NFC, by the
    // runtime's own Unicode tables), and the composed spelling reads the same file.
    const decomposed = ok(await tool('write_task_file', { task_id: task, path: 'notes/cafe\u0301.md', content: 'espresso' }), 'write decomposed');
    assert.equal(decomposed.path, 'notes/caf\u00e9.md');
    assert.equal(ok(await tool('read_task_file', { task_id: task, path: 'notes/caf\u00e9.md' }), 'read composed').content, 'espresso');

    // collect_result names the task and what each session wrote.
    const ra = ok(await tool('collect_result', { session_id: a.sid }), 'collect_result a');
    const rb = ok(await tool('collect_result', { session_id: b.sid }), 'collect_result b');
    assert.equal(ra.task_id, task); assert.equal(rb.task_id, task);
    assert.ok(ra.files.some((f) => f.path === 'review.md'), JSON.stringify(ra.files));
    assert.ok(rb.files.some((f) => f.path === 'plan.md'), JSON.stringify(rb.files));
    assert.equal(rb.last_reply, 'echo: /write plan.md step one: parse, then validate');

    // One task, not two; its sessions, no open requests.
    const tasks = ok(await tool('list_tasks', { workspace: ws.slug }), 'list_tasks').tasks;
    assert.equal(tasks.length, 1, JSON.stringify(tasks));
    assert.equal(tasks[0].task_id, task);
    assert.equal(tasks[0].sessions, 2);
    const detail = ok(await tool('get_task', { task_id: task }), 'get_task');
    assert.deepEqual(detail.sessions.map((s) => s.session_id), [a.sid, b.sid]);
    assert.deepEqual(detail.open_requests, []);

    // Threads: the root first, then the helper, each with its agent, model, status and spend.
    const threads = ok(await tool('read_session_threads', { session_id: b.sid }), 'read_session_threads');
    assert.equal(threads.task_id, task);
    assert.deepEqual(threads.threads.map((t) => [t.session_id, t.relation, t.agent_name, t.model, t.status, t.spent_cents]),
      [[a.sid, 'root', 'Planner', 'echo-1', 'idle', 0], [b.sid, 'helper', 'Reviewer', 'echo-1', 'idle', 0]]);
  });

  test('a published artifact is served anonymously with its content type until its link is turned off', async () => {
    const ws = await createWorkspace(acct.key);
    const agent = await createAgent(acct.key, { workspace: ws.slug });
    const { sid: task } = await startAndRead(tool, { agent_id: agent.agent_id, message: '/write site/report.md # Report', workspace: ws.slug });
    const html = '<!doctype html><h1>Report</h1><p>caf\u00e9 \u2713</p>';
    ok(await tool('write_task_file', { task_id: task, path: 'site/index.html', content: html }), 'write index.html');

    const art = ok(await tool('publish_artifact', { task_id: task, path: 'site/index.html' }), 'publish_artifact');
    assert.match(art.artifact_id, /^art_/);
    assert.equal(art.name, 'index.html');
    assert.equal(art.content_type, 'text/html; charset=utf-8');
    assert.equal(art.shared, false);
    // The agent's file is in its lane until it lands: published as its session sees it.
    const md = ok(await tool('publish_artifact', { task_id: task, path: 'site/report.md', session_id: task }), 'publish report.md');
    assert.equal(md.content_type, 'text/markdown; charset=utf-8');

    const shared = ok(await tool('share_artifact', { artifact_id: art.artifact_id }), 'share_artifact');
    const url = shared.share_url;
    assert.ok(url.startsWith(`${BASE}/a/`), url);
    const token = url.slice(`${BASE}/a/`.length);
    assert.ok(token.length >= 22 && /^[A-Za-z0-9_-]+$/.test(token), `an unguessable token of at least 128 bits: ${token}`);

    // Anyone with the link, no key: the bytes as published, with their content type, sandboxed.
    const page = await anon(url);
    assert.equal(page.status, 200);
    assert.equal(page.text, html);
    assert.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.equal(page.headers.get('content-security-policy'), "sandbox; frame-ancestors 'none'");
    // A later write does not change what was published.
    ok(await tool('write_task_file', { task_id: task, path: 'site/index.html', content: '<h1>v2</h1>' }), 'write v2');
    assert.equal((await anon(url)).text, html);
    const listed = ok(await tool('list_artifacts', { task_id: task }), 'list_artifacts').artifacts;
    assert.deepEqual(listed.map((x) => [x.artifact_id, x.shared]).sort(), [[art.artifact_id, true], [md.artifact_id, false]].sort());

    const mdShared = ok(await tool('share_artifact', { artifact_id: md.artifact_id }), 'share report.md');
    const mdPage = await anon(mdShared.share_url);
    assert.equal(mdPage.status, 200);
    assert.equal(mdPage.text, '# Report');
    assert.equal(mdPage.headers.get('content-type'), 'text/markdown; charset=utf-8');

    // Off: 404 at once; on again: a new link, and the old one stays dead.
    const off = ok(await tool('share_artifact', { artifact_id: art.artifact_id, enabled: false }), 'unshare');
    assert.equal(off.share_url, null);
    assert.equal((await anon(url)).status, 404);
    const again = ok(await tool('share_artifact', { artifact_id: art.artifact_id }), 'share again');
    assert.notEqual(again.share_url, url);
    assert.equal((await anon(again.share_url)).status, 200);
    assert.equal((await anon(url)).status, 404);
    // A made-up token is a 404 too.
    assert.equal((await anon(`${BASE}/a/${'A'.repeat(43)}`)).status, 404);
  });

  test('a shared session renders its transcript anonymously; turned off, the link 404s', async () => {
    const ws = await createWorkspace(acct.key);
    const agent = await createAgent(acct.key, { workspace: ws.slug });
    const { sid } = await startAndRead(tool, { agent_id: agent.agent_id, message: 'the <b>quarterly</b> numbers & more', workspace: ws.slug });
    const shared = ok(await tool('share_session', { session_id: sid, view_only: true }), 'share_session');
    assert.equal(shared.view_only, true);
    const url = shared.share_url;
    assert.ok(url.startsWith(`${BASE}/s/`), url);
    const page = await anon(url);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type'), /^text\/html/);
    assert.ok(page.text.includes('echo: the &lt;b&gt;quarterly&lt;/b&gt; numbers &amp; more'), page.text);
    assert.ok(!page.text.includes('<b>quarterly'), 'the transcript is escaped');
    assert.ok(!page.text.includes('<form'), 'a view-only link offers no form');
    // A view-only link takes no messages.
    const post = await fetch(url, { method: 'POST', body: new URLSearchParams({ message: 'hi' }), redirect: 'manual' });
    assert.equal(post.status, 403);

    const off = ok(await tool('share_session', { session_id: sid, enabled: false }), 'share_session off');
    assert.equal(off.share_url, null);
    assert.equal((await anon(url)).status, 404, 'off means gone at once');
    // The session itself is untouched.
    assert.deepEqual(texts((await readAll(tool, sid)).events), ['echo: the <b>quarterly</b> numbers & more']);
  });

  test('a hand-off carries the conversation and the files, exactly once under 10 concurrent retries', async () => {
    const ws = await createWorkspace(acct.key);
    const first = await createAgent(acct.key, { workspace: ws.slug, name: 'First' });
    const handle = `closer-${uniq()}`;
    const closer = await createAgent(acct.key, { workspace: ws.slug, name: 'Closer', handle });
    const { sid: source } = await startAndRead(tool, { agent_id: first.agent_id, message: '/write notes.md the secret word is tangerine', workspace: ws.slug });
    await sendAndRead(tool, source, 'remember: ship on friday');

    const mcp = rawMcp(acct.key);
    const args = { session_id: source, agent_id: `@${handle}`, model: 'echo-9', thinking: 'high', idempotency_key: ikey('handoff') };
    const answers = (await Promise.all(Array.from({ length: 10 }, () => mcp.tool('hand_off_session', args))))
      .map((r, i) => ok(r, `hand_off_session #${i}`));
    for (const [i, h] of answers.entries()) assert.deepEqual(h, answers[0], `answer #${i} differs from #0`);
    const h = answers[0];
    assert.match(h.handoff_id, /^ho_/);
    assert.equal(h.status, 'completed');
    assert.equal(h.source_session_id, source);
    const target = h.target_session.session.session_id;
    assert.equal(h.target_session_id, target);
    // And once more over the SDK client, after the fact: the same hand-off.
    assert.deepEqual(ok(await tool('hand_off_session', args), 'hand_off_session (late retry)'), h);
    assert.equal(toolErrorCode(await tool('hand_off_session', { ...args, thinking: 'low' }), 'same key, other input'), 'idempotency_conflict');

    // Exactly one new session: the original and the target.
    const sessions = ok(await tool('list_sessions', { workspace: ws.slug }), 'list_sessions').sessions;
    assert.deepEqual(sessions.map((s) => s.session_id).sort(), [source, target].sort());

    // The target: the other agent, on the chosen model and thinking, in the same task (so the same files).
    const t = ok(await tool('get_session', { session_id: target }), 'get_session target');
    assert.equal(t.agent_id, closer.agent_id);
    assert.equal(t.model, 'echo-9');
    assert.equal(t.thinking, 'high');
    assert.equal(t.task_id, source);
    assert.equal(t.relation, 'handoff');
    assert.equal(t.parent_session_id, source);
    const turn = await readTurn(tool, { session_id: target, cursor: h.target_session.cursor, message_id: h.target_session.message_id });
    const reply = texts(turn.events)[0];
    // Its first message carries the conversation so far (both turns), and it names the source.
    for (const s of ['tangerine', 'ship on friday', source]) assert.ok(reply.includes(s), `the brief mentions ${s}: ${reply}`);
    const log = await readAll(tool, target);
    assert.equal(log.events.filter((e) => e.type === 'user_message').length, 1, 'the target got its brief once');
    // The source's work was not landed: the target continues in a copy of its lane.
    const file = ok(await tool('read_task_file', { task_id: t.task_id, path: 'notes.md', session_id: target }), 'read notes.md as the target sees it');
    assert.equal(file.content, 'the secret word is tangerine');
    await sendAndRead(tool, target, '/write notes.md the secret word is tangerine; shipped');
    assert.equal(ok(await tool('read_task_file', { task_id: source, path: 'notes.md', session_id: target }), 'read').writer_session_id, target);
    assert.equal(ok(await tool('read_task_file', { task_id: source, path: 'notes.md', session_id: source }), 'read').content, 'the secret word is tangerine', 'the source\'s lane is its own');
    // The original stays, idle and untouched.
    assert.equal(ok(await tool('get_session', { session_id: source }), 'get_session source').status, 'idle');
    assert.deepEqual(texts((await readAll(tool, source)).events, 'user_message'), ['/write notes.md the secret word is tangerine', 'remember: ship on friday']);

    const got = ok(await tool('get_handoff', { handoff_id: h.handoff_id }), 'get_handoff');
    assert.equal(got.status, 'completed');
    assert.equal(got.target_session.session_id, target);

    // Threads: root, then the hand-off under it.
    const threads = ok(await tool('read_session_threads', { session_id: target }), 'read_session_threads').threads;
    assert.deepEqual(threads.map((x) => [x.session_id, x.relation, x.parent_session_id, x.agent_name, x.model]),
      [[source, 'root', null, 'First', 'echo-1'], [target, 'handoff', source, 'Closer', 'echo-9']]);
  });

  test('threads show the whole tree: root, helpers, then hand-offs of a helper', async () => {
    const ws = await createWorkspace(acct.key);
    const agent = await createAgent(acct.key, { workspace: ws.slug, name: 'Worker' });
    const root = await startAndRead(tool, { agent_id: agent.agent_id, message: 'root', workspace: ws.slug });
    const helper = await startAndRead(tool, { agent_id: agent.agent_id, message: 'helper', task_id: root.sid });
    const h = ok(await tool('hand_off_session', { session_id: helper.sid, agent_id: agent.agent_id, idempotency_key: ikey('ho') }), 'hand_off');
    const target = h.target_session.session.session_id;
    const second = await startAndRead(tool, { agent_id: agent.agent_id, message: 'second helper', task_id: root.sid });
    for (const sid of [root.sid, helper.sid, target, second.sid]) {
      const threads = ok(await tool('read_session_threads', { session_id: sid }), `threads from ${sid}`);
      assert.equal(threads.task_id, root.sid);
      assert.deepEqual(threads.threads.map((x) => [x.session_id, x.relation, x.parent_session_id]), [
        [root.sid, 'root', null], [helper.sid, 'helper', null], [second.sid, 'helper', null], [target, 'handoff', helper.sid],
      ], `threads seen from ${sid}`);
    }
    assert.equal(ok(await tool('get_task', { task_id: root.sid }), 'get_task').sessions.length, 4);
  });
});

describe('tasks: clear errors for oversized files, bad paths and another account\'s ids; the catalog', () => {
  let acct; let bo; let mcp; let boMcp;
  let task; let artifact; let handoff; let routine; let ws;
  before(async () => {
    acct = await createAccount();
    bo = await createAccount();
    mcp = rawMcp(acct.key);
    boMcp = rawMcp(bo.key);
    ws = await createWorkspace(acct.key);
    const agent = await createAgent(acct.key, { workspace: ws.slug });
    const s = await startAndRead(mcp.tool, { agent_id: agent.agent_id, message: '/write a.md alpha', workspace: ws.slug });
    task = s.sid;
    // The agent's file is in its lane until it lands: published as the session sees it.
    artifact = ok(await mcp.tool('publish_artifact', { task_id: task, path: 'a.md', session_id: task }), 'publish').artifact_id;
    handoff = ok(await mcp.tool('hand_off_session', { session_id: task, agent_id: agent.agent_id, idempotency_key: ikey() }), 'hand_off').handoff_id;
    routine = ok(await mcp.tool('create_routine', { name: 'r', agent_id: agent.agent_id, message: 'm', workspace: ws.slug }), 'create_routine').routine_id;
  });

  test('files over 256 KiB are refused with payload_too_large; exactly 256 KiB is fine', async () => {
    const limit = 256 * 1024;
    const big = await mcp.tool('write_task_file', { task_id: task, path: 'big.txt', content: 'x'.repeat(limit + 1) });
    assert.equal(toolErrorCode(big, 'write 256 KiB + 1'), 'payload_too_large');
    assert.match(toolError(big).message, /256 KiB/);
    // Multi-byte text counts in bytes: 87,382 three-byte characters are 262,146 bytes.
    const wide = await mcp.tool('write_task_file', { task_id: task, path: 'wide.txt', content: '\u2713'.repeat(87_382) });
    assert.equal(toolErrorCode(wide, 'write 256 KiB + 2 in multi-byte text'), 'payload_too_large');
    const exact = ok(await mcp.tool('write_task_file', { task_id: task, path: 'big.txt', content: 'y'.repeat(limit) }), 'write exactly 256 KiB');
    assert.equal(exact.size_bytes, limit);
    const back = ok(await mcp.tool('read_task_file', { task_id: task, path: 'big.txt' }), 'read it back');
    assert.equal(back.content.length, limit);
    const paths = ok(await mcp.tool('list_task_files', { task_id: task }), 'list').files.map((f) => f.path);
    assert.ok(!paths.includes('wide.txt'), 'a refused write leaves nothing behind');
  });

  test('bad paths are refused with invalid_params naming `path`, from operators and from agents', async () => {
    for (const path of ['../x.md', 'a/../../x.md', '/etc/passwd', '~/x', 'C:/x', 'a\\b.md', 'dir/', '', '.', 'a\u0000b']) {
      for (const [name, args] of [
        ['write_task_file', { task_id: task, path, content: 'x' }],
        ['read_task_file', { task_id: task, path }],
        ['publish_artifact', { task_id: task, path }],
      ]) {
        const r = await mcp.tool(name, args);
        assert.equal(toolErrorCode(r, `${name} ${JSON.stringify(path)}`), 'invalid_params');
        assert.match(toolError(r).message, /`path`/, `${name} ${JSON.stringify(path)}: ${toolError(r).message}`);
      }
    }
    // A path that is fine but names no file: not_found, not a crash.
    assert.equal(toolErrorCode(await mcp.tool('read_task_file', { task_id: task, path: 'nope.md' }), 'missing file'), 'not_found');
    // An agent's harness write outside the folder fails visibly as a tool result; nothing is written.
    const sent = ok(await mcp.tool('send_message', { session_id: task, message: '/write ../escape.md out', idempotency_key: ikey() }), 'send');
    const turn = await readTurn(mcp.tool, { session_id: task, cursor: sent.cursor, message_id: sent.message_id });
    const result = turn.events.find((e) => e.type === 'tool_result');
    assert.equal(result?.is_error, true, JSON.stringify(turn.events));
    const paths = ok(await mcp.tool('list_task_files', { task_id: task }), 'list').files.map((f) => f.path);
    assert.ok(!paths.some((p) => p.includes('escape')), JSON.stringify(paths));
  });

  test('another account\'s task, session, artifact, hand-off and routine ids are not_found; nothing changes', async () => {
    const calls = [
      ['get_task', { task_id: task }],
      ['list_task_files', { task_id: task }],
      ['read_task_file', { task_id: task, path: 'a.md' }],
      ['write_task_file', { task_id: task, path: 'a.md', content: 'pwned' }],
      ['publish_artifact', { task_id: task, path: 'a.md' }],
      ['list_artifacts', { task_id: task }],
      ['share_artifact', { artifact_id: artifact }],
      ['get_session', { session_id: task }],
      ['read_session', { session_id: task }],
      ['collect_result', { session_id: task }],
      ['share_session', { session_id: task }],
      ['read_session_threads', { session_id: task }],
      ['hand_off_session', { session_id: task, agent_id: 'ag_00000000000000000000000000', idempotency_key: ikey() }],
      ['get_handoff', { handoff_id: handoff }],
      ['get_goal', { session_id: task }],
      ['run_routine', { routine_id: routine, idempotency_key: ikey() }],
      ['answer_request', { task_id: task, request_id: 'req_00000000000000000000000000', answer: 'approve' }],
    ];
    for (const [name, args] of calls) {
      const r = await boMcp.tool(name, args);
      assert.equal(toolErrorCode(r, `${name} on another account's id`), 'not_found', `${name}: ${JSON.stringify(r.structuredContent)}`);
    }
    // Their workspace is no workspace of Bo's.
    const listed = await boMcp.tool('list_tasks', { workspace: ws.slug });
    assert.ok(['not_found', 'forbidden'].includes(toolErrorCode(listed, 'list_tasks in another account\'s workspace')));
    // Made-up ids of every kind: not_found as well, never a crash.
    for (const [name, args] of [
      ['get_task', { task_id: 'ses_00000000000000000000000000' }],
      ['share_artifact', { artifact_id: 'art_00000000000000000000000000' }],
      ['get_handoff', { handoff_id: 'ho_00000000000000000000000000' }],
    ]) {
      assert.equal(toolErrorCode(await mcp.tool(name, args), `${name} ${JSON.stringify(args)}`), 'not_found');
    }
    // Ids of no kind's shape: refused by the published pattern, naming the field.
    for (const [name, args, field] of [
      ['get_task', { task_id: 'not-an-id' }, 'task_id'],
      ['get_handoff', { handoff_id: 'ho_x' }, 'handoff_id'],
    ]) {
      const e = toolError(await mcp.tool(name, args), `${name} ${JSON.stringify(args)}`);
      assert.equal(e.code, 'invalid_params');
      assert.match(e.message, new RegExp(`^\`${field}\` must be an? [a-z -]+ id like`));
    }
    // Nothing Bo tried changed anything.
    const file = ok(await mcp.tool('read_task_file', { task_id: task, path: 'a.md', session_id: task }), 'read a.md');
    assert.equal(file.content, 'alpha');
    assert.equal(file.version, 1);
    assert.equal(toolErrorCode(await mcp.tool('read_task_file', { task_id: task, path: 'a.md' }), 'a.md in the base'), 'not_found', 'nothing reached the base');
    assert.equal(ok(await mcp.tool('list_artifacts', { task_id: task }), 'list_artifacts').artifacts.length, 1);
  });

  test('search_catalog: own agents and other accounts\' public ones by @handle, ranked by the words given; never a private one', async () => {
    const tag = uniq();
    const own = await createWorkspace(acct.key);
    const writer = await createAgent(acct.key, { workspace: own.slug, handle: `writer-${tag}`, description: `Writes blog posts ${tag}`, categories: ['writing'] });
    await createAgent(acct.key, { workspace: own.slug, handle: `reviewer-${tag}`, description: `Reviews rust pull requests ${tag}`, categories: ['code'] });
    const theirs = await createWorkspace(bo.key);
    await createAgent(bo.key, { workspace: theirs.slug, handle: `rusty-${tag}`, harness: 'echo', description: `Rust refactoring ${tag}`, categories: ['rust', 'code'], is_public: true, price_cents_per_run: 25 });
    await createAgent(bo.key, { workspace: theirs.slug, handle: `private-${tag}`, description: `rust code too ${tag}` });

    const hits = ok(await mcp.tool('search_catalog', { query: `rust code ${tag}`, workspace: own.slug }), 'search_catalog').agents;
    const mine = hits.map((a) => a.handle).filter((h) => h?.endsWith(tag));
    assert.deepEqual(mine.slice(0, 2), [`@rusty-${tag}`, `@reviewer-${tag}`], `ranked by relevance: ${JSON.stringify(mine)}`);
    assert.ok(!mine.includes(`@private-${tag}`), 'another account\'s private agent is never listed');
    const rusty = hits.find((a) => a.handle === `@rusty-${tag}`);
    assert.equal(rusty.source, 'public');
    assert.equal(rusty.pricing.per_run_cents, 25);
    assert.ok(Array.isArray(rusty.requirements));
    assert.equal(hits.find((a) => a.handle === `@reviewer-${tag}`).source, 'own');
    // A handle from the catalog starts a session.
    const s = await startAndRead(mcp.tool, { agent_id: `@writer-${tag}`, message: 'draft', workspace: own.slug });
    assert.equal(s.started.session.agent_id, writer.agent_id);
    assert.deepEqual(texts(s.turn.events), ['echo: draft']);
  });
});

describe('tasks: deleting a workspace', () => {
  let acct; let mcp;
  before(async () => { acct = await createAccount(); mcp = rawMcp(acct.key); });

  test('leaves nothing of it readable (every tool on its ids answers not_found) and moves its credit home', async () => {
    const slug = `doomed-${uniq()}`;
    const created = await rest('POST', '/v1/workspaces', { key: acct.key, body: { name: 'Doomed', slug } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(await addCredit(slug, 700), 700);
    const homeBefore = ok(await mcp.tool('get_usage', {}), 'get_usage (home)').balance_cents;

    const handle = `doomed-${uniq()}`;
    const agent = await createAgent(acct.key, { workspace: slug, handle });
    // An idle session with a file, an artifact shared, the session shared, a hand-off, a routine, a goal…
    const idle = await startAndRead(mcp.tool, { agent_id: agent.agent_id, message: '/write report.md q3 numbers', workspace: slug });
    const art = ok(await mcp.tool('publish_artifact', { task_id: idle.sid, path: 'report.md', session_id: idle.sid }), 'publish');
    const artUrl = ok(await mcp.tool('share_artifact', { artifact_id: art.artifact_id }), 'share_artifact').share_url;
    const sesUrl = ok(await mcp.tool('share_session', { session_id: idle.sid }), 'share_session').share_url;
    assert.equal((await anon(artUrl)).status, 200);
    assert.equal((await anon(sesUrl)).status, 200);
    const ho = ok(await mcp.tool('hand_off_session', { session_id: idle.sid, agent_id: agent.agent_id, idempotency_key: ikey() }), 'hand_off');
    const routine = ok(await mcp.tool('create_routine', { name: 'nightly', agent_id: agent.agent_id, message: 'go', workspace: slug }), 'create_routine');
    // …and a session in the middle of a long turn.
    const busy = ok(await mcp.tool('start_session', { agent_id: agent.agent_id, message: '/sleep 30 long job', idempotency_key: ikey(), workspace: slug }), 'start busy');
    const busyId = busy.session.session_id;
    const first = ok(await mcp.tool('read_session', { session_id: busyId, cursor: busy.cursor, message_id: busy.message_id, wait_seconds: 10 }), 'read busy');
    assert.equal(first.status, 'running');
    const locked = await createKey(acct.key, { scopes: ['read', 'write'], workspace: slug });

    // Refusals first: a wrong confirmation, the personal workspace, a workspace-locked key.
    assert.equal(toolErrorCode(await mcp.tool('delete_workspace', { workspace: slug, confirm: slug.slice(0, -1) }), 'wrong confirm'), 'invalid_params');
    assert.equal(toolErrorCode(await mcp.tool('delete_workspace', { workspace: acct.workspace.slug, confirm: acct.workspace.slug }), 'personal'), 'forbidden');
    assert.equal(toolErrorCode(await rawMcp(locked.key).tool('delete_workspace', { workspace: slug, confirm: slug }), 'locked key'), 'forbidden');
    assert.equal(ok(await mcp.tool('get_session', { session_id: idle.sid }), 'still there').status, 'idle');

    const done = ok(await mcp.tool('delete_workspace', { workspace: slug, confirm: slug }), 'delete_workspace');
    assert.equal(done.deleted, true);
    assert.equal(done.sessions_stopped, 3, 'the idle session, the hand-off target and the busy one');
    assert.equal(done.credit_moved_cents, 700);
    assert.equal(ok(await mcp.tool('get_usage', {}), 'get_usage (home)').balance_cents, homeBefore + 700, 'the credit is home');

    const target = ho.target_session.session.session_id;
    const gone = [];
    for (const sid of [idle.sid, target, busyId]) {
      gone.push(
        ['get_session', { session_id: sid }],
        ['read_session', { session_id: sid }],
        ['collect_result', { session_id: sid }],
        ['read_session_threads', { session_id: sid }],
        ['get_goal', { session_id: sid }],
        ['share_session', { session_id: sid }],
        ['send_message', { session_id: sid, message: 'anyone?', idempotency_key: ikey() }],
        ['stop_session', { session_id: sid }],
      );
    }
    gone.push(
      ['get_task', { task_id: idle.sid }],
      ['get_task', { task_id: busyId }],
      ['list_task_files', { task_id: idle.sid }],
      ['read_task_file', { task_id: idle.sid, path: 'report.md' }],
      ['write_task_file', { task_id: idle.sid, path: 'x.md', content: 'x' }],
      ['list_artifacts', { task_id: idle.sid }],
      ['publish_artifact', { task_id: idle.sid, path: 'report.md' }],
      ['share_artifact', { artifact_id: art.artifact_id }],
      ['get_handoff', { handoff_id: ho.handoff_id }],
      ['run_routine', { routine_id: routine.routine_id, idempotency_key: ikey() }],
      ['start_session', { agent_id: agent.agent_id, message: 'hi', idempotency_key: ikey() }],
      ['start_session', { agent_id: agent.agent_id, message: 'hi', task_id: idle.sid, idempotency_key: ikey() }],
      ['list_agents', { workspace: slug }],
      ['list_sessions', { workspace: slug }],
      ['list_tasks', { workspace: slug }],
      ['list_routines', { workspace: slug }],
      ['describe_workspace', { workspace: slug }],
      ['delete_workspace', { workspace: slug, confirm: slug }],
    );
    const wrong = [];
    for (const [name, args] of gone) {
      const r = await mcp.tool(name, args);
      const code = r.isError ? toolError(r).code : 'ok';
      if (code !== 'not_found') wrong.push(`${name} ${JSON.stringify(args)} -> ${code} ${JSON.stringify(r.structuredContent).slice(0, 300)}`);
    }
    assert.deepEqual(wrong, [], 'every tool on the deleted workspace\'s ids answers not_found');

    // Its public links are dead, its key is gone, and it is no longer listed.
    assert.equal((await anon(artUrl)).status, 404);
    assert.equal((await anon(sesUrl)).status, 404);
    assert.equal((await rest('GET', '/v1/keys', { key: locked.key })).status, 401, 'its locked keys are gone');
    const wss = ok(await mcp.tool('list_workspaces', {}), 'list_workspaces').workspaces.map((w) => w.slug);
    assert.ok(!wss.includes(slug), JSON.stringify(wss));
    // Its catalog handle no longer resolves.
    const hits = ok(await mcp.tool('search_catalog', { query: 'doomed' }), 'search_catalog').agents;
    assert.ok(!hits.some((a) => a.handle === `@${handle}`), JSON.stringify(hits));
    assert.equal(toolErrorCode(await mcp.tool('start_session', { agent_id: `@${handle}`, message: 'hi', idempotency_key: ikey() }), 'start by the deleted handle'), 'not_found');
  });
});
