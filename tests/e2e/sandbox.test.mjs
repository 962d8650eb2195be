// Hosted sandboxes (issue 40) against the e2e server, with this machine's Docker: a `runner` agent placed
// `hosted` carries its command; its session's first turn boots a container (the Sandbox Durable Object,
// Cloudflare Containers under wrangler dev) running `sky runner --hosted`, which claims the turn from the
// Worker through the container's only route out; the command writes a file and replies; the reply and the
// file come back; the next turn finds the container warm; a stop ends the container. No person's runner
// exists in the workspace. Without Docker (build/sandbox/status is not `ready`) every test here is
// reported as skipped with the reason, never as passed.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { BASE, createAccount, createWorkspace, createAgent, rawMcp, ok, readTurn, texts, rest, ikey, agentTool, addCredit, putSecret } from './helpers.mjs';
import { signedIn, SHOTS } from './browser.mjs';
import { answerMessages, messagesServer } from './messages-stub.mjs';
import { responsesStub } from './responses-stub.mjs';

const status = (() => {
  try { return readFileSync(new URL('../../build/sandbox/status', import.meta.url), 'utf8').trim(); } catch { return 'scripts/sandbox.sh has not run'; }
})();
const skip = status === 'ready' ? false : `hosted sandboxes NOT RUN: ${status}`;
if (skip) console.log(`\n!!! ${skip}\n`);

/** The app containers of running sandboxes (workerd names them after the class; the sidecar ends in -proxy). */
const sandboxes = () => execFileSync('docker', ['ps', '--format', '{{.Names}}'], { encoding: 'utf8' })
  .split('\n').filter((n) => n.includes('-Sandbox-') && !n.endsWith('-proxy'));

describe('hosted sandboxes', { skip }, () => {
  let key; let ws; let tool; let agentId;
  before(async () => {
    ({ key } = await createAccount());
    ws = (await createWorkspace(key)).slug;
    ({ tool } = rawMcp(key));
    // Sandbox time is charged (tests/e2e/run.sh: 360 cents an hour, a cent per 10 s), an hour held per boot.
    await addCredit(ws, 5_000);
    const made = await rest('POST', '/v1/agents', { key, body: {
      workspace: ws, name: 'Hosted echo', harness: 'runner', model: 'shell', placement: 'hosted',
      // The message on stdin; a file in the turn's folder; the reply on stdout.
      command: 'read -r msg; echo "$msg" > hosted.txt; uname -s >> hosted.txt; echo "hosted: $msg in $(pwd)"',
    } });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    agentId = made.body.agent_id;
    const shown = await rest('GET', `/v1/agents/${agentId}`, { key });
    assert.equal(shown.body.placement, 'hosted', JSON.stringify(shown.body));
  });
  after(() => {
    for (const name of sandboxes()) {
      try { execFileSync('docker', ['rm', '-f', name], { stdio: 'ignore' }); } catch { /* gone */ }
    }
  });

  test('a hosted runner agent with no runner of the person: the sandbox boots, runs the command, writes a file, replies; the next turn finds it warm; a stop ends it', { timeout: 240_000 }, async () => {
    const runners = await rest('GET', `/v1/runners?workspace=${ws}`, { key });
    assert.deepEqual((runners.body.runners ?? []).filter((r) => !r.hosted), [], 'the person has no runner');
    // Containers are counted: the suites before (one at a time) may have left one idling, which sleeps soon.
    const quiet = Date.now() + 90_000;
    while (sandboxes().length > 0 && Date.now() < quiet) await new Promise((r) => setTimeout(r, 500));
    const before = sandboxes().length;
    assert.equal(before, 0, 'no other sandbox runs');
    const t0 = Date.now();
    const started = ok(await tool('start_session', { workspace: ws, agent_id: agentId, message: 'hello sandbox', idempotency_key: ikey('sb') }));
    const sessionId = started.session.session_id;
    const turn = await readTurn(tool, { session_id: sessionId, cursor: started.cursor, message_id: started.message_id, deadlineMs: 180_000 });
    const firstMs = Date.now() - t0;
    const statuses = texts(turn.events, 'status');
    assert.ok(statuses.some((s) => /starting sandbox/.test(s)), statuses.join('\n'));
    const reply = texts(turn.events).join('\n');
    assert.match(reply, /hosted: hello sandbox in \//, JSON.stringify(turn.events));
    const file = ok(await tool('read_task_file', { task_id: started.session.task_id, path: 'hosted.txt', session_id: sessionId }));
    assert.equal(file.content, 'hello sandbox\nLinux\n');
    assert.equal(sandboxes().length, before + 1, 'one container runs for the session');
    console.log(`first turn, with the sandbox's boot: ${firstMs} ms`);

    // The second turn: the container is still up (idle time not reached), and the first turn's file is there.
    const t1 = Date.now();
    const sent = ok(await tool('send_message', { session_id: sessionId, message: 'again', idempotency_key: ikey('sb2') }));
    const second = await readTurn(tool, { session_id: sessionId, cursor: sent.cursor, message_id: sent.message_id, deadlineMs: 120_000 });
    assert.match(texts(second.events).join('\n'), /hosted: again/, JSON.stringify(second.events));
    const again = ok(await tool('read_task_file', { task_id: started.session.task_id, path: 'hosted.txt', session_id: sessionId }));
    assert.equal(again.content, 'again\nLinux\n');
    console.log(`second turn, warm: ${Date.now() - t1} ms`);

    // Idle past SANDBOX_IDLE_S (tests/e2e/run.sh sets it short): the runner exits and the container stops.
    let deadline = Date.now() + 90_000;
    while (sandboxes().length > before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 500));
    assert.equal(sandboxes().length, before, 'the idle sandbox went to sleep');
    // The next turn wakes it, with the files of the turns before.
    const t2 = Date.now();
    const woken = ok(await tool('send_message', { session_id: sessionId, message: 'awake', idempotency_key: ikey('sb3') }));
    const third = await readTurn(tool, { session_id: sessionId, cursor: woken.cursor, message_id: woken.message_id, deadlineMs: 120_000 });
    assert.match(texts(third.events).join('\n'), /hosted: awake/, JSON.stringify(third.events));
    assert.ok(texts(third.events, 'status').some((s) => /starting sandbox/.test(s)), JSON.stringify(third.events));
    console.log(`third turn, waking the sandbox: ${Date.now() - t2} ms`);

    ok(await tool('stop_session', { session_id: sessionId }));
    deadline = Date.now() + 30_000;
    while (sandboxes().length > before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 500));
    assert.equal(sandboxes().length, before, 'the stop ended the container');

    // Its three boots' time was charged per second, into the wallet's ledger: no hold is left.
    const usage = ok(await tool('get_usage', { session_id: sessionId }));
    const charged = usage.session.entries.filter((e) => e.kind === 'sandbox');
    assert.ok(charged.length >= 1 && charged.every((e) => e.model === 'sandbox'), JSON.stringify(usage));
    const cents = charged.reduce((n, e) => n + e.cents, 0);
    assert.ok(cents >= 1, `the sandbox's time costs at least a cent: ${JSON.stringify(charged)}`);
    assert.equal(usage.balance_cents, 5_000 - cents, JSON.stringify(usage));
    console.log(`sandbox time charged: ${cents} cents in ${charged.length} entries`);

    // The person sees it in the console: the session's sandbox (its state, boot time, log and reach), and
    // Health's boots, boot times and sandbox-minutes.
    const { browser, page } = await signedIn(key);
    try {
      await page.goto(`${BASE}/console/w/${ws}/sessions/${sessionId}`);
      const main = (await page.textContent('main')).replace(/\s+/g, ' ');
      assert.match(main, /Sandbox stopped · booted in [\d.]+ m?s · ran \d+ s · \$\d+\.\d\d/, main);
      assert.match(main, /started · ready in [\d.]+ m?s · ran \d+ s · asleep/, main);
      assert.match(main, /May reach: deb\.debian\.org, registry\.npmjs\.org, security\.debian\.org/, main);
      await page.screenshot({ path: `${SHOTS}70-sandbox-session.png`, fullPage: true });
      await page.goto(`${BASE}/console/w/${ws}/health`);
      const health = (await page.textContent('main')).replace(/\s+/g, ' ');
      assert.match(health, /Sandbox boots ?[1-9]\d* ?Boot p50 \/ p95 ?[\d.]+ m?s \/ [\d.]+ m?s ?Sandbox-minutes ?\d+\.\d/, health);
      await page.screenshot({ path: `${SHOTS}71-sandbox-health.png`, fullPage: true });
    } finally { await browser.close(); }
  });

  test("egress: the sandbox reaches only its agent's list; any other host is refused by its guard, saying why", { timeout: 180_000 }, async () => {
    // Raw HTTP to an address, naming the host: the sandbox has no DNS of its own under wrangler dev.
    const probe = 'const h=require("http");for(const host of ["blocked.example.com","deb.debian.org"]){'
      + 'h.get({host:"10.9.9.9",port:80,path:"/",headers:{host}},(r)=>{let b="";r.on("data",(c)=>b+=c);'
      + 'r.on("end",()=>console.log(host,r.statusCode,b.trim().slice(0,160)))}).on("error",(e)=>console.log(host,"error",e.message))}';
    const made = await rest('POST', '/v1/agents', { key, body: {
      workspace: ws, name: 'Hosted prober', harness: 'runner', model: 'shell', placement: 'hosted',
      command: `node -e '${probe}'`,
    } });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const started = ok(await tool('start_session', { workspace: ws, agent_id: made.body.agent_id, message: 'probe', idempotency_key: ikey('eg') }));
    const turn = await readTurn(tool, { session_id: started.session.session_id, cursor: started.cursor, message_id: started.message_id, deadlineMs: 120_000 });
    const said = texts(turn.events).join('\n');
    assert.match(said, /blocked\.example\.com 403 agentsky: this sandbox may not reach `blocked\.example\.com`: it is not on the agent's egress list/, said);
    // A default host of a `runner` agent (Debian's mirror) goes out through the guard: whatever it answers
    // (this machine may not resolve it), it is not the guard's refusal.
    assert.match(said, /deb\.debian\.org (\d+)/, said);
    assert.doesNotMatch(said, /may not reach `deb\.debian\.org`/, said);
    ok(await tool('stop_session', { session_id: started.session.session_id }));
  });

  test("land with checks and no runner of the person: they run in the session's sandbox, in a checkout of its lane; failing, the landing is refused with their output", { timeout: 240_000 }, async () => {
    const echo = await createAgent(key, { workspace: ws });
    const write = async (sessionId, text, cursor) => {
      const sent = ok(await tool('send_message', { session_id: sessionId, message: `/write app.txt ${text}`, idempotency_key: ikey('w') }));
      return readTurn(tool, { session_id: sessionId, cursor: sent.cursor ?? cursor, message_id: sent.message_id });
    };
    const started = ok(await tool('start_session', { workspace: ws, agent_id: echo.agent_id, message: 'plan', idempotency_key: ikey('l') }));
    const sessionId = started.session.session_id;
    await readTurn(tool, { session_id: sessionId, cursor: started.cursor, message_id: started.message_id });
    await write(sessionId, 'hello');
    const token = (await rest('POST', `/v1/sessions/${sessionId}/token`, { key })).body.token;
    const asked = await agentTool(token, 'land', { summary: 'first' });
    assert.equal(asked.landed, false, JSON.stringify(asked));
    assert.match(asked.reason, /no checks are known/);
    assert.doesNotMatch(asked.reason, /none is online/, 'hosted sandboxes run them: nobody needs to start a runner');
    const taught = await agentTool(token, 'remember_command', { kind: 'checks', command: 'cat app.txt; grep -q hello app.txt' });
    assert.ok(!taught.error, JSON.stringify(taught));
    const t0 = Date.now();
    const landed = await agentTool(token, 'land', { summary: 'first' });
    assert.equal(landed.landed, true, JSON.stringify(landed));
    assert.match(landed.steps.join('\n'), /passed \(exit 0\) in the session's hosted sandbox/);
    console.log(`land with its checks in a sandbox booted for them: ${Date.now() - t0} ms`);

    await write(sessionId, 'goodbye');
    const refused = await agentTool(token, 'land', { summary: 'second' });
    assert.equal(refused.landed, false, JSON.stringify(refused));
    assert.match(refused.reason, /the checks failed: `cat app.txt; grep -q hello app.txt` exited 1/);
    assert.match(refused.steps.join('\n'), /goodbye/, 'the output of the failing checks');
    ok(await tool('stop_session', { session_id: sessionId }));
  });

  /** A hosted agent of `harness` made and its first turn read, timed with the sandbox's boot. */
  const hostedTurn = async (harness, model, message) => {
    const made = await rest('POST', '/v1/agents', { key, body: { workspace: ws, name: `Hosted ${harness}`, harness, model, placement: 'hosted' } });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const t0 = Date.now();
    const started = ok(await tool('start_session', { workspace: ws, agent_id: made.body.agent_id, message, idempotency_key: ikey(harness) }));
    const turn = await readTurn(tool, { session_id: started.session.session_id, cursor: started.cursor, message_id: started.message_id, deadlineMs: 180_000 });
    console.log(`hosted ${harness} turn, with the sandbox's boot: ${Date.now() - t0} ms`);
    return { started, turn };
  };

  test("a hosted claude-code agent: the real Claude Code runs in the sandbox and calls its model through agentsky's relay, with the workspace's key", { timeout: 240_000 }, async () => {
    const keys = [];
    const stub = messagesServer((req, res, body) => {
      keys.push(req.headers['x-api-key']);
      answerMessages(res, body, [{ type: 'text', text: 'hosted claude says hi' }]);
    });
    await new Promise((r) => stub.listen(0, '127.0.0.1', r));
    try {
      await putSecret(key, 'ANTHROPIC_BASE_URL', `http://127.0.0.1:${stub.address().port}`, ws);
      await putSecret(key, 'ANTHROPIC_API_KEY', 'sk-ant-e2e-workspace', ws);
      const { started, turn } = await hostedTurn('claude-code', 'claude-sonnet-4-5', 'say hi');
      assert.match(texts(turn.events).join('\n'), /hosted claude says hi/, JSON.stringify(turn.events));
      assert.ok(keys.length >= 1 && keys.every((k) => k === 'sk-ant-e2e-workspace'), `the relay sent the workspace's key: ${JSON.stringify(keys)}`);
      ok(await tool('stop_session', { session_id: started.session.session_id }));
    } finally { stub.close(); }
  });

  test("a hosted codex agent: the real Codex runs in the sandbox, its model through the relay, its command in the container", { timeout: 240_000 }, async () => {
    const stub = responsesStub();
    const auth = [];
    stub.server.prependListener('request', (req) => { if (req.method === 'POST') auth.push(req.headers.authorization); });
    await new Promise((r) => stub.server.listen(0, '127.0.0.1', r));
    try {
      await putSecret(key, 'OPENAI_BASE_URL', `http://127.0.0.1:${stub.server.address().port}/v1`, ws);
      await putSecret(key, 'OPENAI_API_KEY', 'sk-e2e-workspace', ws);
      const { started, turn } = await hostedTurn('codex', 'gpt-5-codex', 'write out.txt');
      const sid = started.session.session_id;
      assert.match(texts(turn.events).join('\n'), /done: \d+ tool outputs/, JSON.stringify(turn.events));
      // The stub's shell command ran in the sandbox, in the turn's folder, and the file came back.
      const file = ok(await tool('read_task_file', { task_id: started.session.task_id, path: 'out.txt', session_id: sid }));
      assert.equal(file.content, 'hi\n');
      assert.ok(auth.length >= 2 && auth.every((a) => a === 'Bearer sk-e2e-workspace'), `the relay sent the workspace's key: ${JSON.stringify(auth)}`);
      ok(await tool('stop_session', { session_id: sid }));
    } finally { stub.server.close(); }
  });

  test('placement is checked where the agent is made: an echo agent cannot be hosted, a hosted runner agent needs its command', async () => {
    const echo = await rest('POST', '/v1/agents', { key, body: { workspace: ws, name: 'E', harness: 'echo', model: 'e', placement: 'hosted' } });
    assert.equal(echo.status, 400, JSON.stringify(echo.body));
    assert.match(echo.body.error.message, /placement/);
    const bare = await rest('POST', '/v1/agents', { key, body: { workspace: ws, name: 'R', harness: 'runner', model: 'shell', placement: 'hosted' } });
    assert.equal(bare.status, 400, JSON.stringify(bare.body));
    assert.match(bare.body.error.message, /command/);
  });
});
