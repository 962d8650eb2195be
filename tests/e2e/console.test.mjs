// The console in a real browser: headless Chromium (Debian's package, driven by playwright-core) against
// wrangler dev. A person signs in with a key; an agent's ask_user (plan, decision, question) and
// request_access appear in Approvals without a reload and answering each in the page releases the agent's
// waiting call with that answer; the board shows a task waiting for you, then running; a transcript grows
// live; a key is created and revoked; a routine is paused. A screenshot of every page lands in
// tests/e2e/.state/screenshots (look at them).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, existsSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { BASE, createAccount, createAgent, rest, ok, rawMcp, ikey, uniq, agentTool } from './helpers.mjs';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SHOTS = new URL('./.state/screenshots/', import.meta.url).pathname;


describe('the console in headless Chromium', () => {
  let browser; let page; let acct; let ws; let mcp;
  const shot = async (name) => { await page.screenshot({ path: `${SHOTS}${name}.png`, fullPage: true }); };
  const at = (path) => `${BASE}/console/w/${ws}${path}`;

  before(async () => {
    assert.ok(existsSync(CHROMIUM), `no browser at ${CHROMIUM}: scripts/setup.sh installs Debian's chromium for make test`);
    mkdirSync(SHOTS, { recursive: true });
    acct = await createAccount(`Ada ${uniq()}`);
    ws = acct.workspace.slug;
    mcp = rawMcp(acct.key);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
        '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
    });
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.on('pageerror', (e) => { throw new Error(`page error: ${e.message}`); });
  });
  after(async () => { await browser?.close(); });

  test('sign in with a key', async () => {
    await page.goto(`${BASE}/console`);
    assert.match(page.url(), /\/console\/login/);
    await shot('01-sign-in');
    await page.fill('input[name=key]', acct.key);
    await page.click('button[type=submit]');
    await page.waitForURL(`**/console/w/${ws}`);
    assert.equal(await page.textContent('h1'), 'Approvals');
    const cookies = await page.context().cookies();
    const c = cookies.find((x) => x.name === 'agentsky_console');
    assert.ok(c && c.httpOnly && c.sameSite === 'Lax', JSON.stringify(cookies));
  });

  test('requests appear in Approvals without a reload; answering each releases the agent with that answer', async () => {
    const agent = await createAgent(acct.key, { name: 'Planner', workspace: ws });
    const s = ok(await mcp.tool('start_session', { agent_id: agent.agent_id, message: 'Ship the pricing page', idempotency_key: ikey(), workspace: ws }), 'start');
    const sid = s.session.session_id;
    const tok = await rest('POST', `/v1/sessions/${sid}/token`, { key: acct.key });
    assert.equal(tok.status, 201, JSON.stringify(tok.body));
    const token = tok.body.token;
    const target = await rest('POST', '/v1/connectors', { key: acct.key, body: { name: 'web', provider: 'vercel', env: 'prod', credentials: { env: { VERCEL_TOKEN: 'e2e' } }, workspace: ws } });
    assert.equal(target.status, 200, JSON.stringify(target.body));
    await page.goto(at(''));
    await shot('02-approvals-empty');

    // Each ask waits in the agent's call until the person answers in the page.
    const cases = [
      { kind: 'plan', args: { kind: 'plan', payload: { summary: 'Add a <pricing> table', files: ['pricing.html'] } },
        answer: async (card) => { await card.locator('textarea[name=note]').fill('Looks good'); await card.locator('button[value=approve]').click(); },
        expect: { kind: 'plan', answer: 'approve', note: 'Looks good' } },
      { kind: 'decision', args: { kind: 'decision', payload: { prompt: 'Which currency?', options: ['EUR', 'USD'] } },
        answer: async (card) => { await card.locator('button[value=USD]').click(); },
        expect: { kind: 'decision', answer: 'USD' } },
      { kind: 'question', args: { kind: 'question', payload: { prompt: 'What is the launch date?' } },
        answer: async (card) => { await card.locator('textarea[name=answer]').fill('Monday'); await card.locator('button[type=submit]').click(); },
        expect: { kind: 'question', answer: 'Monday' } },
    ];
    for (const c of cases) {
      const t0 = Date.now();
      const waiting = agentTool(token, 'ask_user', c.args);
      const card = page.locator(`article.request[data-kind=${c.kind}]`);
      await card.waitFor({ timeout: 5000 });
      const appeared = Date.now() - t0;
      assert.ok(appeared < 2500, `the ${c.kind} appeared ${appeared} ms after it was asked`);
      assert.match(await page.title(), /^\(1\) Approvals/);
      await shot(`03-approvals-${c.kind}`);
      await c.answer(card);
      const answered = await waiting;
      assert.deepEqual(answered.resolution, c.expect, `${c.kind}: ${JSON.stringify(answered)}`);
      await page.locator(`article.request[data-kind=${c.kind}]`).waitFor({ state: 'detached', timeout: 5000 });
    }

    // An access request: target, environment, scopes and the reason word for word; approve once for 15 min.
    const waiting = agentTool(token, 'request_access', { target: 'web', scope: ['deploy'], reason: 'Deploy <v2> to production' });
    const card = page.locator('article.request[data-kind=access]');
    await card.waitFor({ timeout: 5000 });
    const text = await card.textContent();
    assert.ok(text.includes('web') && text.includes('prod') && text.includes('deploy') && text.includes('Deploy <v2> to production'), text);
    await shot('04-approvals-access');
    await card.locator('select[name=expires_in_minutes]').selectOption('15');
    await card.locator('button:has-text("Approve once")').click();
    const grant = await waiting;
    assert.equal(grant.status, 'active', JSON.stringify(grant));
    assert.ok(grant.expiresAt - Date.now() <= 15 * 60_000 + 5000, 'for the 15 minutes chosen');

    // Denied with a reason.
    const denied = agentTool(token, 'request_access', { target: 'web', scope: ['delete'], reason: 'Clean up old deploys' });
    const dcard = page.locator('article.request[data-kind=access]');
    await dcard.waitFor({ timeout: 5000 });
    await dcard.locator('input[name=note]').fill('Not today');
    await dcard.locator('button:has-text("Deny")').click();
    assert.equal((await denied).status, 'denied');
  });

  test('the board shows a task waiting for you, then running; the transcript grows live', async () => {
    const agent = await createAgent(acct.key, { name: 'Sleeper', workspace: ws });
    const s = ok(await mcp.tool('start_session', { agent_id: agent.agent_id, message: 'Write the report', idempotency_key: ikey(), workspace: ws }), 'start');
    const sid = s.session.session_id;
    const token = (await rest('POST', `/v1/sessions/${sid}/token`, { key: acct.key })).body.token;
    await page.goto(at('/board'));
    const taskCard = page.locator(`article.task[data-task=${sid}]`);
    await taskCard.waitFor();
    const asked = agentTool(token, 'ask_user', { kind: 'question', payload: { prompt: 'Which quarter?' } });
    await page.locator(`article.task[data-task=${sid}][data-state="waiting for you"]`).waitFor({ timeout: 5000 });
    await shot('05-board-waiting');
    // Answered over the API this time; the board moves on by itself.
    const req = ok(await mcp.tool('list_requests', { workspace: ws }), 'list_requests').requests.find((r) => r.session_id === sid);
    ok(await mcp.tool('answer_request', { task_id: req.task_id, request_id: req.request_id, answer: 'Q3' }), 'answer');
    assert.equal((await asked).resolution.answer, 'Q3');
    ok(await mcp.tool('send_message', { session_id: sid, message: '/sleep 4 then report', idempotency_key: ikey() }), 'send');
    await page.locator(`article.task[data-task=${sid}][data-state=running]`).waitFor({ timeout: 5000 });
    await shot('06-board-running');

    // Opened while the turn sleeps: its reply is not there yet, and arrives without a reload.
    await page.goto(at(`/sessions/${sid}`));
    const reply = page.locator('.transcript .ev.agent', { hasText: 'echo: /sleep 4 then report' });
    assert.equal(await reply.count(), 0, 'the turn is still running when the page loads');
    await reply.waitFor({ timeout: 15000 });
    // The head follows the turn's end too: the session shows idle without a reload.
    await page.locator('header[data-live="session-head"] .state', { hasText: /^idle$/ }).waitFor({ timeout: 5000 });
    assert.equal(await page.locator('button', { hasText: 'Stop turn' }).count(), 0, 'Stop turn goes with the turn');
    await shot('07-session');
    // Sending from the page.
    await page.fill('textarea[name=message]', 'hello from the console');
    await page.locator('form:has(textarea[name=message]) button[type=submit]').click();
    await page.waitForURL(`**/sessions/${sid}`);
    const flash = await page.locator('.flash').textContent();
    assert.ok(/done|busy|running/i.test(flash), flash);
  });

  test('a key is created (shown once) and revoked; a routine is paused', async () => {
    await page.goto(at('/keys'));
    await shot('08-keys');
    await page.fill('input[name=name]', 'laptop');
    await page.click('form:has(input[name=name]) button[type=submit]');
    const secret = (await page.locator('[data-secret]').textContent()).trim();
    assert.match(secret, /^ast_/);
    await shot('09-key-created');
    const listed = await rest('GET', '/v1/keys', { key: secret });
    assert.equal(listed.status, 200, 'the new key works');
    await page.goto(at('/keys'));
    page.once('dialog', (d) => d.accept());
    await page.locator('tr', { hasText: 'laptop' }).locator('button:has-text("Revoke")').click();
    await page.waitForURL(at('/keys'));
    assert.equal((await rest('GET', '/v1/keys', { key: secret })).status, 401, 'revoked from the next call on');

    const agent = await createAgent(acct.key, { name: 'Daily', workspace: ws });
    ok(await mcp.tool('create_routine', { name: 'standup', agent_id: agent.agent_id, message: 'standup', cron: '0 9 * * 1-5', timezone: 'Europe/Berlin', workspace: ws }), 'routine');
    await page.goto(at('/routines'));
    await shot('10-routines');
    const card = page.locator('article.routine', { hasText: 'standup' });
    await card.locator('button:has-text("Pause")').click();
    await page.waitForURL(at('/routines'));
    await page.locator('article.routine', { hasText: 'standup' }).locator('text=paused').first().waitFor();
    const r = ok(await mcp.tool('list_routines', { workspace: ws }), 'list').routines.find((x) => x.name === 'standup');
    assert.equal(r.enabled, false);
  });

  test('every other page renders', async () => {
    for (const [name, path] of [['11-usage', '/usage'], ['12-agents', '/agents'], ['13-access', '/access'], ['14-runners', '/runners'], ['15-members', '/members']]) {
      const res = await page.goto(at(path));
      assert.equal(res.status(), 200, path);
      await shot(name);
    }
  });

  test('the Webhooks page lists an endpoint and its test delivery', async () => {
    // Nothing listens on port 9: the test event is retried on run.sh's short schedule and dead-lettered.
    const made = ok(await mcp.tool('create_webhook', { url: 'http://127.0.0.1:9/hook', events: ['request.opened'], workspace: ws }), 'create_webhook');
    ok(await mcp.tool('test_webhook', { webhook_id: made.webhook.webhook_id, workspace: ws }), 'test_webhook');
    await new Promise((r) => setTimeout(r, 5000));
    const res = await page.goto(at('/webhooks'));
    assert.equal(res.status(), 200);
    await page.locator('code', { hasText: '127.0.0.1:9/hook' }).first().waitFor();
    await shot('16-webhooks');
  });

  test("the Health page draws the workspace's calls, errors, latency and turns; Usage draws the day", async () => {
    // Some traffic in this workspace: calls that succeed, one that fails, and an echo turn.
    const agent = await createAgent(acct.key, { name: 'Health probe', workspace: ws });
    for (let i = 0; i < 5; i++) await rest('GET', `/v1/agents?workspace=${ws}`, { key: acct.key });
    await rest('GET', '/v1/sessions/ses_missing', { key: acct.key });
    ok(await mcp.tool('start_session', { agent_id: agent.agent_id, message: 'hi', idempotency_key: ikey(), workspace: ws }), 'start');
    await new Promise((r) => setTimeout(r, 1500));
    const m = await rest('GET', `/v1/metrics?workspace=${ws}`, { key: acct.key });
    assert.equal(m.status, 200, JSON.stringify(m.body));
    assert.ok(m.body.totals.calls >= 7, `calls counted: ${JSON.stringify(m.body.totals)}`);
    assert.ok(m.body.totals.errors >= 1, 'the 404 is an error');
    assert.ok(m.body.totals.turns >= 1, 'the echo turn is counted');
    const res = await page.goto(at('/health'));
    assert.equal(res.status(), 200);
    assert.equal(await page.textContent('h1'), 'Health');
    assert.equal(await page.locator('.charts svg.chart').count(), 4, 'four charts');
    assert.ok(await page.locator('.charts rect.bar.calls').count() >= 1, 'calls drawn as bars');
    assert.ok(await page.locator('.charts polyline.line').count() >= 1, 'lines drawn');
    const calls = Number(await page.textContent('[data-metric=calls]'));
    assert.ok(calls >= 7, `the page's total: ${calls}`);
    await page.locator('td', { hasText: 'Health probe' }).first().waitFor();
    await shot('17-health');
    await page.selectOption('select[name=window]', 'day');
    await page.click('form.row button[type=submit]');
    await page.waitForURL(/window=day/);
    assert.equal(await page.locator('.charts svg.chart').count(), 4);
    const usage = await page.goto(at('/usage'));
    assert.equal(usage.status(), 200);
    assert.equal(await page.locator('.charts svg.chart').count(), 4, 'the Usage page draws the last day');
    assert.ok(await page.locator('.charts rect.bar.calls').count() >= 1, "the day's calls are drawn in their 15 minutes");
    await shot('18-usage-activity');
  });
});
