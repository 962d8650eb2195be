// The `openai` harness end to end: a scripted OpenAI-compatible server and a remote MCP server, both on
// loopback and started here. The fake model first writes a task file (built-in tool), then calls the
// MCP server's tool through the Worker (`calc__multiply`), then answers in text. Asserted: what the
// Worker sent each of them, the events, the file in the task folder, the reply, the charge at the price
// table's rate (run.sh sets PRICES {"e2e-priced": [1000000, 2000000]}: 1 cent per input token, 2 per
// output token), the wallet, the budget cap and insufficient_credits.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  rest, createAccount, createWorkspace, addCredit, putSecret, rawMcp, readTurn, readAll, ok, toolErrorCode,
  ikey, texts, uniq,
} from './helpers.mjs';
import { fakeOpenAI, fakeMcpServer } from './fakes.mjs';

const MODEL = 'e2e-priced';
const USAGE = { prompt_tokens: 7, completion_tokens: 3 };
const CENTS_PER_CALL = USAGE.prompt_tokens * 1 + USAGE.completion_tokens * 2; // 13
// Credit enough for a model call's hold at that price: the request's bytes as input tokens and the
// reply's allowance (the wallet is held before each call and settled after).
const CREDIT = 100_000;
const FILE = { path: 'report/summary.md', content: '# Summary\n\nwritten by the fake model\n' };

/** The fake model: write the file, then multiply 6 × 7 on the MCP server, then answer with the product. */
function script(body) {
  const last = body.messages.at(-1);
  if (last.role === 'user' && last.content === 'just say hi') return { content: `hi from ${body.model}` };
  if (last.role === 'user') {
    return { content: null, tool_calls: [{ id: 'call_write', type: 'function', function: { name: 'write_task_file', arguments: JSON.stringify(FILE) } }] };
  }
  if (last.role === 'tool' && last.tool_call_id === 'call_write') {
    return { content: 'Now the arithmetic.', tool_calls: [{ id: 'call_mul', type: 'function', function: { name: 'calc__multiply', arguments: JSON.stringify({ a: 6, b: 7 }) } }] };
  }
  if (last.role === 'tool' && last.tool_call_id === 'call_mul') {
    return { content: `All done; the tool said ${last.content}` };
  }
  throw new Error(`unscripted conversation: ${JSON.stringify(body.messages)}`);
}

describe('openai harness against a scripted model and a remote MCP server', () => {
  let acct; let openai; let mcpSrv; let client; let historyOfThirdCall;
  const apiKey = `sk-e2e-${uniq()}`; const mcpToken = `calc-${uniq()}`;

  before(async () => {
    acct = await createAccount();
    client = rawMcp(acct.key);
    openai = await fakeOpenAI(script, { usage: USAGE });
    mcpSrv = await fakeMcpServer({ token: mcpToken });
  });
  after(async () => { await openai?.close(); await mcpSrv?.close(); });

  /** A workspace with the model's secrets and an openai agent that declares the MCP server. */
  async function setup({ credit }) {
    const ws = await createWorkspace(acct.key);
    await putSecret(acct.key, 'OPENAI_BASE_URL', openai.baseUrl, ws.slug);
    await putSecret(acct.key, 'OPENAI_API_KEY', apiKey, ws.slug);
    await putSecret(acct.key, 'CALC_TOKEN', mcpToken, ws.slug);
    const r = await rest('POST', '/v1/agents', {
      key: acct.key,
      body: {
        name: `Model ${uniq()}`, harness: 'openai', model: MODEL, workspace: ws.slug,
        instructions: 'You are the e2e test agent.',
        mcpServers: [{ name: 'calc', url: mcpSrv.url, bearer_secret: 'CALC_TOKEN' }],
      },
    });
    assert.equal(r.status, 201, `POST /v1/agents with a loopback http:// MCP server -> ${r.status} ${JSON.stringify(r.body)}`);
    if (credit) assert.equal(await addCredit(ws.slug, credit), credit);
    return { ws, agent: r.body };
  }

  test('a turn writes a task file, calls the MCP tool, answers, and is charged at the table price', async () => {
    const { ws, agent } = await setup({ credit: CREDIT });
    const before = ok(await client.tool('get_usage', { workspace: ws.slug }), 'get_usage');
    assert.equal(before.balance_cents, CREDIT);
    assert.equal(before.total_cents, 0);
    const nOpenai = openai.requests.length; const nMcp = mcpSrv.methods.length;

    const started = ok(await client.tool('start_session', {
      agent_id: agent.agent_id, message: 'Write the summary, then multiply 6 by 7.', idempotency_key: ikey('oa'), workspace: ws.slug,
    }), 'start_session');
    const sid = started.session.session_id;
    const turn = await readTurn(client.tool, { session_id: sid, cursor: started.cursor, message_id: started.message_id, wait_seconds: 20 });
    assert.deepEqual(turn.events.map((e) => e.type),
      ['tool_call', 'tool_result', 'agent_message', 'tool_call', 'tool_result', 'agent_message', 'turn_end'],
      JSON.stringify(turn.events, null, 1));
    const [callW, resW, , callM, resM, final, end] = turn.events;
    assert.equal(callW.name, 'write_task_file');
    assert.deepEqual(callW.arguments, FILE);
    assert.equal(resW.is_error, false, JSON.stringify(resW));
    assert.equal(callM.name, 'calc__multiply');
    assert.deepEqual(callM.arguments, { a: 6, b: 7 });
    // The MCP tool's result, as the Worker got it over Streamable HTTP.
    assert.equal(resM.is_error, false, JSON.stringify(resM));
    assert.equal(resM.content, 'product=42');
    assert.equal(final.text, 'All done; the tool said product=42');
    assert.equal(end.reason, 'completed');
    assert.equal(turn.status, 'idle');

    // What the Worker sent the model: three calls with the key, the model, the tools and the history.
    const calls = openai.requests.slice(nOpenai);
    assert.equal(calls.length, 3);
    for (const c of calls) {
      assert.equal(c.headers.authorization, `Bearer ${apiKey}`);
      assert.equal(c.body.model, MODEL);
      const names = c.body.tools.map((t) => t.function.name).sort();
      // The task folder's tools, the Help Center's, the declared MCP server's, and the session tools.
      assert.deepEqual(names, ['ask_user', 'calc__multiply', 'check_grant', 'delete_task_file', 'get_credential', 'help_get',
        'help_search', 'land', 'list_sessions',
        'list_targets', 'list_task_files', 'project_activity', 'read_task_file', 'remember_command', 'report_status',
        'request_access', 'send_message', 'withdraw_request', 'write_task_file']);
      assert.equal(c.body.messages[0].role, 'system');
      assert.match(c.body.messages[0].content, /You are the e2e test agent\./);
    }
    const mulSpec = calls[0].body.tools.find((t) => t.function.name === 'calc__multiply').function;
    assert.equal(mulSpec.description, 'Multiply two numbers and return the product.');
    assert.deepEqual(Object.keys(mulSpec.parameters.properties).sort(), ['a', 'b']);
    // The third call carries the whole turn so far: each tool result right after the assistant message
    // whose tool_calls name it, and the model's own text kept.
    const hist = calls[2].body.messages;
    for (const [id, name] of [['call_write', 'write_task_file'], ['call_mul', 'calc__multiply']]) {
      const at = hist.findIndex((m) => m.role === 'tool' && m.tool_call_id === id);
      assert.ok(at > 0, `tool message for ${id}: ${JSON.stringify(hist)}`);
      assert.equal(hist[at - 1].role, 'assistant');
      assert.deepEqual(hist[at - 1].tool_calls?.map((c) => [c.id, c.function.name]), [[id, name]], JSON.stringify(hist));
    }
    assert.equal(hist.filter((m) => m.role === 'tool').find((m) => m.tool_call_id === 'call_mul').content, 'product=42');
    assert.ok(hist.some((m) => m.role === 'assistant' && m.content === 'Now the arithmetic.'), 'the text beside a tool call is replayed');
    historyOfThirdCall = hist;

    // What the Worker sent the MCP server: the handshake, the list and the call, all with the token.
    const methods = mcpSrv.methods.slice(nMcp);
    assert.ok(methods.includes('initialize') && methods.includes('notifications/initialized'), methods.join());
    assert.ok(methods.includes('tools/list') && methods.includes('tools/call'), methods.join());
    assert.deepEqual(mcpSrv.calls.at(-1), { a: 6, b: 7 });
    assert.ok(mcpSrv.auth.every((a) => a === `Bearer ${mcpToken}`), 'every MCP request carried the bearer secret');

    // The file is in the session's lane (a new task gives each session its own); collect_result names it
    // and the reply.
    const base = ok(await client.tool('list_task_files', { task_id: started.session.task_id }), 'list_task_files (base)');
    assert.deepEqual(base.files, [], 'nothing landed');
    const listed = ok(await client.tool('list_task_files', { task_id: started.session.task_id, session_id: sid }), 'list_task_files');
    assert.deepEqual(listed.files.map((f) => f.path), [FILE.path]);
    assert.equal(listed.files[0].writer_session_id, sid);
    const file = ok(await client.tool('read_task_file', { task_id: started.session.task_id, path: FILE.path, session_id: sid }), 'read_task_file');
    assert.equal(file.content, FILE.content);
    const result = ok(await client.tool('collect_result', { session_id: sid }), 'collect_result');
    assert.equal(result.last_reply, 'All done; the tool said product=42');
    assert.equal(result.task_id, sid);
    assert.deepEqual(result.files.map((f) => f.path), [FILE.path]);

    // Money: three calls at 13 cents, in the session's usage, the ledger and the wallet.
    const spent = 3 * CENTS_PER_CALL;
    assert.equal(result.spent_cents, spent);
    const su = ok(await client.tool('get_usage', { session_id: sid }), 'get_usage (session)');
    assert.equal(su.session.spent_cents, spent);
    assert.equal(su.session.input_tokens, 3 * USAGE.prompt_tokens);
    assert.equal(su.session.output_tokens, 3 * USAGE.completion_tokens);
    assert.equal(su.session.entries.length, 3);
    assert.equal(su.balance_cents, CREDIT - spent, 'the balance dropped by the charge, the holds came back');
    const byModel = ok(await client.tool('get_usage', { workspace: ws.slug, group_by: 'model' }), 'get_usage by model');
    assert.equal(byModel.total_cents, spent);
    assert.equal(byModel.groups.length, 1, JSON.stringify(byModel.groups));
    assert.equal(byModel.groups[0].cents, spent);
    assert.match(JSON.stringify(byModel.groups[0]), new RegExp(MODEL));
    const session = ok(await client.tool('get_session', { session_id: sid }), 'get_session');
    assert.equal(session.spent_cents, spent);
  });

  // A model message with text AND tool_calls is one assistant message; replaying it as two consecutive
  // assistant messages (text, then null + tool_calls) is refused by strict OpenAI-compatible servers.
  test('history replays an assistant message with text and tool_calls as one message', () => {
    assert.ok(historyOfThirdCall, 'the first test ran');
    assert.deepEqual(historyOfThirdCall.map((m) => m.role), ['system', 'user', 'assistant', 'tool', 'assistant', 'tool']);
    assert.equal(historyOfThirdCall[4].content, 'Now the arithmetic.');
  });

  test('switch_model changes the model and thinking the next turn sends, and its price', async () => {
    const { ws, agent } = await setup({ credit: CREDIT });
    const started = ok(await client.tool('start_session', {
      agent_id: agent.agent_id, message: 'just say hi', idempotency_key: ikey('oa-switch'), workspace: ws.slug,
    }), 'start_session');
    const sid = started.session.session_id;
    let n = openai.requests.length;
    const t1 = await readTurn(client.tool, { session_id: sid, cursor: started.cursor, message_id: started.message_id, wait_seconds: 20 });
    assert.deepEqual(texts(t1.events), [`hi from ${MODEL}`]);
    const firstCall = openai.requests.slice(n);
    assert.equal(firstCall.length, 1);
    assert.equal(firstCall[0].body.model, MODEL);
    assert.equal('reasoning_effort' in firstCall[0].body, false, 'thinking is off by default: no reasoning_effort');

    const switched = ok(await client.tool('switch_model', { session_id: sid, model: 'e2e-other', thinking: 'high' }), 'switch_model');
    assert.deepEqual(switched, { session_id: sid, model: 'e2e-other', thinking: 'high' });
    const got = ok(await client.tool('get_session', { session_id: sid }), 'get_session');
    assert.equal(got.model, 'e2e-other');
    assert.equal(got.thinking, 'high');
    assert.equal(toolErrorCode(await client.tool('switch_model', { session_id: sid, thinking: 'extreme' }), 'bad thinking'), 'invalid_params');
    assert.equal(toolErrorCode(await client.tool('switch_model', { session_id: sid }), 'nothing to switch'), 'invalid_params');

    n = openai.requests.length;
    const sent = ok(await client.tool('send_message', { session_id: sid, message: 'just say hi', idempotency_key: ikey() }), 'send_message');
    const t2 = await readTurn(client.tool, { session_id: sid, cursor: sent.cursor, message_id: sent.message_id, wait_seconds: 20 });
    assert.deepEqual(texts(t2.events), ['hi from e2e-other']);
    const second = openai.requests.slice(n);
    assert.equal(second.length, 1);
    assert.equal(second[0].body.model, 'e2e-other');
    assert.equal(second[0].body.reasoning_effort, 'high', 'the switched thinking level is sent');
    // The conversation carried over: the first turn is in the second call's history.
    assert.deepEqual(second[0].body.messages.slice(1).map((m) => [m.role, m.content]),
      [['user', 'just say hi'], ['assistant', `hi from ${MODEL}`], ['user', 'just say hi']]);
    // Priced per model: 13 cents at the e2e-priced rate, then the default `*` rate (7×100 + 3×400 micro-cents → 1).
    const usage = ok(await client.tool('get_usage', { session_id: sid }), 'get_usage');
    assert.equal(usage.session.spent_cents, CENTS_PER_CALL + 1);
    assert.deepEqual(usage.session.entries.map((e) => [e.model, e.cents]).sort(), [['e2e-other', 1], [MODEL, CENTS_PER_CALL]].sort());

    ok(await client.tool('stop_session', { session_id: sid }), 'stop_session');
    assert.equal(toolErrorCode(await client.tool('switch_model', { session_id: sid, model: 'x' }), 'switch after stop'), 'session_terminated');
  });

  test('budget_cents stops the turn at the cap with a clear status', async () => {
    const { ws, agent } = await setup({ credit: CREDIT });
    const started = ok(await client.tool('start_session', {
      agent_id: agent.agent_id, message: 'Write the summary.', idempotency_key: ikey('oa-budget'), workspace: ws.slug, budget_cents: 10,
    }), 'start_session');
    const turn = await readTurn(client.tool, { session_id: started.session.session_id, cursor: started.cursor, message_id: started.message_id, wait_seconds: 20 });
    const end = turn.events.at(-1);
    assert.equal(end.type, 'turn_end');
    assert.equal(end.reason, 'budget_reached', JSON.stringify(turn.events));
    assert.ok(texts(turn.events, 'status').some((t) => /budget/.test(t)), 'a status event says the budget stopped it');
    assert.equal(texts(turn.events).length, 0, 'the model was not called again for a final answer');
    const usage = ok(await client.tool('get_usage', { session_id: started.session.session_id }), 'get_usage');
    assert.equal(usage.session.spent_cents, CENTS_PER_CALL, 'one call, then the cap');
    // The spent budget refuses the next message.
    const again = await client.tool('send_message', { session_id: started.session.session_id, message: 'more', idempotency_key: ikey() });
    assert.equal(toolErrorCode(again, 'send_message over budget'), 'insufficient_credits');
  });

  test('an empty wallet refuses the start with insufficient_credits and stores no receipt', async () => {
    const { ws, agent } = await setup({ credit: 0 });
    const args = { agent_id: agent.agent_id, message: 'Write the summary, then multiply 6 by 7.', idempotency_key: ikey('oa-broke'), workspace: ws.slug };
    assert.equal(toolErrorCode(await client.tool('start_session', args), 'start with no credit'), 'insufficient_credits');
    const none = ok(await client.tool('list_sessions', { workspace: ws.slug }), 'list_sessions');
    assert.equal(none.sessions.length, 0);
    // Nothing was stored for the refusal: the same key works once the wallet has credit.
    await addCredit(ws.slug, CREDIT);
    const started = ok(await client.tool('start_session', args), 'start after credit');
    const turn = await readTurn(client.tool, { session_id: started.session.session_id, cursor: started.cursor, message_id: started.message_id, wait_seconds: 20 });
    assert.equal(turn.events.at(-1).reason, 'completed');
    const log = await readAll(client.tool, started.session.session_id);
    assert.equal(log.events.filter((e) => e.type === 'user_message').length, 1);
  });

  test('a model endpoint error ends the turn with a visible error event', async () => {
    const { ws, agent } = await setup({ credit: CREDIT });
    await putSecret(acct.key, 'OPENAI_BASE_URL', `${openai.baseUrl}/nowhere`, ws.slug);
    const started = ok(await client.tool('start_session', {
      agent_id: agent.agent_id, message: 'hello', idempotency_key: ikey('oa-404'), workspace: ws.slug,
    }), 'start_session');
    const turn = await readTurn(client.tool, { session_id: started.session.session_id, cursor: started.cursor, message_id: started.message_id, wait_seconds: 20 });
    assert.deepEqual(turn.events.map((e) => e.type), ['error', 'turn_end']);
    assert.match(turn.events[0].message, /HTTP 404/);
    assert.equal(turn.events[1].reason, 'failed');
    assert.equal(turn.status, 'idle');
  });
});
