// Slack with buttons (issue 39) under wrangler dev, against the fake of Slack's Web API that run.sh starts
// (tests/e2e/fakes.mjs, fakeSlack): a workspace connects its Slack app; an agent's access request is posted
// with Approve once / Deny / Open in agentsky; a member links their Slack user with `/agentsky link <code>`;
// a click signed with the app's signing secret approves it (the agent's waiting request_access returns the
// grant) and the message is updated with who decided; stale and forged clicks are refused; a production
// deploy is posted with Open in agentsky only.
import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync } from 'node:fs';
import { createHmac } from 'node:crypto';
import { BASE, createAccount, createWorkspace, createAgent, rest, ikey, agentTool } from './helpers.mjs';

const SLACK = process.env.AGENTSKY_E2E_SLACK_URL;
const TOKEN = process.env.AGENTSKY_E2E_SLACK_TOKEN;
const SECRET = `slack-signing-${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
const TEAM = 'T0E2E';

const calls = async () => (await (await fetch(`${SLACK}/_e2e/calls`)).json());
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A call from Slack to the server, form-encoded and signed as Slack signs it (v0). */
async function fromSlack(path, fields, { at = Math.floor(Date.now() / 1000), secret = SECRET } = {}) {
  const body = new URLSearchParams(fields).toString();
  const signature = `v0=${createHmac('sha256', secret).update(`v0:${at}:${body}`).digest('hex')}`;
  const res = await fetch(`${BASE}${path}`, {
    method: 'POST', body,
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-slack-request-timestamp': String(at), 'x-slack-signature': signature },
  });
  return { status: res.status, body: await res.json() };
}

const click = (user, button, opts) => fromSlack('/v1/slack/interactions', {
  payload: JSON.stringify({ type: 'block_actions', team: { id: TEAM }, user: { id: user }, channel: { id: 'C0E2E' },
    actions: [{ action_id: button.action_id, value: button.value }] }),
}, opts);


/** The message posted for the newest request: its buttons by label. */
async function posted(since) {
  for (let i = 0; i < 50; i += 1) {
    const message = (await calls()).slice(since).find((c) => c.method === 'chat.postMessage');
    if (message) return message;
    await sleep(100);
  }
  assert.fail('no chat.postMessage');
}

describe('Slack with buttons', () => {
  let acct; let ws; let token;
  before(async () => {
    appendFileSync(new URL('./.state/canaries.txt', import.meta.url), `${TOKEN}\n${SECRET}\n`);
    acct = await createAccount();
    ws = await createWorkspace(acct.key);
    const refused = await rest('PUT', `/v1/slack?workspace=${ws.slug}`, { key: acct.key, body: { bot_token: 'xoxb-wrong-token', signing_secret: SECRET, channel: 'C0E2E' } });
    assert.equal(refused.status, 400, JSON.stringify(refused.body));
    const connected = await rest('PUT', `/v1/slack?workspace=${ws.slug}`, { key: acct.key, body: { bot_token: TOKEN, signing_secret: SECRET, channel: 'C0E2E' } });
    assert.equal(connected.status, 200, JSON.stringify(connected.body));
    assert.equal(connected.body.team_id, TEAM);
    assert.ok(!JSON.stringify(connected.body).includes(TOKEN));
    for (const [name, env] of [['stage', 'staging'], ['web', 'prod']]) {
      const r = await rest('POST', `/v1/connectors?workspace=${ws.slug}`, { key: acct.key, body: { name, provider: 'vercel', env, credentials: { env: { VERCEL_TOKEN: 'vt' } } } });
      assert.equal(r.status, 200, JSON.stringify(r.body));
    }
    const agent = await createAgent(acct.key, { workspace: ws.slug });
    const s = await rest('POST', `/v1/sessions?workspace=${ws.slug}`, { key: acct.key, body: { agent_id: agent.agent_id, message: 'ship', idempotency_key: ikey('slack') } });
    assert.ok([200, 201].includes(s.status), JSON.stringify(s.body));
    token = (await rest('POST', `/v1/sessions/${s.body.session.session_id}/token`, { key: acct.key })).body.token;
  });

  test('a click by a linked member approves once, and the message says who decided', async () => {
    const since = (await calls()).length;
    const asked = agentTool(token, 'request_access', { target: 'stage', scope: ['deploy'], reason: 'ship the <site>' });
    const message = await posted(since);
    assert.equal(message.body.channel, 'C0E2E');
    assert.match(message.body.text, /ship the &lt;site&gt;/);
    const buttons = message.body.blocks[1].elements;
    assert.deepEqual(buttons.map((b) => b.text.text), ['Approve once', 'Deny', 'Open in agentsky']);

    // Unlinked, then stale and forged: nothing answered.
    assert.match((await click('UADA', buttons[0])).body.said, /\/agentsky link/);
    assert.equal((await click('UADA', buttons[0], { at: Math.floor(Date.now() / 1000) - 400 })).status, 401, 'stale');
    assert.equal((await click('UADA', buttons[0], { secret: 'not-the-signing-secret' })).status, 401, 'forged');

    const code = await rest('POST', `/v1/slack/link-code?workspace=${ws.slug}`, { key: acct.key, body: {} });
    assert.equal(code.status, 200, JSON.stringify(code.body));
    const linked = await fromSlack('/v1/slack/commands', { team_id: TEAM, user_id: 'UADA', command: '/agentsky', text: `link ${code.body.code}` });
    assert.equal(linked.status, 200);
    assert.match(linked.body.text, /^Linked/);
    const again = await fromSlack('/v1/slack/commands', { team_id: TEAM, user_id: 'UEVE', command: '/agentsky', text: `link ${code.body.code}` });
    assert.match(again.body.text, /not valid/, 'a code works once');

    const before = (await calls()).length;
    const r = await click('UADA', buttons[0]);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.said, 'Answered: approve.');
    const grant = await asked;
    assert.equal(grant.status, 'active', JSON.stringify(grant));
    const update = (await calls()).slice(before).find((c) => c.method === 'chat.update');
    assert.ok(update, 'the message is updated');
    assert.equal(update.body.ts, message.ts ?? update.body.ts);
    assert.match(update.body.text, /approved by .* \(via Slack\)/);
    assert.equal(update.body.blocks.length, 2, 'no buttons left');
    const audit = await rest('GET', `/v1/audit?workspace=${ws.slug}&limit=200`, { key: acct.key });
    assert.ok(audit.body.entries.some((e) => e.action === 'access_approved' && e.detail.includes('via Slack')), JSON.stringify(audit.body.entries.slice(0, 5)));
  });

  test('a production deploy is posted with Open in agentsky only, and a forged approve is refused', async () => {
    const since = (await calls()).length;
    const asked = agentTool(token, 'request_access', { target: 'web', scope: ['deploy'], reason: 'release' });
    const message = await posted(since);
    const buttons = message.body.blocks[1].elements;
    assert.deepEqual(buttons.map((b) => b.text.text), ['Open in agentsky']);
    assert.match(buttons[0].url, new RegExp(`/console/w/${ws.slug}#request-req_`));
    const requestId = buttons[0].url.split('#request-')[1];
    const requests = await rest('GET', `/v1/requests?workspace=${ws.slug}`, { key: acct.key });
    const open = requests.body.requests.find((q) => q.request_id === requestId);
    const forged = { action_id: 'answer:approve', value: JSON.stringify({ t: open.task_id, r: requestId, a: 'approve' }) };
    const r = await click('UADA', forged);
    assert.match(r.body.said, /after signing in/);
    const denied = await rest('POST', `/v1/tasks/${open.task_id}/requests/${requestId}/answer`, { key: acct.key, body: { answer: 'deny' } });
    assert.equal(denied.status, 200, JSON.stringify(denied.body));
    assert.equal((await asked).status, 'denied');
  });
});
