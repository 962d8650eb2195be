// The session server (issue 6, "Shown by tests"), end to end against wrangler dev: an agent session's own
// MCP server at POST /v1/session/mcp, called with its session token (sst_…) through the official
// TypeScript SDK v1 client, with the operator on /v1/mcp answering. ask_user answered through
// answer_request, the waiting call woken the moment the answer lands; request_access decided by a person,
// by policies and by a persistent grant, get_credential returning the env and refusing what is not active;
// two sessions with lanes seeing each other's files and overlaps, one landing (its checks on a runner of the
// workspace, in a fresh checkout; refused while none is online), the other behind and then in conflict;
// two lanes editing one file in different places (both land, merged) and in the same place (a conflict
// with its region, reconciled, landed); the sixth access request in a minute refused (land and remember_command
// spend none of it); a token of an ended session refused; and no
// tool reaching another task's or workspace's data. Results are JSON text; errors end with `(code N)`.
import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  BASE, rest, createAccount, createWorkspace, createAgent, ok, toolErrorCode, rawMcp, readTurn, readAll, ikey,
  texts, checked, SANDBOXES, addCredit,
} from './helpers.mjs';

const AGENT_URL = `${BASE}/v1/session/mcp`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** One JSON-RPC POST to the session server with a bearer; { status, body } (body parsed when JSON). */
async function agentPost(token, method, params, headers = {}) {
  const res = await fetch(AGENT_URL, {
    method: 'POST',
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
      ...headers,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.timeout(90_000),
  });
  const text = await res.text();
  let body = text;
  try { body = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, body };
}

/**
 * The session's side: an SDK client on /v1/session/mcp with its token, its schemas checked like every
 * client's here. `call` returns the CallToolResult.
 */
async function agentClient(token) {
  const sdk = new Client({ name: 'agentsky-e2e-session-server', version: '0.0.0' });
  await sdk.connect(new StreamableHTTPClientTransport(new URL(AGENT_URL), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  }));
  checked(sdk, AGENT_URL);
  const call = (name, args = {}) => sdk.callTool({ name, arguments: args }, undefined, { timeout: 120_000 });
  return { sdk, call, close: () => sdk.close() };
}

/** A session tool's JSON result (asserts success). */
function aok(result, what) {
  assert.equal(result.isError, false, `${what} failed: ${JSON.stringify(result)}`);
  assert.equal(result.content?.[0]?.type, 'text', `${what}: JSON text: ${JSON.stringify(result)}`);
  return JSON.parse(result.content[0].text);
}

/** A session tool's error text, ending with `(code N)` (asserts failure). */
function aerr(result, what) {
  assert.equal(result.isError, true, `${what} should fail: ${JSON.stringify(result)}`);
  const text = result.content?.[0]?.text;
  assert.match(text, /\(code -?\d+\)$/, `${what}: the error text ends with its code`);
  return text;
}

/** Resolves with { value, ms } and marks `settled`; for calls that wait for a person. */
function pending(promise) {
  const p = { settled: false, at: 0 };
  p.done = promise.then((value) => { p.settled = true; p.at = Date.now(); return value; },
    (e) => { p.settled = true; p.at = Date.now(); throw e; });
  return p;
}

let acct; let op;
/** The operator's tool call on /v1/mcp. */
const tool = (name, args) => op.tool(name, args);

/** A session of `agentId` that finished its first turn, and its token and client. */
async function liveSession(agentId, { workspace, task_id, message = 'build it' } = {}) {
  const args = { agent_id: agentId, message, idempotency_key: ikey('s') };
  if (task_id) args.task_id = task_id; else args.workspace = workspace;
  const s = ok(await tool('start_session', args), 'start_session');
  const sid = s.session.session_id;
  await readTurn(tool, { session_id: sid, cursor: s.cursor, message_id: s.message_id });
  const t = await rest('POST', `/v1/sessions/${sid}/token`, { key: acct.key });
  assert.equal(t.status, 201, `POST /v1/sessions/${sid}/token -> ${t.status} ${JSON.stringify(t.body)}`);
  assert.match(t.body.token, /^sst_/);
  assert.equal(t.body.server_url, AGENT_URL);
  return { sid, task: s.session.task_id, token: t.body.token, agent: await agentClient(t.body.token) };
}

/** POST /v1/connectors (in `workspace`), credentials as env when given. */
async function connect(workspace, name, provider, env, vars) {
  const body = { name, provider, env, workspace };
  if (vars) body.credentials = { env: vars };
  const r = await rest('POST', '/v1/connectors', { key: acct.key, body });
  assert.equal(r.status, 200, `POST /v1/connectors -> ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.connector_id;
}

async function policy(workspace, body) {
  const r = await rest('PUT', '/v1/policies', { key: acct.key, body: { workspace, ...body } });
  assert.equal(r.status, 200, `PUT /v1/policies -> ${r.status} ${JSON.stringify(r.body)}`);
}

/** Waits until the task shows `n` open requests; returns them. */
async function openRequests(task, n = 1) {
  const t0 = Date.now();
  for (;;) {
    const open = ok(await tool('get_task', { task_id: task }), 'get_task').open_requests;
    if (open.length >= n) return open;
    assert.ok(Date.now() - t0 < 10_000, `no ${n} open request(s) on ${task} within 10 s`);
    await sleep(100);
  }
}

/** A message into a session (one turn, read to its end). */
async function say(sid, message) {
  const sent = ok(await tool('send_message', { session_id: sid, message, idempotency_key: ikey('say') }), 'send_message');
  return readTurn(tool, { session_id: sid, cursor: sent.cursor, message_id: sent.message_id });
}

const target = (list, name) => list.find((t) => t.name === name);

/**
 * A runner of workspace `slug` that is online (it just called) and answers one checkout at a time the way
 * `sky runner` does: claim it, fetch the lane's files under its lease, post `{exit_code}`. `answer()`
 * resolves with the checkout and the files it fetched.
 */
async function checksRunner(key, slug, exitCode = 0) {
  const reg = await rest('POST', '/v1/runners', { key, body: { name: 'checks box', workspace: slug } });
  assert.equal(reg.status, 201, JSON.stringify(reg.body));
  const call = async (method, path, body) => {
    const res = await fetch(`${BASE}${path}`, {
      method, headers: { authorization: `Bearer ${reg.body.token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(60_000),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  assert.equal((await call('POST', '/v1/runner/claim', {})).status, 204);
  return {
    async answer(settled = () => null) {
      for (let i = 0; i < 30; i++) {
        const early = settled();
        if (early) throw new Error(`land answered before its checks ran: ${JSON.stringify(early)}`);
        const claim = await call('POST', '/v1/runner/claim', { wait_seconds: 2 });
        if (claim.status !== 200) continue;
        const c = claim.body.checkout;
        assert.ok(c, `a runner with no turns of its own gets checkouts: ${JSON.stringify(claim.body)}`);
        const files = await call('GET', `/v1/runner/files?lease_id=${encodeURIComponent(c.lease_id)}`);
        assert.equal(files.status, 200, JSON.stringify(files.body));
        const result = { exit_code: exitCode, timed_out: false, output: exitCode === 0 ? 'ok' : 'failed' };
        const posted = await call('POST', '/v1/runner/jobs/result', { lease_id: c.lease_id, job_id: c.job_id, result });
        assert.equal(posted.status, 200, JSON.stringify(posted.body));
        return { checkout: c, files: files.body.files };
      }
      throw new Error('no checkout came within 60 s');
    },
  };
}

/** `land` while the runner answers its checkout: [land's result, what the runner saw]. */
async function landChecked(agent, runner, summary, what) {
  let done = null;
  const landing = agent.call('land', { summary }).then((r) => { done = r; return r; });
  const [result, seen] = await Promise.all([landing, runner.answer(() => done)]);
  return [aok(result, what), seen];
}

describe('session server: /v1/session/mcp with a session token (TS SDK v1 client)', () => {
  before(async () => { acct = await createAccount(); op = rawMcp(acct.key); });

  test('the twelve tools, and report_status shown on the session', async () => {
    const ws = await createWorkspace(acct.key);
    const agent = await createAgent(acct.key, { workspace: ws.slug });
    const me = await liveSession(agent.agent_id, { workspace: ws.slug });
    try {
      const names = (await me.agent.sdk.listTools()).tools.map((t) => t.name);
      assert.deepEqual(names, ['request_access', 'check_grant', 'get_credential', 'list_targets', 'report_status', 'ask_user', 'withdraw_request',
        'list_sessions', 'project_activity', 'send_message', 'remember_command', 'land']);
      assert.deepEqual(aok(await me.agent.call('report_status', { note: 'Applying migration 0042 to prod' }), 'report_status'), { ok: true });
      assert.equal(ok(await tool('get_session', { session_id: me.sid }), 'get_session').note, 'Applying migration 0042 to prod');
      const listed = ok(await tool('list_sessions', { workspace: ws.slug }), 'list_sessions').sessions;
      assert.equal(listed.find((s) => s.session_id === me.sid).note, 'Applying migration 0042 to prod');
      assert.match(aerr(await me.agent.call('report_status', { note: 'x'.repeat(201) }), 'a 201-character note'), /\(code -32602\)$/);
      aok(await me.agent.call('report_status', { note: '' }), 'clear the note');
      assert.equal(ok(await tool('get_session', { session_id: me.sid }), 'get_session').note, '');
    } finally { await me.agent.close(); }
  });

  // Found by this test: list_targets and list_sessions put their JSON array in `structuredContent`; MCP
  // (and the SDK's CallToolResult schema) requires an object there, so the official SDK client throws
  // "Invalid input: expected record, received array" and an SDK-based agent cannot call either tool.
  test('the SDK client can call list_targets and list_sessions', async () => {
    const ws = await createWorkspace(acct.key);
    const agent = await createAgent(acct.key, { workspace: ws.slug });
    await connect(ws.slug, 'web', 'vercel', 'prod', { VERCEL_TOKEN: 'x' });
    const me = await liveSession(agent.agent_id, { workspace: ws.slug });
    try {
      const targets = aok(await me.agent.sdk.callTool({ name: 'list_targets', arguments: {} }), 'list_targets over the SDK');
      assert.deepEqual(targets.map((t) => t.name), ['web']);
      const sessions = aok(await me.agent.sdk.callTool({ name: 'list_sessions', arguments: {} }), 'list_sessions over the SDK');
      assert.deepEqual(sessions.map((s) => s.sessionId), [me.sid]);
    } finally { await me.agent.close(); }
  });

  test('ask_user waits for the user; answer_request answers it and the waiting call returns at once', async () => {
    const ws = await createWorkspace(acct.key);
    const agent = await createAgent(acct.key, { workspace: ws.slug });
    const me = await liveSession(agent.agent_id, { workspace: ws.slug });
    try {
      // A decision: the call waits in the session's object while the task shows the open request.
      const asked = pending(me.agent.call('ask_user', { kind: 'decision', payload: { prompt: 'Which database?', options: ['postgres', 'sqlite'] } }));
      const [req] = await openRequests(me.task);
      assert.equal(req.kind, 'decision');
      assert.deepEqual(req.payload, { prompt: 'Which database?', options: ['postgres', 'sqlite'] });
      assert.equal(req.session_id, me.sid);
      assert.equal(req.status, 'open');
      const listed = ok(await tool('list_tasks', { workspace: ws.slug }), 'list_tasks').tasks.find((t) => t.task_id === me.task);
      assert.equal(listed.open_requests, 1);
      assert.equal(listed.waiting_on, 'you');
      await sleep(1000);
      assert.equal(asked.settled, false, 'ask_user is still waiting for the user');
      // Not one of the options: refused, and the call keeps waiting.
      assert.equal(toolErrorCode(await tool('answer_request', { task_id: me.task, request_id: req.request_id, answer: 'mysql' }), 'not an option'), 'invalid_params');
      assert.equal(asked.settled, false);

      const t0 = Date.now();
      const answered = ok(await tool('answer_request', { task_id: me.task, request_id: req.request_id, answer: 'sqlite' }), 'answer_request');
      assert.equal(answered.request.status, 'answered');
      const result = aok(await asked.done, 'ask_user');
      const woke = asked.at - t0;
      assert.deepEqual(result, { resolution: { kind: 'decision', answer: 'sqlite' } });
      assert.ok(woke < 1000, `the waiting call returned ${woke} ms after answer_request was sent (woken, not polled)`);
      assert.deepEqual(ok(await tool('get_task', { task_id: me.task }), 'get_task').open_requests, [], 'answered: no longer open');
      assert.equal(toolErrorCode(await tool('answer_request', { task_id: me.task, request_id: req.request_id, answer: 'postgres' }), 'answered twice'), 'conflict');

      // A question and a plan, the same way.
      const q = pending(me.agent.call('ask_user', { kind: 'question', payload: { prompt: 'What is the staging URL?' } }));
      const [qreq] = await openRequests(me.task);
      assert.deepEqual([qreq.kind, qreq.payload], ['question', { prompt: 'What is the staging URL?' }]);
      ok(await tool('answer_request', { task_id: me.task, request_id: qreq.request_id, answer: 'https://staging.example.com' }), 'answer the question');
      assert.deepEqual(aok(await q.done, 'ask_user question'), { resolution: { kind: 'question', answer: 'https://staging.example.com' } });
      const plan = pending(me.agent.call('ask_user', { kind: 'plan', payload: { summary: 'Add an index', files: ['db/schema.sql'] } }));
      const [preq] = await openRequests(me.task);
      ok(await tool('answer_request', { task_id: me.task, request_id: preq.request_id, answer: 'approve', note: 'go ahead' }), 'approve the plan');
      assert.deepEqual(aok(await plan.done, 'ask_user plan'), { resolution: { kind: 'plan', answer: 'approve', note: 'go ahead' } });

      // Bad kinds and payloads are the agent's errors, with the contract's code.
      assert.match(aerr(await me.agent.call('ask_user', { kind: 'poll', payload: {} }), 'kind poll'), /`kind` must be one of plan, decision, question.*\(code -32602\)$/);
      assert.match(aerr(await me.agent.call('ask_user', { kind: 'plan', payload: { files: [] } }), 'plan without summary'), /payload\.summary/);
    } finally { await me.agent.close(); }
  });

  test('request_access decided by a person: approved (credentials as env, audited), then denied (refused)', async () => {
    const ws = await createWorkspace(acct.key);
    const agent = await createAgent(acct.key, { workspace: ws.slug });
    const web = await connect(ws.slug, 'web', 'vercel', 'prod', { VERCEL_TOKEN: 'vt-e2e-secret', VERCEL_ORG_ID: 'team_e2e' });
    await connect(ws.slug, 'db', 'supabase', 'prod');
    const me = await liveSession(agent.agent_id, { workspace: ws.slug });
    try {
      let targets = aok(await me.agent.call('list_targets'), 'list_targets');
      assert.deepEqual(targets.map((t) => [t.name, t.provider, t.env, t.lockState, t.scopes]).sort(),
        [['db', 'supabase', 'prod', 'unconnected', []], ['web', 'vercel', 'prod', 'locked', []]]);
      assert.equal(target(targets, 'web').id, web);

      // Clear refusals: an unconnected target, an unknown one, no scope, an empty reason.
      assert.match(aerr(await me.agent.call('request_access', { target: 'db', scope: ['read'], reason: 'r' }), 'unconnected'), /connect it in agentsky/);
      assert.match(aerr(await me.agent.call('request_access', { target: 'nope', scope: ['read'], reason: 'r' }), 'unknown'), /no target `nope`.*\(code -32001\)$/);
      assert.match(aerr(await me.agent.call('request_access', { target: 'web', scope: [], reason: 'r' }), 'no scope'), /\(code -32602\)$/);
      assert.match(aerr(await me.agent.call('request_access', { target: 'web', scope: ['read'], reason: '' }), 'no reason'), /\(code -32602\)$/);

      // A person approves, for a minute: the waiting call returns the grant as soon as the answer lands.
      const asked = pending(me.agent.call('request_access', { target: 'vercel:prod', scope: ['deploy', 'read'], reason: 'ship the fix' }));
      const [req] = await openRequests(me.task);
      assert.equal(req.kind, 'access');
      assert.equal(req.payload.reason, 'ship the fix');
      assert.equal(req.payload.target, 'web');
      assert.deepEqual(req.payload.scope, ['read', 'deploy']);
      await sleep(500);
      assert.equal(asked.settled, false, 'request_access waits for the person');
      const t0 = Date.now();
      const answered = ok(await tool('answer_request', { task_id: me.task, request_id: req.request_id, answer: 'approve', expires_in_minutes: 1 }), 'approve');
      assert.equal(answered.grant.status, 'active');
      const grant = aok(await asked.done, 'request_access');
      assert.ok(asked.at - t0 < 1000, `woken ${asked.at - t0} ms after the approval was sent`);
      assert.equal(grant.status, 'active');
      assert.equal(grant.decidedBy, 'user');
      assert.deepEqual(grant.scope, ['read', 'deploy']);
      assert.match(grant.grantId, /^gr_/);
      assert.ok(Math.abs(grant.expiresAt - (t0 + 60_000)) < 5000, `expires in a minute: ${grant.expiresAt - t0} ms`);
      assert.deepEqual(aok(await me.agent.call('check_grant', { grantId: grant.grantId }), 'check_grant'), grant);

      targets = aok(await me.agent.call('list_targets'), 'list_targets');
      assert.equal(target(targets, 'web').lockState, 'open');
      assert.deepEqual(target(targets, 'web').scopes, ['read', 'deploy']);
      const cred = aok(await me.agent.call('get_credential', { grantId: grant.grantId }), 'get_credential');
      assert.deepEqual(cred, { kind: 'env', env: { VERCEL_TOKEN: 'vt-e2e-secret', VERCEL_ORG_ID: 'team_e2e' }, socketPath: null, expiresAt: grant.expiresAt, scoped: false });
      const audit = await rest('GET', `/v1/audit?workspace=${ws.slug}`, { key: acct.key });
      assert.equal(audit.status, 200, JSON.stringify(audit.body));
      assert.deepEqual(audit.body.entries.map((e) => [e.action, e.session_id, e.grant_id, e.connector_id]),
        [['get_credential', me.sid, grant.grantId, web], ['access_approved', me.sid, grant.grantId, web],
          ['request_answered', me.sid, null, null], ['request_opened', me.sid, null, null]],
        'the request opened and answered, the approval and the use are in the audit log, newest first');

      // A person denies: denied, and no credentials.
      const again = pending(me.agent.call('request_access', { target: 'web', scope: ['write'], reason: 'edit env vars' }));
      const [req2] = await openRequests(me.task);
      const t1 = Date.now();
      ok(await tool('answer_request', { task_id: me.task, request_id: req2.request_id, answer: 'deny' }), 'deny');
      const denied = aok(await again.done, 'request_access (denied)');
      assert.ok(again.at - t1 < 1000, `woken ${again.at - t1} ms after the denial was sent`);
      assert.equal(denied.status, 'denied');
      assert.match(aerr(await me.agent.call('get_credential', { grantId: denied.grantId }), 'credential of a denied grant'), /not active.*\(code -32002\)$/);
      assert.equal(aok(await me.agent.call('check_grant', { grantId: denied.grantId }), 'check_grant').status, 'denied');
      const log = (await rest('GET', `/v1/audit?workspace=${ws.slug}`, { key: acct.key })).body.entries;
      assert.deepEqual(log.map((e) => e.action), ['access_denied', 'request_answered', 'request_opened', 'get_credential', 'access_approved', 'request_answered', 'request_opened'],
        'the denial is logged; a refused credential is no use');
    } finally { await me.agent.close(); }
  });

  test('policies decide without a person; an always grant answers later sessions as a persistent grant', async () => {
    const ws = await createWorkspace(acct.key);
    const agent = await createAgent(acct.key, { workspace: ws.slug });
    await connect(ws.slug, 'web', 'vercel', 'prod', { VERCEL_TOKEN: 'vt-web' });
    const site = await connect(ws.slug, 'site', 'vercel', 'preview', { VERCEL_TOKEN: 'vt-site' });
    const me = await liveSession(agent.agent_id, { workspace: ws.slug });
    try {
      // A target policy allows reading `site`: active at once, decided by the target's policy.
      await policy(ws.slug, { connector_id: site, scope: 'read', decision: 'allow' });
      let t0 = Date.now();
      const byTarget = aok(await me.agent.call('request_access', { target: 'vercel-preview', scope: ['read'], reason: 'look at the logs' }), 'request_access site');
      assert.ok(Date.now() - t0 < 3000, 'no one was asked');
      assert.equal(byTarget.status, 'active');
      assert.equal(byTarget.decidedBy, 'target-policy');
      assert.ok(byTarget.expiresAt > Date.now() + 30 * 60_000, 'a policy grant lasts (an hour)');
      assert.deepEqual(aok(await me.agent.call('get_credential', { grantId: byTarget.grantId }), 'get_credential').env, { VERCEL_TOKEN: 'vt-site' });
      // The workspace denies `delete` and allows `write` everywhere.
      await policy(ws.slug, { scope: 'delete', decision: 'deny' });
      await policy(ws.slug, { scope: 'write', decision: 'allow' });
      const no = aok(await me.agent.call('request_access', { target: 'web', scope: ['delete'], reason: 'clean up' }), 'request delete');
      assert.equal(no.status, 'denied');
      assert.match(aerr(await me.agent.call('get_credential', { grantId: no.grantId }), 'denied credential'), /not active/);
      const yes = aok(await me.agent.call('request_access', { target: 'web', scope: ['write'], reason: 'set a var' }), 'request write');
      assert.deepEqual([yes.status, yes.decidedBy], ['active', 'policy']);
      assert.deepEqual(ok(await tool('get_task', { task_id: me.task }), 'get_task').open_requests, [], 'nothing was put to a person');

      // A person approves `deploy` always: later requests of any session of the workspace are answered by it.
      const asked = pending(me.agent.call('request_access', { target: 'web', scope: ['deploy'], reason: 'deploy' }));
      const [req] = await openRequests(me.task);
      ok(await tool('answer_request', { task_id: me.task, request_id: req.request_id, answer: 'approve', always: true }), 'approve always');
      const always = aok(await asked.done, 'request_access deploy');
      assert.equal(always.status, 'active');
      assert.equal(always.expiresAt, null, 'an always grant does not expire');
      const other = await liveSession(agent.agent_id, { workspace: ws.slug, message: 'another task' });
      try {
        t0 = Date.now();
        const reused = aok(await other.agent.call('request_access', { target: 'web', scope: ['deploy'], reason: 'deploy too' }), 'request in another session');
        assert.ok(Date.now() - t0 < 3000, 'no one was asked');
        assert.deepEqual([reused.status, reused.decidedBy], ['active', 'persistent-grant']);
        assert.equal(target(aok(await other.agent.call('list_targets'), 'list_targets'), 'web').lockState, 'persistent');
        assert.deepEqual(aok(await other.agent.call('get_credential', { grantId: reused.grantId }), 'get_credential').env, { VERCEL_TOKEN: 'vt-web' });
      } finally { await other.agent.close(); }
    } finally { await me.agent.close(); }
  });

  test('the sixth access request in a minute is refused with the contract\'s message; land saying what is missing and remember_command spend none of it', async () => {
    const ws = await createWorkspace(acct.key);
    const agent = await createAgent(acct.key, { workspace: ws.slug });
    await connect(ws.slug, 'web', 'vercel', 'prod', { VERCEL_TOKEN: 'x' });
    await policy(ws.slug, { scope: 'read', decision: 'allow' });
    const me = await liveSession(agent.agent_id, { workspace: ws.slug });
    const peer = await liveSession(agent.agent_id, { workspace: ws.slug, message: 'another task' });
    try {
      const args = { target: 'web', scope: ['read'], reason: 'read the logs' };
      for (let i = 1; i <= 5; i++) assert.equal(aok(await me.agent.call('request_access', args), `request ${i}`).status, 'active');
      const r = await me.agent.call('request_access', args);
      // The contract's words, with how long to wait (the hardening issue: the message says how long).
      assert.match(aerr(r, 'the sixth request'), /^too many access requests \(5 a minute\); try again in \d+(\.\d+)? s \(code -32003\)$/);
      // A land that only says what is missing runs nothing, and remember_command answers agentsky's own
      // question: neither is an access request, so neither waits for the bucket.
      const landed = aok(await me.agent.call('land', { summary: 'ship' }), 'land');
      assert.equal(landed.landed, false);
      assert.doesNotMatch(landed.reason, /too many/);
      const taught = aerr(await me.agent.call('remember_command', { kind: 'checks', command: 'make test' }), 'remember_command');
      assert.match(taught, /did not ask this task/);
      assert.doesNotMatch(taught, /-32003/);
      // The bucket is the session's own: another session asks freely.
      assert.equal(aok(await peer.agent.call('request_access', args), 'another session').status, 'active');
    } finally { await me.agent.close(); await peer.agent.close(); }
  });

  test('two sessions with lanes see each other\'s files and overlaps; one lands, the other is behind, then conflicts', async () => {
    const ws = await createWorkspace(acct.key);
    // Checks with no runner online run in the session's hosted sandbox, whose time is charged.
    if (SANDBOXES) await addCredit(ws.slug, 1_000);
    const agent = await createAgent(acct.key, { workspace: ws.slug, name: 'Dev' });
    const a = await liveSession(agent.agent_id, { workspace: ws.slug, message: 'build it' });
    const lanes = await rest('PUT', `/v1/tasks/${a.task}/settings`, { key: acct.key, body: { lanes: true } });
    assert.equal(lanes.status, 200, JSON.stringify(lanes.body));
    assert.equal(lanes.body.lanes, true);
    const b = await liveSession(agent.agent_id, { task_id: a.task, message: 'review it' });
    try {
      await say(a.sid, '/write app.rs fn a() {}');
      await say(b.sid, '/write app.rs fn b() {}');
      await say(b.sid, '/write notes.md b\'s notes');
      // Lane writes are not in the task's base until they land.
      assert.equal(toolErrorCode(await tool('read_task_file', { task_id: a.task, path: 'app.rs' }), 'app.rs before landing'), 'not_found');

      const seenByA = aok(await a.agent.call('list_sessions'), 'list_sessions (a)');
      assert.deepEqual(seenByA.map((s) => [s.sessionId, s.self, s.branch, s.files, s.overlapsWithYou]).sort(), [
        [a.sid, true, `lane/${a.sid}`, ['app.rs'], []],
        [b.sid, false, `lane/${b.sid}`, ['app.rs', 'notes.md'], ['app.rs']],
      ].sort());
      assert.equal(seenByA.find((s) => s.sessionId === b.sid).task, 'review it');
      const seenByB = aok(await b.agent.call('list_sessions'), 'list_sessions (b)');
      assert.deepEqual(seenByB.find((s) => s.sessionId === a.sid).overlapsWithYou, ['app.rs']);
      const act = aok(await a.agent.call('project_activity'), 'project_activity (a)');
      assert.equal(act.base, 'main');
      assert.equal(act.behind, 0);
      assert.deepEqual(act.lanes.map((l) => [l.sessionId, l.files]), [[b.sid, ['app.rs', 'notes.md']]]);
      assert.deepEqual(act.overlaps.map((o) => [o.file, o.with.sessionId]), [['app.rs', b.sid]]);

      // A peer message: in b's transcript, marked as from a.
      assert.deepEqual(aok(await a.agent.call('send_message', { to: b.sid, body: 'I took app.rs' }), 'send_message'), { delivered: true });
      const note = (await readAll(tool, b.sid)).events.filter((e) => e.type === 'user_message').at(-1);
      assert.equal(note.text, 'I took app.rs');
      assert.equal(note.from?.peer?.session_id, a.sid);
      assert.match(aerr(await a.agent.call('send_message', { to: a.sid, body: 'me' }), 'to self'), /\(code -32602\)$/);

      // First landing: no checks known, so the agent is asked for them; then it lands.
      const first = aok(await a.agent.call('land', { summary: 'Add a()' }), 'land (1)');
      assert.equal(first.landed, false);
      assert.match(first.reason, /remember_command/);
      assert.deepEqual(aok(await a.agent.call('remember_command', { kind: 'checks', command: 'cargo test' }), 'remember_command'), { ok: true });
      // Checks known and no runner of the workspace online: land refuses rather than land unchecked (with
      // hosted sandboxes they ran in the session's, which has no cargo)…
      const unchecked = aok(await a.agent.call('land', { summary: 'Add a()' }), 'land (no runner)');
      assert.equal(unchecked.landed, false, JSON.stringify(unchecked));
      if (SANDBOXES) {
        assert.match(unchecked.reason, /the checks failed: `cargo test` exited 127/);
        assert.match(unchecked.steps.join('\n'), /in the session's hosted sandbox/);
      } else {
        assert.match(unchecked.reason, /no runner of the workspace is online/);
      }
      // …and with one online, they run there in a fresh checkout of the lane.
      const runner = await checksRunner(acct.key, ws.slug);
      const [landed, seen] = await landChecked(a.agent, runner, 'Add a()\n\nThe first function.', 'land (2)');
      assert.equal(landed.landed, true, JSON.stringify(landed));
      assert.equal(seen.checkout.command, 'cargo test');
      assert.equal(seen.files.find((f) => f.path === 'app.rs')?.content, 'fn a() {}');
      assert.ok(landed.steps.some((s) => s.includes('on another runner of the workspace')), JSON.stringify(landed.steps));
      assert.equal(typeof landed.commit, 'string');
      assert.equal(landed.reason, null);
      assert.ok(landed.steps.some((s) => s.includes('cargo test')), JSON.stringify(landed.steps));
      assert.equal(ok(await tool('read_task_file', { task_id: a.task, path: 'app.rs' }), 'app.rs after landing').content, 'fn a() {}');
      const project = JSON.parse(ok(await tool('read_task_file', { task_id: a.task, path: '.agentsky/project.json' }), 'project.json').content);
      assert.deepEqual(project.checks, { command: 'cargo test' });
      const nothing = aok(await a.agent.call('land', { summary: 'again' }), 'land (3)');
      assert.equal(nothing.landed, false);
      assert.match(nothing.reason, /nothing to land/);

      // The other lane is behind by the project file and the landing, and sees who made it.
      const behind = aok(await b.agent.call('project_activity'), 'project_activity (b)');
      assert.equal(behind.behind, 2, JSON.stringify(behind.baseCommits));
      assert.equal(aok(await b.agent.call('list_sessions'), 'list_sessions (b)').find((s) => s.self).behind, 2);
      const landing = behind.baseCommits.find((c) => c.subject === 'Add a()');
      assert.ok(landing, JSON.stringify(behind.baseCommits));
      assert.equal(landing.sha, landed.commit);
      assert.deepEqual(landing.files, ['app.rs']);
      assert.equal(landing.lane?.branch, `lane/${a.sid}`);
      assert.deepEqual(aok(await a.agent.call('list_sessions'), 'list_sessions (a)').find((s) => s.self).files, [], 'a landed lane has no changes');
      // …and conflicts on the file both changed; the base keeps the landed version.
      const conflict = aok(await b.agent.call('land', { summary: 'Add b()' }), 'land (b)');
      assert.equal(conflict.landed, false);
      assert.match(conflict.reason, /conflict/);
      assert.match(conflict.reason, /app\.rs/);
      assert.equal(conflict.conflicts[0].kind, 'added_in_both', JSON.stringify(conflict));
      assert.equal(conflict.conflicts[0].regions[0].base.text, 'fn a() {}');
      assert.ok(!conflict.reason.includes('notes.md'), conflict.reason);
      assert.equal(ok(await tool('read_task_file', { task_id: a.task, path: 'app.rs' }), 'app.rs').content, 'fn a() {}');
      assert.equal(toolErrorCode(await tool('read_task_file', { task_id: a.task, path: 'notes.md' }), 'notes.md'), 'not_found', 'nothing of b landed');
    } finally { await a.agent.close(); await b.agent.close(); }
  });

  test('two lanes edit one file: different places both land merged; the same place conflicts, is reconciled and lands', async () => {
    const ws = await createWorkspace(acct.key);
    const agent = await createAgent(acct.key, { workspace: ws.slug, name: 'Dev' });
    const a = await liveSession(agent.agent_id, { workspace: ws.slug, message: 'one' });
    const lanes = await rest('PUT', `/v1/tasks/${a.task}/settings`, { key: acct.key, body: { lanes: true } });
    assert.equal(lanes.status, 200, JSON.stringify(lanes.body));
    ok(await tool('write_task_file', { task_id: a.task, path: 'app.txt', content: 'one\ntwo\nthree\nfour\nfive\n' }), 'base app.txt');
    ok(await tool('write_task_file', { task_id: a.task, path: '.agentsky/project.json', content: '{"checks": {"command": "make check"}}' }), 'checks');
    // b joins after the base has history: its lane starts at the head, not behind.
    const b = await liveSession(agent.agent_id, { task_id: a.task, message: 'five' });
    const runner = await checksRunner(acct.key, ws.slug);
    const base = async () => ok(await tool('read_task_file', { task_id: a.task, path: 'app.txt' }), 'base app.txt').content;
    try {
      assert.equal(aok(await b.agent.call('project_activity'), 'project_activity (b)').behind, 0);
      await say(a.sid, '/write app.txt ONE\ntwo\nthree\nfour\nfive\n');
      await say(b.sid, '/write app.txt one\ntwo\nthree\nfour\nFIVE\n');
      const [first] = await landChecked(a.agent, runner, 'Shout one', 'land (a)');
      assert.equal(first.landed, true, JSON.stringify(first));
      assert.equal(aok(await b.agent.call('project_activity'), 'project_activity (b)').behind, 1);
      const [second, seen] = await landChecked(b.agent, runner, 'Shout five', 'land (b)');
      assert.equal(second.landed, true, JSON.stringify(second));
      assert.ok(second.steps.some((s) => s.includes('merged app.txt')), JSON.stringify(second.steps));
      assert.equal(seen.files.find((f) => f.path === 'app.txt').content, 'ONE\ntwo\nthree\nfour\nFIVE\n', 'the checks saw the merged file');
      assert.equal(await base(), 'ONE\ntwo\nthree\nfour\nFIVE\n');

      // The same line in both lanes: the second to land gets the conflict's region, reads the base's
      // version and the merge base, writes its reconciled file and lands.
      await say(a.sid, '/write app.txt ONE\nTWO by a\nthree\nfour\nFIVE\n');
      await say(b.sid, '/write app.txt ONE\ntwo by b\nthree\nfour\nFIVE\n');
      const [third] = await landChecked(a.agent, runner, 'Shout two', 'land (a, 2)');
      assert.equal(third.landed, true, JSON.stringify(third));
      const conflict = aok(await b.agent.call('land', { summary: 'two by b' }), 'land (b, conflict)');
      assert.equal(conflict.landed, false, JSON.stringify(conflict));
      assert.match(conflict.reason, /^conflict: app\.txt/);
      const region = conflict.conflicts[0].regions[0];
      assert.deepEqual([region.lane.from, region.lane.to, region.lane.text], [2, 2, 'two by b\n']);
      assert.deepEqual([region.base.text, region.merge_base], ['TWO by a\n', 'two\n']);
      const merging = aok(await b.agent.call('project_activity'), 'project_activity (b, merging)').merging;
      assert.equal(merging[0].file, 'app.txt');
      assert.equal(merging[0].base.content, 'ONE\nTWO by a\nthree\nfour\nFIVE\n');
      assert.equal(merging[0].mergeBase.content, 'ONE\ntwo\nthree\nfour\nFIVE\n');
      assert.equal(await base(), 'ONE\nTWO by a\nthree\nfour\nFIVE\n', 'nothing of b reached the base');
      await say(b.sid, '/write app.txt ONE\nTWO by a and b\nthree\nfour\nFIVE\n');
      const [fourth] = await landChecked(b.agent, runner, 'two by a and b', 'land (b, reconciled)');
      assert.equal(fourth.landed, true, JSON.stringify(fourth));
      assert.equal(await base(), 'ONE\nTWO by a and b\nthree\nfour\nFIVE\n');
      assert.equal(aok(await b.agent.call('project_activity'), 'project_activity (b, after)').behind, 0);
    } finally { await a.agent.close(); await b.agent.close(); }
  });

  test('a token is refused (401) once its session has ended, and so are made-up tokens and API keys', async () => {
    const ws = await createWorkspace(acct.key);
    const agent = await createAgent(acct.key, { workspace: ws.slug });
    const me = await liveSession(agent.agent_id, { workspace: ws.slug });
    const other = await liveSession(agent.agent_id, { workspace: ws.slug, message: 'other' });
    await me.agent.close(); await other.agent.close();
    assert.equal((await agentPost(me.token, 'tools/list', {})).status, 200);
    const madeUp = await agentPost('sst_made-up-token-0000000000000000000000000', 'tools/list', {});
    assert.equal(madeUp.status, 401);
    assert.deepEqual([madeUp.body.jsonrpc, madeUp.body.id, madeUp.body.error?.code, madeUp.body.error?.data?.code],
      ['2.0', 1, -32001, 'unauthorized'], `a JSON-RPC error: ${JSON.stringify(madeUp.body)}`);
    assert.match(madeUp.body.error.message, /unknown session token/);
    assert.equal((await agentPost(acct.key, 'tools/list', {})).status, 401, 'an API key is not a session token');
    assert.equal((await agentPost(null, 'tools/list', {})).status, 401);
    assert.equal((await agentPost(me.token, 'tools/list', {}, { 'x-agentsky-session': other.sid })).status, 401, 'a token names its own session');

    ok(await tool('stop_session', { session_id: me.sid }), 'stop_session');
    const dead = await agentPost(me.token, 'tools/call', { name: 'report_status', arguments: { note: 'still here?' } });
    assert.equal(dead.status, 401, JSON.stringify(dead.body));
    assert.equal((await agentPost(me.token, 'tools/list', {})).status, 401);
    await assert.rejects(agentClient(me.token), /unknown session token, or its session has ended/,
      'the SDK client cannot connect with it either, and says why');
    assert.equal(ok(await tool('get_session', { session_id: me.sid }), 'get_session').note, '', 'the refused call did nothing');
    const fresh = await rest('POST', `/v1/sessions/${me.sid}/token`, { key: acct.key });
    assert.equal(fresh.body?.error?.code, 'session_terminated', `no new token for an ended session: ${fresh.status} ${JSON.stringify(fresh.body)}`);
    // The other session's token still works.
    assert.equal((await agentPost(other.token, 'tools/list', {})).status, 200);
  });

  test('no tool reaches another task\'s or another workspace\'s sessions, targets, grants or requests', async () => {
    const ws1 = await createWorkspace(acct.key);
    const ws2 = await createWorkspace(acct.key);
    const agent1 = await createAgent(acct.key, { workspace: ws1.slug });
    const agent2 = await createAgent(acct.key, { workspace: ws2.slug });
    await connect(ws1.slug, 'web', 'vercel', 'prod', { VERCEL_TOKEN: 'ws1-token' });
    await connect(ws2.slug, 'vault', 'supabase', 'prod', { SUPABASE_ACCESS_TOKEN: 'ws2-token' });
    await policy(ws1.slug, { scope: 'read', decision: 'allow' });
    await policy(ws2.slug, { scope: 'read', decision: 'allow' });
    const x = await liveSession(agent1.agent_id, { workspace: ws1.slug, message: 'task one' });
    const y = await liveSession(agent1.agent_id, { workspace: ws1.slug, message: 'task two' });
    const z = await liveSession(agent2.agent_id, { workspace: ws2.slug, message: 'elsewhere' });
    try {
      const gy = aok(await y.agent.call('request_access', { target: 'web', scope: ['read'], reason: 'r' }), 'y request').grantId;
      const gz = aok(await z.agent.call('request_access', { target: 'vault', scope: ['read'], reason: 'r' }), 'z request').grantId;
      await say(y.sid, '/write secret-plan.md task two only');

      // Grants of another task (same workspace) and of another workspace are unknown to x.
      for (const g of [gy, gz, 'gr_00000000000000000000000000']) {
        for (const name of ['check_grant', 'get_credential']) {
          assert.match(aerr(await x.agent.call(name, { grantId: g }), `${name} ${g}`), /^unknown grant \(code -32001\)$/);
        }
      }
      // An id of no grant's shape is refused by the published pattern.
      for (const name of ['check_grant', 'get_credential']) {
        assert.match(aerr(await x.agent.call(name, { grantId: 'not-a-grant' }), name), /^`grantId` must be a grant id like gr_… .*\(code -32602\)$/);
      }
      // Targets: only its workspace's.
      assert.deepEqual(aok(await x.agent.call('list_targets'), 'list_targets').map((t) => t.name), ['web']);
      assert.match(aerr(await x.agent.call('request_access', { target: 'vault', scope: ['read'], reason: 'r' }), 'another workspace\'s target'), /no target `vault`/);
      assert.match(aerr(await x.agent.call('request_access', { target: 'supabase', scope: ['read'], reason: 'r' }), 'another workspace\'s provider'), /no target/);
      // Sessions: only its own task's.
      assert.deepEqual(aok(await x.agent.call('list_sessions'), 'list_sessions').map((s) => s.sessionId), [x.sid]);
      const act = aok(await x.agent.call('project_activity'), 'project_activity');
      assert.deepEqual([act.behind, act.baseCommits, act.lanes, act.overlaps], [0, [], [], []], 'nothing of task two');
      for (const to of [y.sid, z.sid]) {
        assert.match(aerr(await x.agent.call('send_message', { to, body: 'hi' }), `send_message to ${to}`), /no session .*\(code -32001\)$/);
      }
      assert.equal(texts((await readAll(tool, y.sid)).events, 'user_message').includes('hi'), false);

      // A request of task two cannot be answered through task one.
      const asked = pending(y.agent.call('ask_user', { kind: 'question', payload: { prompt: 'Proceed?' } }));
      const [req] = await openRequests(y.task);
      assert.deepEqual(ok(await tool('get_task', { task_id: x.task }), 'get_task x').open_requests, []);
      assert.equal(toolErrorCode(await tool('answer_request', { task_id: x.task, request_id: req.request_id, answer: 'yes' }), 'answer through another task'), 'not_found');
      assert.equal(toolErrorCode(await tool('answer_request', { task_id: z.task, request_id: req.request_id, answer: 'yes' }), 'answer through another workspace'), 'not_found');
      await sleep(300);
      assert.equal(asked.settled, false, 'still waiting');
      ok(await tool('answer_request', { task_id: y.task, request_id: req.request_id, answer: 'yes' }), 'answer through its own task');
      assert.deepEqual(aok(await asked.done, 'ask_user'), { resolution: { kind: 'question', answer: 'yes' } });

      // z's token is z's: it sees its own workspace only.
      assert.deepEqual(aok(await z.agent.call('list_targets'), 'list_targets z').map((t) => t.name), ['vault']);
      assert.deepEqual(aok(await z.agent.call('get_credential', { grantId: gz }), 'z credential').env, { SUPABASE_ACCESS_TOKEN: 'ws2-token' });
      assert.match(aerr(await z.agent.call('get_credential', { grantId: gy }), 'z on y\'s grant'), /^unknown grant/);
    } finally { await x.agent.close(); await y.agent.close(); await z.agent.close(); }
  });
});
