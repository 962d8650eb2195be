// Setting a workspace up and landing work from an MCP client only (issue 36), through the official
// TypeScript SDK: after sign-up, every step is a tool call. The operator connects a target, sets a policy,
// stores a model secret (its value never comes back), creates an agent, starts a session (its task in lanes
// by default) and issues a session token; the agent (the SDK on the session server with that token) gets
// access by the policy, and its first `land` asks for the checks. With no runner online the answer names
// the `sky runner` that would run them; with one online, `land` → `remember_command checks` → `land` lands
// within a minute and no call answers "try again". Then, in headless Chromium, the session's "Ask for a run
// command" starts a session of the same task asked to work it out (the page moves there); once that session
// teaches it, "Run locally" runs it on the workspace's runner and shows its output; and the task's page
// shows a lane's file not landed yet and sets lanes, review and the base branch.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { BASE, MCP_URL, SANDBOXES, addCredit, createAccount, ok, ikey, readTurn, skyBinary } from './helpers.mjs';
import { signedIn, SHOTS } from './browser.mjs';

/** An SDK client on `url` with `bearer`. */
async function client(url, bearer) {
  const c = new Client({ name: 'agentsky-e2e-setup', version: '0.0.0' });
  await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${bearer}` } } }));
  return c;
}

describe('setting up and landing from an MCP client only', () => {
  let sky; let acct; let operator; let agent; let runner; let work; let sid;
  const tool = async (c, name, args) => ok(await c.callTool({ name, arguments: args }), name);
  const said = [];
  const call = async (c, name, args) => {
    const r = await tool(c, name, args);
    said.push(JSON.stringify(r));
    return r;
  };

  before(async () => {
    sky = skyBinary();
    acct = await createAccount();
    // Until the runner below is online, checks run in the session's hosted sandbox, whose time is charged.
    if (SANDBOXES) await addCredit(acct.workspace.slug, 1_000);
    operator = await client(MCP_URL, acct.key);
    work = mkdtempSync(join(tmpdir(), 'sky-setup-e2e-'));
  });
  after(async () => {
    runner?.kill('SIGKILL');
    await operator?.close();
    await agent?.close();
    if (work) rmSync(work, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  });

  test('connector, policy, secret, agent, session, lanes, token, access, then a first landing in three calls', { timeout: 180_000 }, async () => {
    const web = await call(operator, 'connect_target', {
      name: 'web', provider: 'vercel', env: 'prod', credentials: { env: { VERCEL_TOKEN: 'vt-e2e-setup-secret' } },
    });
    assert.ok(!JSON.stringify(web).includes('vt-e2e-setup-secret'), 'credentials are never echoed');
    await call(operator, 'set_policy', { connector_id: web.connector_id, scope: 'read', decision: 'allow' });
    await call(operator, 'put_secret', { name: 'OPENAI_API_KEY', value: 'sk-e2e-setup-secret' });
    const secrets = await call(operator, 'list_secrets', {});
    assert.ok(JSON.stringify(secrets).includes('OPENAI_API_KEY') && !JSON.stringify(secrets).includes('sk-e2e-setup-secret'));
    const created = await call(operator, 'create_agent', { name: 'Writer', harness: 'echo', model: 'echo-1' });
    const started = await call(operator, 'start_session', { agent_id: created.agent_id, message: 'hi', idempotency_key: ikey('setup') });
    sid = started.session.session_id;
    await readTurn((n, a) => operator.callTool({ name: n, arguments: a }), { session_id: sid, cursor: started.cursor, message_id: started.message_id });
    // A new task gives each session its own lane: nothing to turn on before landing.
    assert.equal((await call(operator, 'get_task', { task_id: started.session.task_id })).settings.lanes, true, 'lanes by default');
    const settings = await call(operator, 'set_task_settings', { task_id: started.session.task_id, review: 'auto', base_branch: 'main' });
    assert.deepEqual([settings.lanes, settings.review, settings.base_branch], [true, 'auto', 'main']);
    const wrote = await call(operator, 'send_message', { session_id: sid, message: '/write app.txt hello', idempotency_key: ikey('write') });
    await readTurn((n, a) => operator.callTool({ name: n, arguments: a }), { session_id: sid, cursor: wrote.cursor, message_id: wrote.message_id });
    const token = await call(operator, 'issue_session_token', { session_id: sid });
    agent = await client(`${BASE}/v1/session/mcp`, token.token);

    // The agent's access is decided by the policy, at once.
    const grant = await call(agent, 'request_access', { target: 'web', scope: ['read'], reason: 'read the deployments' });
    assert.equal(grant.status, 'active', JSON.stringify(grant));

    // No runner online: the first land asks for the checks, and names what would run them unless hosted
    // sandboxes will.
    const alone = await call(agent, 'land', { summary: 'Say hello' });
    assert.equal(alone.landed, false);
    assert.match(alone.reason, /^no checks are known/);
    assert.equal(alone.reason.includes(`sky runner --server ${BASE}`), !SANDBOXES, alone.reason);

    // A runner online: three calls, one minute, no waiting.
    runner = spawn(sky, ['runner', '--server', BASE, '--key', acct.key, '--name', 'setup-e2e', '--', 'true'], {
      env: { ...process.env, HOME: work }, stdio: ['ignore', 'ignore', 'pipe'],
    });
    runner.stderr.on('data', (d) => process.stderr.write(`[setup runner] ${d}`));
    const t0 = Date.now();
    let asked = await call(agent, 'land', { summary: 'Say hello' });
    while (asked.reason.includes('sky runner --server') && Date.now() - t0 < 30_000) {
      await new Promise((done) => setTimeout(done, 500)); // until the runner's first call lands
      asked = await call(agent, 'land', { summary: 'Say hello' });
    }
    const first = Date.now();
    assert.match(asked.reason, /^no checks are known/, JSON.stringify(asked));
    assert.equal((await call(agent, 'remember_command', { kind: 'checks', command: 'test -f app.txt' })).ok, true);
    const landed = await call(agent, 'land', { summary: 'Say hello' });
    const took = Date.now() - first;
    assert.equal(landed.landed, true, JSON.stringify(landed));
    assert.ok(landed.steps.some((s) => s.startsWith('checks: `test -f app.txt` passed')), JSON.stringify(landed.steps));
    assert.ok(took < 60_000, `the three calls took ${took} ms`);
    assert.ok(!said.some((s) => /try again/.test(s)), said.join('\n'));
    const file = await tool(operator, 'read_task_file', { task_id: started.session.task_id, path: 'app.txt' });
    assert.equal(file.content, 'hello');
    console.log(`first landing: land → remember_command → land in ${took} ms`);
  });

  test('Run locally: the agent is asked in a new session of the task, teaches the command, and the button runs it', { timeout: 120_000 }, async () => {
    const { browser, page } = await signedIn(acct.key);
    try {
      const sessionPage = `${BASE}/console/w/${acct.workspace.slug}/sessions/${sid}`;
      await page.goto(sessionPage);
      await page.click('button:has-text("Ask for a run command")');
      await page.waitForURL((u) => /\/sessions\/ses_/.test(u.pathname) && !u.pathname.endsWith(sid));
      const asked = page.url().split('/').pop();
      assert.match(await page.textContent('main'), /agentsky asks: work out how to run this project locally/);
      await page.screenshot({ path: `${SHOTS}50-run-locally-asked.png`, fullPage: true });
      // That session's agent teaches the command (an agent of one's own, with a session token).
      const token = await tool(operator, 'issue_session_token', { session_id: asked });
      const helper = await client(`${BASE}/v1/session/mcp`, token.token);
      await tool(helper, 'remember_command', { kind: 'run', command: 'echo serving on 3000', url: 'http://localhost:3000' });
      await helper.close();
      await page.goto(sessionPage);
      await page.click('button:has-text("Run locally")');
      await page.waitForSelector('h1:has-text("What it did")', { timeout: 90_000 });
      const shown = await page.textContent('main');
      assert.ok(shown.includes('echo serving on 3000') && shown.includes('serving on 3000'), shown);
      await page.screenshot({ path: `${SHOTS}51-run-locally-output.png`, fullPage: true });
    } finally {
      await browser.close();
    }
  });

  test('the task page: a lane\'s file not landed yet, then lanes, review and the base branch set by a person', { timeout: 120_000 }, async () => {
    const wrote = await call(operator, 'send_message', { session_id: sid, message: '/write draft.md work in progress', idempotency_key: ikey('draft') });
    await readTurn((n, a) => operator.callTool({ name: n, arguments: a }), { session_id: sid, cursor: wrote.cursor, message_id: wrote.message_id });
    const { browser, page } = await signedIn(acct.key);
    try {
      const taskPage = `${BASE}/console/w/${acct.workspace.slug}/tasks/${sid}`;
      await page.goto(taskPage);
      const form = 'form[data-settings]';
      assert.equal(await page.isChecked(`${form} input[type=checkbox][name=lanes]`), true, 'lanes by default');
      assert.equal(await page.inputValue(`${form} select[name=review]`), 'auto');
      assert.equal(await page.inputValue(`${form} input[name=base_branch]`), 'main');
      // The lane's file, as its session sees it.
      await page.click('a:has-text("draft.md")');
      await page.waitForSelector('h2:has-text("not landed")');
      assert.ok((await page.textContent('main')).includes('work in progress'));
      await page.screenshot({ path: `${SHOTS}54-task-lane-file.png`, fullPage: true });
      await page.goto(taskPage);
      await page.uncheck(`${form} input[type=checkbox][name=lanes]`);
      await page.selectOption(`${form} select[name=review]`, 'manual');
      await page.fill(`${form} input[name=base_branch]`, 'trunk');
      await Promise.all([page.waitForNavigation(), page.click(`${form} button:has-text("Save settings")`)]);
      await page.goto(taskPage);
      assert.equal(await page.isChecked(`${form} input[type=checkbox][name=lanes]`), false);
      assert.equal(await page.inputValue(`${form} select[name=review]`), 'manual');
      assert.equal(await page.inputValue(`${form} input[name=base_branch]`), 'trunk');
      await page.screenshot({ path: `${SHOTS}55-task-settings.png`, fullPage: true });
      const settings = (await call(operator, 'get_task', { task_id: sid })).settings;
      assert.deepEqual([settings.lanes, settings.review, settings.base_branch], [false, 'manual', 'trunk']);
    } finally {
      await browser.close();
    }
  });
});
