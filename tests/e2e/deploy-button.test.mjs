// The Deploy button, as issue 36 wants it, in headless Chromium against a real `sky runner`: with no
// deploy command taught, "Ask for a deploy command" starts a session of the same task whose agent is asked
// for it; that agent (a script under `sky runner`) asks for a deploy grant, runs `vercel deploy --prod`
// through the shim (a stand-in vercel on the runner's PATH) and, the runner having seen it exit 0, teaches
// it with remember_command. The session page then offers "Deploy to web"; pressed while no turn runs, it
// asks the session's agent to deploy in a new turn, under its grant as any deploy, and the output shows in
// the session.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BASE, createAccount, ok, ikey, rawMcp, readTurn, skyBinary } from './helpers.mjs';
import { signedIn, SHOTS } from './browser.mjs';

/** The agent: greets, teaches the deploy command when asked for it, deploys when told to. */
const AGENT = `#!/bin/sh
case "$AGENTSKY_MESSAGE" in
  *"Deploy now"*) vercel deploy --prod ;;
  *"deploys this project"*) vercel deploy --prod && python3 "$TOOL" "$TARGET" ;;
  *) echo "ready" ;;
esac
`;

/** remember_command through \`sky mcp\`, as the runner configures it for the turn. */
const TOOL = `import json, os, subprocess, sys
server = json.load(open(os.environ["AGENTSKY_MCP_CONFIG"]))["mcpServers"]["agentsky"]
args = {"kind": "deploy", "command": "vercel deploy --prod", "targetId": sys.argv[1]}
call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "remember_command", "arguments": args}}
out = subprocess.run([server["command"], *server["args"]], input=json.dumps(call) + "\\n", capture_output=True, text=True, timeout=600)
print("remember_command: " + json.loads(out.stdout)["result"]["content"][0]["text"])
`;

describe('the Deploy button', () => {
  let acct; let mcp; let runner; let work;

  before(async () => {
    acct = await createAccount();
    mcp = rawMcp(acct.key);
    work = mkdtempSync(join(tmpdir(), 'sky-deploy-e2e-'));
    mkdirSync(join(work, 'bin'));
    mkdirSync(join(work, 'home'));
    // A stand-in vercel: it says how long a token it got, never the token.
    writeFileSync(join(work, 'bin', 'vercel'), '#!/bin/sh\necho "vercel ran: $*; VERCEL_TOKEN has ${#VERCEL_TOKEN} chars"\n');
    chmodSync(join(work, 'bin', 'vercel'), 0o755);
  });
  after(() => {
    runner?.kill('SIGKILL');
    if (work) rmSync(work, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  });

  test('asks for the command, the agent teaches it, and the button deploys in a turn', { timeout: 240_000 }, async () => {
    const web = ok(await mcp.tool('connect_target', {
      name: 'web', provider: 'vercel', env: 'prod', credentials: { env: { VERCEL_TOKEN: 'vt-deploy-button-secret' } },
    }), 'connect_target');
    ok(await mcp.tool('set_policy', { connector_id: web.connector_id, scope: 'deploy', decision: 'allow' }), 'set_policy');
    writeFileSync(join(work, 'agent.sh'), AGENT);
    writeFileSync(join(work, 'tool.py'), TOOL);
    const agent = ok(await mcp.tool('create_agent', { name: 'Shipper', harness: 'runner', model: 'sh' }), 'create_agent');
    runner = spawn(skyBinary(), ['runner', '--server', BASE, '--key', acct.key, '--name', 'deploy-e2e', '--', 'sh', join(work, 'agent.sh')], {
      env: { ...process.env, HOME: join(work, 'home'), PATH: `${join(work, 'bin')}:${process.env.PATH}`, TOOL: join(work, 'tool.py'), TARGET: web.connector_id },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    runner.stderr.on('data', (d) => process.stderr.write(`[deploy runner] ${d}`));
    const started = ok(await mcp.tool('start_session', { agent_id: agent.agent_id, message: 'hello', idempotency_key: ikey('deploy') }), 'start_session');
    const sid = started.session.session_id;
    const first = await readTurn(mcp.tool, { session_id: sid, cursor: started.cursor, message_id: started.message_id, deadlineMs: 90_000 });
    assert.ok(JSON.stringify(first.events).includes('ready'), JSON.stringify(first.events));

    const { browser, page } = await signedIn(acct.key);
    page.on('dialog', (d) => d.accept());
    try {
      await page.goto(`${BASE}/console/w/${acct.workspace.slug}/sessions/${sid}`);
      await page.click('button:has-text("Ask for a deploy command")');
      await page.waitForURL((u) => /\/sessions\/ses_/.test(u.pathname) && !u.pathname.endsWith(sid));
      const asked = page.url().split('/').pop();
      assert.match(await page.textContent('main'), /agentsky asks: work out the command that deploys this project/);
      // The asked session's turn deploys through the shim and teaches the command.
      const taught = await readTurn(mcp.tool, { session_id: asked, deadlineMs: 120_000 });
      const said = JSON.stringify(taught.events);
      assert.ok(said.includes('vercel ran: deploy --prod; VERCEL_TOKEN has 23 chars'), said);
      assert.ok(said.includes('remember_command: {\\"ok\\":true}'), said);
      assert.ok(!said.includes('vt-deploy-button-secret'), 'the credential stays with the runner');

      await page.goto(`${BASE}/console/w/${acct.workspace.slug}/sessions/${asked}`);
      await page.screenshot({ path: `${SHOTS}52-deploy-taught.png`, fullPage: true });
      await page.click('button:has-text("Deploy to web")');
      // No turn of the session runs now: its agent is asked to deploy in a new turn, shown on its page.
      await page.waitForSelector('text=Asked the agent to deploy in a new turn', { timeout: 60_000 });
      const deployed = await readTurn(mcp.tool, { session_id: asked, cursor: taught.cursor, deadlineMs: 120_000 });
      const out = JSON.stringify(deployed.events);
      assert.ok(out.includes('Deploy now') && out.includes('vercel ran: deploy --prod; VERCEL_TOKEN has 23 chars'), out);
      await page.reload();
      await page.waitForSelector('text=vercel ran: deploy --prod');
      await page.screenshot({ path: `${SHOTS}53-deploy-ran.png`, fullPage: true });
    } finally {
      await browser.close();
    }
  });
});
