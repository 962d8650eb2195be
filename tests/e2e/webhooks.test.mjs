// Outgoing webhooks (issue 15 item 1) end to end against wrangler dev: a loopback receiver (allowed only by
// the development opt-in ALLOW_LOOPBACK_HTTP that run.sh sets; a private address stays refused) checks
// every Standard Webhooks signature itself; it answers 500 twice then 200 and the event arrives on the third
// try with the same webhook-id; each event has exactly one id; a receiver that always fails is
// dead-lettered after the short retry budget (WEBHOOK_RETRY_SCHEDULE in run.sh) and shown failed in the
// list and the console; and a real request.opened arrives from an agent's ask_user.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { BASE, rest, createAccount, createWorkspace, createAgent, ikey } from './helpers.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A receiver on loopback: `script(index)` → the HTTP status to answer; records each verified delivery. */
async function receiver(script) {
  const got = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      got.push({ headers: req.headers, body: Buffer.concat(chunks).toString() });
      res.writeHead(script(got.length - 1), { 'content-type': 'application/json' });
      res.end('{"received":true}');
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}/hook`, got,
    close: () => new Promise((r) => { server.closeAllConnections?.(); server.close(() => r()); }),
  };
}

/** The receiver's check, by the convention: HMAC-SHA256 of "id.timestamp.body" keyed by the secret's bytes. */
function verify(secret, d) {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const id = d.headers['webhook-id'];
  const ts = d.headers['webhook-timestamp'];
  const want = Buffer.from(createHmac('sha256', key).update(`${id}.${ts}.${d.body}`).digest('base64'));
  const fresh = Math.abs(Date.now() / 1000 - Number(ts)) < 300;
  return fresh && d.headers['webhook-signature'].split(' ').some((s) => {
    const got = Buffer.from(s.replace(/^v1,/, ''));
    return got.length === want.length && timingSafeEqual(got, want);
  });
}

async function until(what, check, ms = 30_000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

describe('outgoing webhooks', () => {
  let key; let ws;
  before(async () => {
    ({ key } = await createAccount());
    ws = (await createWorkspace(key)).slug;
  });

  const create = async (url, events, extra = {}) => {
    const r = await rest('POST', '/v1/webhooks', { key, body: { url, events, workspace: ws, ...extra } });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body;
  };
  const deliveries = async () => (await rest('GET', `/v1/webhooks?workspace=${ws}`, { key })).body.deliveries;

  test('the outbound rule: private addresses refused, bad events named, loopback only by the opt-in', async () => {
    let r = await rest('POST', '/v1/webhooks', { key, body: { url: 'http://10.0.0.1/hook', events: ['goal.met'], workspace: ws } });
    assert.equal(r.status, 400);
    assert.match(r.body.error.message, /`url`/);
    r = await rest('POST', '/v1/webhooks', { key, body: { url: 'https://example.com/h', events: ['goal.nope'], workspace: ws } });
    assert.equal(r.status, 400);
    assert.match(r.body.error.message, /^`events\[0\]` must be one of request\.opened, .*\(got "goal\.nope"\)$/);
  });

  test('500 twice, then 200: delivered on the third try with one id, every signature valid', async () => {
    const rx = await receiver((i) => (i < 2 ? 500 : 200));
    try {
      const made = await create(rx.url, ['goal.met']);
      assert.match(made.secret, /^whsec_/);
      const sent = await rest('POST', `/v1/webhooks/${made.webhook.webhook_id}/test`, { key, body: { workspace: ws } });
      assert.equal(sent.status, 200, JSON.stringify(sent.body));
      await until('three attempts', () => rx.got.length >= 3);
      await sleep(1500);
      assert.equal(rx.got.length, 3, 'nothing after the 200');
      for (const d of rx.got) assert.ok(verify(made.secret, d), `signature: ${JSON.stringify(d.headers)}`);
      assert.deepEqual(new Set(rx.got.map((d) => d.headers['webhook-id'])), new Set([sent.body.event_id]));
      assert.equal(JSON.parse(rx.got[0].body).type, 'webhook.test');
      const d = await until('delivered', async () => (await deliveries()).find((x) => x.delivery_id === sent.body.delivery_id && x.status === 'delivered'));
      assert.equal(d.attempts, 3);
      await rest('DELETE', `/v1/webhooks/${made.webhook.webhook_id}?workspace=${ws}`, { key });
    } finally { await rx.close(); }
  });

  test('a receiver that keeps failing is dead-lettered after the retry budget, with its last answer', async () => {
    const rx = await receiver(() => 503);
    try {
      const made = await create(rx.url, ['goal.met']);
      const sent = (await rest('POST', `/v1/webhooks/${made.webhook.webhook_id}/test`, { key, body: { workspace: ws } })).body;
      const d = await until('failed', async () => (await deliveries()).find((x) => x.delivery_id === sent.delivery_id && x.status === 'failed'), 60_000);
      assert.equal(d.last_status, 503);
      assert.match(d.last_body, /received/);
      assert.equal(new Set(rx.got.map((g) => g.headers['webhook-id'])).size, 1, 'one id on every retry');
      assert.equal(rx.got.length, d.attempts);
      await rest('DELETE', `/v1/webhooks/${made.webhook.webhook_id}?workspace=${ws}`, { key });
    } finally { await rx.close(); }
  });

  test("a real event: request.opened from an agent's ask_user arrives once, signed, with a link to answer", async () => {
    const rx = await receiver(() => 200);
    try {
      const made = await create(rx.url, ['request.opened', 'request.answered']);
      const agent = await createAgent(key, { workspace: ws });
      const s = await rest('POST', '/v1/sessions', { key, body: { agent_id: agent.agent_id, message: 'hi', idempotency_key: ikey('wh'), workspace: ws } });
      assert.equal(s.status, 201, JSON.stringify(s.body));
      const sid = s.body.session.session_id;
      const tok = await rest('POST', `/v1/sessions/${sid}/token`, { key });
      assert.equal(tok.status, 201, JSON.stringify(tok.body));
      // The agent asks; its call waits for the answer while the event goes out.
      const asking = fetch(`${BASE}/v1/session/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tok.body.token}`, 'content-type': 'application/json', accept: 'application/json', 'mcp-protocol-version': '2025-11-25' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'ask_user', arguments: { kind: 'question', payload: { prompt: 'Ship it?' } } } }),
      }).then((r) => r.json());
      const opened = await until('request.opened', () => rx.got.find((d) => JSON.parse(d.body).type === 'request.opened'));
      assert.ok(verify(made.secret, opened));
      const data = JSON.parse(opened.body).data;
      assert.equal(data.kind, 'question');
      assert.equal(data.payload.prompt, 'Ship it?');
      assert.equal(data.session_id, sid);
      assert.match(data.answer_url, /\/console$/);
      const ans = await rest('POST', `/v1/tasks/${data.task_id}/requests/${data.request_id}/answer`, { key, body: { answer: 'yes' } });
      assert.equal(ans.status, 200, JSON.stringify(ans.body));
      const answered = await asking;
      assert.match(JSON.stringify(answered), /yes/);
      await until('request.answered', () => rx.got.find((d) => JSON.parse(d.body).type === 'request.answered'));
      await sleep(1000);
      const ids = rx.got.map((d) => d.headers['webhook-id']);
      assert.equal(new Set(ids).size, ids.length, `exactly one delivery per event: ${ids}`);
    } finally { await rx.close(); }
  });
});
