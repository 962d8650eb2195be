// Money as a client sees it: a visitor's message through an interactive share link is the link's, is
// charged like any other turn, and is refused once the wallet is empty (which never goes below zero); a
// paid public agent's price moves from the caller's wallet to the owner's, once per run, and a caller who
// cannot pay is refused with nothing left behind.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  rest, createAccount, createWorkspace, createAgent, addCredit, putSecret, rawMcp, readTurn, readAll, ok,
  toolError, toolErrorCode, ikey, uniq, texts,
} from './helpers.mjs';
import { fakeOpenAI } from './fakes.mjs';

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
