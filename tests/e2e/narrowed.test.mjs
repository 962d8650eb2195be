// Credentials narrowed to the grant (issue 37), against the fake GitHub run.sh starts (GITHUB_API_URL,
// tests/e2e/github.mjs), which checks the test app's JWTs as GitHub does. A GitHub App target hands each
// grant its own installation token for the target's repository and the permissions its scopes map to
// (`get_credential` says `scoped: true`); a `gh` command in a runner's turn runs with that token, not the
// connection's; a revoked grant gets nothing; a refused app turns the target `expired` until reconnected.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { BASE, createAccount, ok, ikey, rawMcp, readTurn, skyBinary } from './helpers.mjs';

const GITHUB = process.env.AGENTSKY_E2E_GITHUB_URL;
const KEY = readFileSync(new URL('../fixtures/github-app-test-key.pem', import.meta.url), 'utf8');
const minted = async () => (await (await fetch(`${GITHUB}/_e2e/tokens`)).json());
const refuse = (on) => fetch(`${GITHUB}/_e2e/refuse`, { method: 'POST', body: JSON.stringify({ on }) });
const sha = (s) => createHash('sha256').update(s).digest('hex');

describe('credentials narrowed to the grant (GitHub App)', () => {
  let acct; let mcp; let agent; let runner; let work; let repo;
  const call = async (name, args) => {
    const r = await agent.callTool({ name, arguments: args });
    assert.ok(!r.isError, `${name}: ${JSON.stringify(r)}`);
    return JSON.parse(r.content[0].text);
  };

  before(async () => {
    assert.ok(GITHUB, 'run through tests/e2e/run.sh: it starts the fake GitHub');
    acct = await createAccount();
    mcp = rawMcp(acct.key);
    work = mkdtempSync(join(tmpdir(), 'sky-narrowed-e2e-'));
    const creds = { app_id: 7, private_key: KEY, repositories: ['acme/web'] };
    repo = ok(await mcp.tool('connect_target', { name: 'repo', provider: 'github', env: 'scm', credentials: creds }), 'connect_target');
    assert.equal(repo.scoped, true, JSON.stringify(repo));
    for (const scope of ['read', 'write']) ok(await mcp.tool('set_policy', { connector_id: repo.connector_id, scope, decision: 'allow' }), 'set_policy');
  });
  after(async () => {
    runner?.kill('SIGKILL');
    await agent?.close();
    if (work) rmSync(work, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  });

  test('each grant gets its own token for its scopes and the target\'s repository; a revoked one gets none', async () => {
    const created = ok(await mcp.tool('create_agent', { name: 'Reader', harness: 'echo', model: 'echo-1' }), 'create_agent');
    const started = ok(await mcp.tool('start_session', { agent_id: created.agent_id, message: 'hi', idempotency_key: ikey('narrow') }), 'start');
    await readTurn(mcp.tool, { session_id: started.session.session_id, cursor: started.cursor, message_id: started.message_id });
    const token = ok(await mcp.tool('issue_session_token', { session_id: started.session.session_id }), 'token');
    agent = new Client({ name: 'agentsky-e2e-narrowed', version: '0.0.0' });
    await agent.connect(new StreamableHTTPClientTransport(new URL(`${BASE}/v1/session/mcp`), { requestInit: { headers: { authorization: `Bearer ${token.token}` } } }));

    const targets = await call('list_targets', {});
    assert.equal(targets.find((t) => t.name === 'repo').scoped, true, JSON.stringify(targets));
    const before = (await minted()).length;
    const read = await call('request_access', { target: 'repo', scope: ['read'], reason: 'read the code' });
    const cred = await call('get_credential', { grantId: read.grantId });
    assert.equal(cred.scoped, true);
    const mine = (await minted()).slice(before);
    assert.equal(mine.length, 1, JSON.stringify(mine));
    assert.deepEqual(mine[0].permissions, { contents: 'read', metadata: 'read' });
    assert.deepEqual(mine[0].repositories, ['web']);
    assert.equal(mine[0].sha256, sha(cred.env.GH_TOKEN), 'the token the fake minted is the one handed over');
    assert.ok(cred.expiresAt <= Date.now() + 3_600_000 + 5_000, `expires within the token's hour: ${cred.expiresAt}`);

    const write = await call('request_access', { target: 'repo', scope: ['write'], reason: 'open a pull request' });
    const wcred = await call('get_credential', { grantId: write.grantId });
    assert.notEqual(wcred.env.GH_TOKEN, cred.env.GH_TOKEN, 'a grant of its own, a token of its own');
    assert.deepEqual((await minted()).at(-1).permissions, { contents: 'write', metadata: 'read', pull_requests: 'write' });

    ok(await mcp.tool('revoke_grant', { grant_id: read.grantId }), 'revoke_grant');
    const gone = await agent.callTool({ name: 'get_credential', arguments: { grantId: read.grantId } });
    assert.ok(gone.isError && /not active/.test(gone.content[0].text), JSON.stringify(gone));
  });

  test('a gh command in a runner\'s turn runs with the grant\'s minted token, never the connection\'s', { timeout: 120_000 }, async () => {
    mkdirSync(join(work, 'bin'), { recursive: true });
    mkdirSync(join(work, 'home'), { recursive: true });
    // A stand-in gh: it says which token it got (by its hash), never the token.
    writeFileSync(join(work, 'bin', 'gh'), '#!/bin/sh\necho "gh ran: $*; token sha256 $(printf %s "$GH_TOKEN" | sha256sum | cut -c1-64)"\n');
    chmodSync(join(work, 'bin', 'gh'), 0o755);
    const shell = ok(await mcp.tool('create_agent', { name: 'Shell', harness: 'runner', model: 'sh' }), 'create_agent');
    runner = spawn(skyBinary(), ['runner', '--server', BASE, '--key', acct.key, '--name', 'narrowed-e2e', '--', 'sh', '-c', 'eval "$AGENTSKY_MESSAGE"'], {
      env: { ...process.env, HOME: join(work, 'home'), PATH: `${join(work, 'bin')}:${process.env.PATH}` }, stdio: ['ignore', 'ignore', 'pipe'],
    });
    runner.stderr.on('data', (d) => process.stderr.write(`[narrowed runner] ${d}`));
    const before = (await minted()).length;
    const started = ok(await mcp.tool('start_session', { agent_id: shell.agent_id, message: 'gh api repos/acme/web', idempotency_key: ikey('gh') }), 'start');
    const turn = await readTurn(mcp.tool, { session_id: started.session.session_id, cursor: started.cursor, message_id: started.message_id, deadlineMs: 90_000 });
    const said = turn.events.map((e) => e.text ?? '').join('\n');
    const fresh = (await minted()).slice(before);
    assert.equal(fresh.length, 1, `one mint for the shim's read grant: ${JSON.stringify(fresh)} ${said}`);
    assert.deepEqual(fresh[0].permissions, { contents: 'read', metadata: 'read' });
    assert.ok(said.includes(`gh ran: api repos/acme/web; token sha256 ${fresh[0].sha256}`), said);
  });

  test('a refused app turns the target expired; reconnected in place, it mints again', async () => {
    await refuse(true);
    try {
      const g = await call('request_access', { target: 'repo', scope: ['read'], reason: 'again' });
      const r = await agent.callTool({ name: 'get_credential', arguments: { grantId: g.grantId } });
      assert.ok(r.isError && /GitHub refused/.test(r.content[0].text) && /reconnect/.test(r.content[0].text), JSON.stringify(r));
      assert.equal((await call('list_targets', {})).find((t) => t.name === 'repo').lockState, 'expired');
    } finally {
      await refuse(false);
    }
    const again = ok(await mcp.tool('connect_target', { name: 'repo', provider: 'github', env: 'scm', credentials: { app_id: 7, private_key: KEY, installation_id: 42 } }), 'reconnect');
    assert.equal(again.connector_id, repo.connector_id, 'the same target, its policies kept');
    const g = await call('request_access', { target: 'repo', scope: ['read'], reason: 'after reconnecting' });
    assert.equal(g.status, 'active', JSON.stringify(g));
    assert.equal((await call('get_credential', { grantId: g.grantId })).scoped, true);
  });
});
