// Money as a client sees it: a visitor's message through an interactive share link is the link's, is
// charged like any other turn, and is refused once the wallet is empty (which never goes below zero); a
// paid public agent's price moves from the caller's wallet to the owner's, once per run, and a caller who
// cannot pay is refused with nothing left behind. Money in: a top-up and a saved card through Stripe's
// checkout (the fake Stripe run.sh starts), completed by signed events the webhook applies once, receipts,
// and the automatic top-up a spending turn starts once.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  BASE, MCP_URL, rest, createAccount, createWorkspace, createAgent, addCredit, putSecret, rawMcp, readTurn, readAll, ok,
  toolError, toolErrorCode, ikey, uniq, texts, checked,
} from './helpers.mjs';
import { fakeOpenAI, stripeEvent, stripeSignature } from './fakes.mjs';

// run.sh prices this model at a cent a token (PRICES {"e2e-priced": [1000000, 2000000]}).
const MODEL = 'e2e-priced';
// Enough for a model call's hold at that price: the request's bytes and the reply's allowance.
const CREDIT = 100_000;

const balance = async (tool, slug) => ok(await tool('get_usage', { workspace: slug }), 'get_usage').balance_cents;

/** A visitor's POST through the link, as the page's form sends it. */
async function visit(url, message) {
  const res = await fetch(url, { method: 'POST', body: new URLSearchParams({ message }), redirect: 'manual' });
  return { status: res.status, text: await res.text() };
}

describe('money: a share link spends from the wallet, as the link', () => {
  let acct; let tool; let cheap; let greedy;
  before(async () => {
    acct = await createAccount();
    tool = rawMcp(acct.key).tool;
    cheap = await fakeOpenAI(() => ({ content: 'ok' }), { usage: { prompt_tokens: 7, completion_tokens: 3 } });
    // A model whose every answer costs more than any wallet here holds.
    greedy = await fakeOpenAI(() => ({ content: 'that was expensive' }), { usage: { prompt_tokens: 100_000_000, completion_tokens: 0 } });
  });
  after(async () => { await cheap?.close(); await greedy?.close(); });

  test('a visitor\'s message is from the link, is charged, and an empty wallet refuses the next one', async () => {
    const ws = await createWorkspace(acct.key);
    await putSecret(acct.key, 'OPENAI_BASE_URL', cheap.baseUrl, ws.slug);
    await putSecret(acct.key, 'OPENAI_API_KEY', 'sk-e2e', ws.slug);
    const agent = await createAgent(acct.key, { workspace: ws.slug, harness: 'openai', model: MODEL });
    assert.equal(await addCredit(ws.slug, CREDIT), CREDIT);

    const started = ok(await tool('start_session', { agent_id: agent.agent_id, message: 'hello', idempotency_key: ikey('m'), workspace: ws.slug }), 'start_session');
    const sid = started.session.session_id;
    const first = await readTurn(tool, { session_id: sid, cursor: started.cursor, message_id: started.message_id, wait_seconds: 20 });
    assert.equal(first.events.at(-1).reason, 'completed');
    assert.equal(await balance(tool, ws.slug), CREDIT - 13, '7 + 3×2 cents; the rest of the hold came back');

    const url = ok(await tool('share_session', { session_id: sid }), 'share_session').share_url;
    assert.equal((await visit(url, 'a question from outside')).status, 303);
    const second = await readTurn(tool, { session_id: sid, cursor: first.cursor, wait_seconds: 20 });
    const visitor = second.events.find((e) => e.type === 'user_message');
    assert.equal(visitor.text, 'a question from outside');
    assert.equal(visitor.from, 'share_link', 'the link, not the owner');
    const sent = cheap.requests.at(-1).body.messages.at(-1);
    assert.match(sent.content, /^\[a message from a visitor through this session's share link, not from the user\]\na question from outside$/);
    assert.equal(await balance(tool, ws.slug), CREDIT - 26, 'the visitor\'s turn is charged like any other');
    const page = await (await fetch(url)).text();
    assert.ok(page.includes('<b>visitor</b><pre>a question from outside'), page);

    // A turn that costs more than the wallet holds takes it to zero, never below; then the link is refused.
    await putSecret(acct.key, 'OPENAI_BASE_URL', greedy.baseUrl, ws.slug);
    assert.equal((await visit(url, 'an expensive question')).status, 303);
    const third = await readTurn(tool, { session_id: sid, cursor: second.cursor, wait_seconds: 20 });
    assert.equal(third.events.at(-1).reason, 'completed');
    const usage = ok(await tool('get_usage', { workspace: ws.slug }), 'get_usage');
    assert.equal(usage.balance_cents, 0, 'never below zero');
    assert.equal(usage.total_cents, CREDIT, 'the ledger holds every cent that left, and no more');
    const calls = cheap.requests.length + greedy.requests.length;
    const refused = await visit(url, 'one more');
    assert.equal(refused.status, 402, refused.text);
    assert.match(refused.text, /holds 0 cents/);
    assert.equal(cheap.requests.length + greedy.requests.length, calls, 'no model was called');
    const log = await readAll(tool, sid);
    assert.deepEqual(texts(log.events, 'user_message'), ['hello', 'a question from outside', 'an expensive question']);
    // The owner is refused the same way, by the same rule.
    const owner = await tool('send_message', { session_id: sid, message: 'more', idempotency_key: ikey() });
    assert.equal(toolErrorCode(owner, 'send_message on an empty wallet'), 'insufficient_credits');
  });
});

describe('money: a paid public agent', () => {
  let ada; let bo; let adaTool; let boTool;
  before(async () => {
    ada = await createAccount();
    bo = await createAccount();
    adaTool = rawMcp(ada.key).tool;
    boTool = rawMcp(bo.key).tool;
  });

  test('costs its price once per run, from the caller\'s wallet to the owner\'s, and refuses a caller who cannot pay', async () => {
    const theirs = await createWorkspace(bo.key);
    const handle = `paid-${uniq()}`;
    await createAgent(bo.key, { workspace: theirs.slug, handle, is_public: true, price_cents_per_run: 25 });
    const mine = await createWorkspace(ada.key);
    assert.equal(await addCredit(mine.slug, 60), 60);

    // Ten concurrent retries of one start: one session, one payment.
    const args = { agent_id: `@${handle}`, message: 'refactor this', idempotency_key: ikey('paid'), workspace: mine.slug };
    const starts = await Promise.all(Array.from({ length: 10 }, () => adaTool('start_session', args)));
    const sids = new Set(starts.map((r) => ok(r, 'start_session').session.session_id));
    assert.equal(sids.size, 1, 'one session');
    const [sid] = sids;
    assert.equal(await balance(adaTool, mine.slug), 35);
    assert.equal(await balance(boTool, theirs.slug), 25);
    const usage = ok(await adaTool('get_usage', { session_id: sid }), 'get_usage');
    assert.equal(usage.session.spent_cents, 25, 'the price is the run\'s spend');
    assert.deepEqual(usage.session.entries.map((e) => [e.kind, e.cents]), [['run_price', 25]]);
    const earned = ok(await boTool('get_usage', { workspace: theirs.slug, group_by: 'model' }), 'get_usage (owner)');
    assert.deepEqual(earned.groups.map((g) => [g.key, g.cents]), [['run_earning', -25]]);

    ok(await adaTool('start_session', { ...args, idempotency_key: ikey('paid') }), 'second run');
    assert.equal(await balance(adaTool, mine.slug), 10);
    assert.equal(await balance(boTool, theirs.slug), 50);
    const broke = await adaTool('start_session', { ...args, idempotency_key: ikey('paid') });
    assert.equal(toolErrorCode(broke, 'a run the wallet cannot pay'), 'insufficient_credits');
    assert.match(toolError(broke).message, /needs at least 25/);
    assert.equal(await balance(adaTool, mine.slug), 10, 'nothing moved');
    assert.equal(await balance(boTool, theirs.slug), 50);
    const listed = ok(await adaTool('list_sessions', { workspace: mine.slug }), 'list_sessions').sessions;
    assert.equal(listed.length, 2, 'the refused start left no session');
    // REST says the same, with 402.
    const r = await rest('POST', '/v1/sessions', { key: ada.key, body: { ...args, idempotency_key: ikey('paid') } });
    assert.equal(r.status, 402, JSON.stringify(r.body));
  });
});

const STRIPE = process.env.AGENTSKY_E2E_STRIPE_URL;
const STRIPE_KEY = process.env.AGENTSKY_E2E_STRIPE_KEY;
const WHSEC = process.env.AGENTSKY_E2E_STRIPE_WEBHOOK_SECRET;

/** GET from the fake Stripe API, as its own client would. */
async function stripeGet(path) {
  const res = await fetch(`${STRIPE}${path}`, { headers: { authorization: `Bearer ${STRIPE_KEY}` } });
  assert.equal(res.status, 200, `GET ${path}`);
  return res.json();
}

/** Posts an event to the webhook as Stripe does, signed with `secret` at `t`. */
async function deliver(event, { secret = WHSEC, t } = {}) {
  const body = JSON.stringify(event);
  const res = await fetch(`${BASE}/v1/billing/stripe/webhook`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': stripeSignature(body, secret, t) }, body,
  });
  return { status: res.status, body: await res.json() };
}

/** The person paid (or saved the card) on the checkout page: the completed session's event. */
async function completed(sessionId) {
  const session = await stripeGet(`/v1/checkout/sessions/${sessionId}`);
  const done = { ...session, status: 'complete', payment_status: session.mode === 'payment' ? 'paid' : session.payment_status };
  return stripeEvent('checkout.session.completed', done);
}

describe('money in: Stripe checkout, its signed webhook, receipts and the automatic top-up', () => {
  let acct; let client; let model;
  const call = async (name, args) => client.callTool({ name, arguments: args });
  before(async () => {
    assert.ok(STRIPE && STRIPE_KEY && WHSEC, 'run.sh starts the fake Stripe and names it');
    acct = await createAccount();
    client = new Client({ name: 'agentsky-e2e-money', version: '0.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(MCP_URL), {
      requestInit: { headers: { authorization: `Bearer ${acct.key}` } },
    }));
    checked(client, 'TS SDK v1');
    model = await fakeOpenAI(() => ({ content: 'ok' }), { usage: { prompt_tokens: 7, completion_tokens: 3 } });
  });
  after(async () => { await client?.close(); await model?.close(); });

  test('a top-up goes through checkout and its paid event credits the wallet once, with a receipt', async () => {
    const ws = await createWorkspace(acct.key);
    // Money is moved seldom: `top_up` and `list_receipts` are operations of the one `manage` tool.
    const tools = (await client.listTools()).tools;
    const managed = tools.find((t) => t.name === 'manage').inputSchema.properties.operation.enum;
    assert.ok(managed.includes('top_up') && managed.includes('list_receipts'), managed.join());
    const manage = (operation, args) => call('manage', { operation, arguments: args });
    assert.equal(toolErrorCode(await manage('top_up', { workspace: ws.slug, amount_cents: 100 }), 'too little'), 'invalid_params');

    const out = ok(await call('top_up', { workspace: ws.slug, amount_cents: 2_500 }), 'top_up');
    assert.ok(out.url.startsWith(`${STRIPE}/c/pay/`), out.url);
    const session = await stripeGet(`/v1/checkout/sessions/${out.checkout_session_id}`);
    assert.equal(session.mode, 'payment');
    assert.equal(session.amount_total, 2_500);
    assert.equal(session.currency, 'usd');
    assert.match(session.client_reference_id, /^ws_/);
    assert.equal(session.metadata.workspace, session.client_reference_id);
    assert.ok(session.success_url.startsWith(`${BASE}/console/w/${ws.slug}/usage`), session.success_url);

    const event = await completed(out.checkout_session_id);
    const now = Math.floor(Date.now() / 1000);
    assert.equal((await deliver(event, { secret: 'whsec_wrong' })).status, 401, 'another secret');
    assert.equal((await deliver(event, { t: now - 600 })).status, 401, 'ten minutes old');
    assert.equal(ok(await call('get_usage', { workspace: ws.slug }), 'get_usage').balance_cents, 0);
    const first = await deliver(event);
    assert.deepEqual([first.status, first.body.applied], [200, true], JSON.stringify(first.body));
    const replay = await deliver(event);
    assert.deepEqual([replay.status, replay.body.applied], [200, false], 'a redelivered event is applied once');
    const unknown = await deliver(stripeEvent('customer.updated', { id: 'cus_x', object: 'customer' }));
    assert.deepEqual([unknown.status, unknown.body.applied], [200, false], 'unknown events are answered and ignored');

    const r = ok(await call('list_receipts', { workspace: ws.slug }), 'list_receipts');
    assert.equal(r.balance_cents, 2_500);
    assert.equal(r.receipts.length, 1);
    assert.deepEqual(
      [r.receipts[0].source, r.receipts[0].cents, r.receipts[0].stripe_object_id, r.receipts[0].stripe_event_id],
      ['checkout', 2_500, out.checkout_session_id, event.id],
    );
  });

  test('a saved card shows in get_usage, and the automatic top-up fires once per pending top-up', async () => {
    const ws = await createWorkspace(acct.key);
    assert.equal(ok(await call('get_usage', { workspace: ws.slug }), 'get_usage').card_saved, false);
    const noCard = await call('set_auto_top_up', { workspace: ws.slug, enabled: true, threshold_cents: 1_000, amount_cents: 500 });
    assert.equal(toolErrorCode(noCard, 'auto top-up without a card'), 'conflict');

    const setup = ok(await call('save_card', { workspace: ws.slug }), 'save_card');
    const session = await stripeGet(`/v1/checkout/sessions/${setup.checkout_session_id}`);
    assert.equal(session.mode, 'setup');
    assert.match(session.customer, /^cus_/);
    const again = ok(await call('save_card', { workspace: ws.slug }), 'save_card again');
    assert.equal((await stripeGet(`/v1/checkout/sessions/${again.checkout_session_id}`)).customer, session.customer, 'one customer per workspace');
    assert.equal((await deliver(await completed(setup.checkout_session_id))).body.applied, true);
    assert.equal(ok(await call('get_usage', { workspace: ws.slug }), 'get_usage').card_saved, true);

    // A model at a cent a token holds about 17,000 cents a call: top up 50,000 and set the threshold just
    // under it, so the first turn (13 cents) crosses it.
    const paid = ok(await call('top_up', { workspace: ws.slug, amount_cents: 50_000 }), 'top_up');
    assert.equal((await deliver(await completed(paid.checkout_session_id))).body.applied, true);
    const set = ok(await call('set_auto_top_up', { workspace: ws.slug, enabled: true, threshold_cents: 49_995, amount_cents: 500 }), 'set_auto_top_up');
    assert.deepEqual(set.auto_top_up, { enabled: true, threshold_cents: 49_995, amount_cents: 500, pending: false, last_error: null });

    await putSecret(acct.key, 'OPENAI_BASE_URL', model.baseUrl, ws.slug);
    await putSecret(acct.key, 'OPENAI_API_KEY', 'sk-e2e', ws.slug);
    const agent = await createAgent(acct.key, { workspace: ws.slug, harness: 'openai', model: MODEL });
    const intents = async () => (await stripeGet('/v1/payment_intents')).data.filter((p) => p.metadata.workspace === session.client_reference_id);
    const started = ok(await call('start_session', { agent_id: agent.agent_id, message: 'one', idempotency_key: ikey('auto'), workspace: ws.slug }), 'start_session');
    const sid = started.session.session_id;
    const tool = (name, args) => call(name, args);
    const first = await readTurn(tool, { session_id: sid, cursor: started.cursor, message_id: started.message_id, wait_seconds: 20 });
    assert.equal(first.events.at(-1).reason, 'completed');
    let made = await intents();
    assert.equal(made.length, 1, 'under the threshold: one top-up');
    assert.deepEqual(
      [made[0].amount, made[0].currency, made[0].customer, made[0].off_session, made[0].metadata.agentsky],
      [500, 'usd', session.customer, 'true', 'auto_top_up'],
    );
    const sent = ok(await call('send_message', { session_id: sid, message: 'two', idempotency_key: ikey('auto') }), 'send_message');
    const second = await readTurn(tool, { session_id: sid, cursor: first.cursor, message_id: sent.message_id, wait_seconds: 20 });
    assert.equal(second.events.at(-1).reason, 'completed');
    assert.equal((await intents()).length, 1, 'still pending: not one per turn');
    assert.equal(ok(await call('list_receipts', { workspace: ws.slug }), 'list_receipts').auto_top_up.pending, true);

    const before = ok(await call('get_usage', { workspace: ws.slug }), 'get_usage').balance_cents;
    const succeeded = stripeEvent('payment_intent.succeeded', made[0]);
    assert.equal((await deliver(succeeded)).body.applied, true);
    assert.equal((await deliver(succeeded)).body.applied, false);
    const r = ok(await call('list_receipts', { workspace: ws.slug }), 'list_receipts');
    assert.equal(r.balance_cents, before + 500);
    assert.deepEqual([r.receipts[0].source, r.receipts[0].stripe_object_id], ['auto', made[0].id]);
    assert.equal(r.auto_top_up.pending, false, 'the top-up arrived');
  });
});
