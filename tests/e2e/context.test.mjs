// Memory and search, the session record and agent performance, and the Help Center (issue 7), end to
// end against wrangler dev, so every statement runs on local D1 (FTS5, bm25, json_each, window functions,
// the read model's guarded upsert) and the help server answers without a key. Echo harness only.
import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { BASE, rest, createAccount, createWorkspace, createAgent, ok, toolErrorCode, rawMcp, readTurn, ikey } from './helpers.mjs';

/** One JSON-RPC call to the keyless help server. */
async function helpRpc(method, params) {
  const res = await fetch(`${BASE}/v1/help/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  assert.equal(res.status, 200);
  return (await res.json()).result;
}

describe('memory, search, records and help (issue 7)', () => {
  let acct; let ws; let tool; let agent;
  before(async () => {
    acct = await createAccount();
    ws = await createWorkspace(acct.key);
    tool = rawMcp(acct.key).tool;
    agent = await createAgent(acct.key, { workspace: ws.slug });
  });

  async function converse(message) {
    const started = ok(await tool('start_session', { agent_id: agent.agent_id, message, idempotency_key: ikey('s'), workspace: ws.slug }));
    await readTurn(tool, { session_id: started.session.session_id, cursor: started.cursor, message_id: started.message_id });
    return started.session.session_id;
  }

  test('a past conversation is found by a word in it, in English and Chinese, and read whole', async () => {
    const sid = await converse('Please refactor the billing module to store cents');
    await converse('请把部署脚本改成每周二晚上运行');
    const found = ok(await tool('search_context', { query: 'billing', workspace: ws.slug }));
    assert.equal(found.hits.length, 2, JSON.stringify(found));
    assert.ok(found.hits.every((h) => h.session_id === sid && h.snippet.includes('**billing**')));
    const zh = ok(await tool('search_context', { query: '部署', scope: 'conversations', workspace: ws.slug }));
    assert.ok(zh.hits.length >= 1 && zh.hits[0].snippet.includes('**部署**'), JSON.stringify(zh));
    const user = found.hits.find((h) => h.role === 'user');
    const read = ok(await tool('read_context', { ref: user.ref, limit: 10 }));
    assert.equal(read.text, 'Please ref');
    const rest2 = ok(await tool('read_context', { ref: user.ref, offset: read.nextOffset }));
    assert.equal(read.text + rest2.text, 'Please refactor the billing module to store cents');
    assert.equal(rest2.nextOffset, undefined);
  });

  test('memory pages through every entry once; traces upload, search and read', async () => {
    for (let i = 0; i < 7; i++) {
      const r = await rest('POST', '/v1/memory', { key: acct.key, body: { text: `mango note ${i}`, workspace: ws.slug } });
      assert.equal(r.status, 201, JSON.stringify(r.body));
    }
    const refs = [];
    let cursor;
    do {
      const page = ok(await tool('search_context', { query: 'mango', scope: 'memory', limit: 3, cursor, workspace: ws.slug }));
      refs.push(...page.hits.map((h) => h.ref));
      cursor = page.nextCursor;
    } while (cursor);
    assert.equal(refs.length, 7);
    assert.equal(new Set(refs).size, 7);

    const log = [
      '{"type":"summary","summary":"Fix flaky login","leafUuid":"u2"}',
      '{"parentUuid":null,"type":"user","message":{"role":"user","content":"the login test times out"},"uuid":"u1","timestamp":"2025-10-29T00:59:38.317Z","sessionId":"s"}',
      '{"parentUuid":"u1","type":"assistant","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"raised the selenium wait"}]},"uuid":"u2","timestamp":"2025-10-29T00:59:40.000Z","sessionId":"s"}',
    ].join('\n');
    const up = await rest('POST', '/v1/traces', { key: acct.key, body: { content: log, workspace: ws.slug } });
    assert.equal(up.status, 201, JSON.stringify(up.body));
    assert.equal(up.body.format, 'claude_code');
    const hit = ok(await tool('search_context', { query: 'selenium', scope: 'traces', workspace: ws.slug })).hits[0];
    assert.equal(ok(await tool('read_context', { ref: hit.ref })).text, 'raised the selenium wait');
    const bad = await rest('POST', '/v1/traces', { key: acct.key, body: { content: `${log}\n{oops`, workspace: ws.slug } });
    assert.equal(bad.status, 400);
    assert.match(bad.body.error.message, /line 4/);
  });

  test('records over REST and the webhook appear in the record and move performance', async () => {
    const sid = await converse('ship the release notes');
    const empty = ok(await tool('read_session_record', { session_id: sid }));
    assert.deepEqual([empty.decisions, empty.outcomes], [[], []]);
    const before = ok(await tool('read_agent_performance', { workspace: ws.slug })).performance.find((p) => p.model === 'echo-1');
    assert.ok(before.undecided >= 1);

    const r = await rest('POST', `/v1/sessions/${sid}/record`, { key: acct.key, body: { name: 'adopted', note: 'good' } });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    const hook = await rest('POST', `/v1/workspaces/${ws.slug}/records-webhook`, { key: acct.key });
    assert.equal(hook.status, 201, JSON.stringify(hook.body));
    const pr = JSON.stringify({ action: 'closed', sender: { login: 'octocat' }, pull_request: { merged: true, title: `Notes for ${sid}`, html_url: 'https://github.com/o/r/pull/1' } });
    const signature = `sha256=${createHmac('sha256', hook.body.secret).update(pr).digest('hex')}`;
    for (let i = 0; i < 2; i++) {
      const res = await fetch(hook.body.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-github-event': 'pull_request', 'x-github-delivery': 'd-1', 'x-hub-signature-256': signature },
        body: pr,
      });
      assert.equal(res.status, 200, await res.text());
    }
    const rec = ok(await tool('read_session_record', { session_id: sid }));
    assert.deepEqual(rec.decisions.map((d) => d.name), ['adopted']);
    assert.deepEqual(rec.outcomes.map((o) => [o.name, o.by_name]), [['pr_merged', 'github:octocat']]);
    const after = ok(await tool('read_agent_performance', { workspace: ws.slug })).performance.find((p) => p.model === 'echo-1');
    assert.equal(after.decided, before.decided + 1);
    assert.equal(after.decisions.adopted, before.decisions.adopted + 1);
    assert.equal(after.outcomes.pr_merged, before.outcomes.pr_merged + 1);
    assert.equal(toolErrorCode(await tool('read_session_record', { session_id: 'ses_00000000000000000000000000' })), 'not_found');
    assert.equal(toolErrorCode(await tool('read_session_record', { session_id: 'ses_nope' })), 'invalid_params');
  });

  test('the help server answers without a key, in Chinese too, and links pages that exist', async () => {
    const list = await helpRpc('tools/list', {});
    assert.deepEqual(list.tools.map((t) => t.name), ['help_search', 'help_get']);
    const found = await helpRpc('tools/call', { name: 'help_search', arguments: { query: '幂等键' } });
    const first = found.structuredContent.articles[0];
    assert.equal(first.slug, 'zh-idempotency');
    const page = await fetch(first.url);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<h1>幂等性<\/h1>/);
  });
});
