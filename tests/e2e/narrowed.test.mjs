// Credentials narrowed to the grant (issue 37), against the fakes run.sh starts (tests/e2e/providers.mjs):
// GitHub (GITHUB_API_URL), which checks the test app's JWTs as GitHub does, AWS STS (AWS_STS_URL), which
// checks SigV4 as AWS does, and Google (GCP_IAM_URL, GCP_STS_URL), which checks the service account's
// assertion and tokens. A GitHub App target hands each grant its own installation token for the
// target's repository and the permissions its scopes map to, an AWS role target credentials assumed with a
// session policy of the grant's scopes, a service-account target a token of the grant's own, read-only for
// a read grant and downscoped to its bucket (`get_credential` says `scoped: true`); `gh`, `aws` and
// `gcloud` commands in a runner's turn run with those, not the connection's; a revoked grant gets nothing; a refused app turns
// the target `expired` until it is reconnected in place.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFileSync, chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { BASE, createAccount, ok, ikey, rawMcp, readTurn, skyBinary } from './helpers.mjs';

const GITHUB = process.env.AGENTSKY_E2E_GITHUB_URL;
const STS = process.env.AGENTSKY_E2E_STS_URL;
const GOOGLE = process.env.AGENTSKY_E2E_GOOGLE_URL;
const SA_KEY = readFileSync(new URL('../fixtures/gcp-service-account-test-key.pem', import.meta.url), 'utf8');
const KEY = readFileSync(new URL('../fixtures/github-app-test-key.pem', import.meta.url), 'utf8');
const minted = async () => (await (await fetch(`${GITHUB}/_e2e/tokens`)).json());
const refuse = (on) => fetch(`${GITHUB}/_e2e/refuse`, { method: 'POST', body: JSON.stringify({ on }) });
const sha = (s) => createHash('sha256').update(s).digest('hex');

describe('credentials narrowed to the grant (GitHub App, AWS role, Google service account)', () => {
  let acct; let mcp; let agent; let runner; let work; let repo;
  const clients = [];
  const call = async (name, args, as = agent) => {
    const r = await as.callTool({ name, arguments: args });
    assert.ok(!r.isError, `${name}: ${JSON.stringify(r)}`);
    return JSON.parse(r.content[0].text);
  };
  /** An echo session's agent on the session server (each session has its own 5-a-minute access bucket). */
  const sessionAgent = async () => {
    const created = ok(await mcp.tool('create_agent', { name: 'Reader', harness: 'echo', model: 'echo-1' }), 'create_agent');
    const started = ok(await mcp.tool('start_session', { agent_id: created.agent_id, message: 'hi', idempotency_key: ikey('narrow') }), 'start');
    await readTurn(mcp.tool, { session_id: started.session.session_id, cursor: started.cursor, message_id: started.message_id });
    const token = ok(await mcp.tool('issue_session_token', { session_id: started.session.session_id }), 'token');
    const c = new Client({ name: 'agentsky-e2e-narrowed', version: '0.0.0' });
    await c.connect(new StreamableHTTPClientTransport(new URL(`${BASE}/v1/session/mcp`), { requestInit: { headers: { authorization: `Bearer ${token.token}` } } }));
    clients.push(c);
    return c;
  };

  before(async () => {
    assert.ok(GITHUB && STS, 'run through tests/e2e/run.sh: it starts the fake GitHub and STS');
    // log-canaries.sh makes sure neither the AWS secret nor the app's key reaches the server's log.
    appendFileSync(new URL('./.state/canaries.txt', import.meta.url), `${process.env.AGENTSKY_E2E_AWS_SECRET}\n${KEY.split('\n')[1]}\n`);
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
    await Promise.all(clients.map((c) => c.close()));
    if (work) rmSync(work, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  });

  test('each grant gets its own token for its scopes and the target\'s repository; a revoked one gets none', async () => {
    agent = await sessionAgent();

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
      // The grant's token is minted when the grant is decided: the refusal is said by request_access itself.
      const r = await agent.callTool({ name: 'request_access', arguments: { target: 'repo', scope: ['read'], reason: 'again' } });
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

  test('an AWS role is assumed for each grant with a session policy of its scopes; an aws command runs with it', { timeout: 120_000 }, async () => {
    const creds = { role_arn: 'arn:aws:iam::123456789012:role/agents', external_id: 'e2e-external', region: 'eu-west-1',
      access_key_id: process.env.AGENTSKY_E2E_AWS_KEY_ID, secret_access_key: process.env.AGENTSKY_E2E_AWS_SECRET };
    const cloud = ok(await mcp.tool('connect_target', { name: 'cloud', provider: 'aws', env: 'staging', credentials: creds }), 'connect_target aws');
    assert.equal(cloud.scoped, true, JSON.stringify(cloud));
    ok(await mcp.tool('set_policy', { connector_id: cloud.connector_id, scope: 'read', decision: 'allow' }), 'set_policy');
    const assumed = async () => (await (await fetch(`${STS}/_e2e/assumed`)).json());
    const before = (await assumed()).length;
    const own = await sessionAgent();
    const g = await call('request_access', { target: 'cloud', scope: ['read'], reason: 'list the buckets' }, own);
    const cred = await call('get_credential', { grantId: g.grantId }, own);
    assert.equal(cred.scoped, true);
    assert.equal(cred.env.AWS_REGION, 'eu-west-1');
    const mine = (await assumed()).slice(before);
    assert.equal(mine.length, 1, JSON.stringify(mine));
    assert.equal(mine[0].sha256, sha(cred.env.AWS_SESSION_TOKEN));
    assert.deepEqual([mine[0].roleArn, mine[0].externalId, mine[0].session], [creds.role_arn, 'e2e-external', `agentsky-${g.grantId}`]);
    // As long as the grant has left (STS takes 15 minutes to an hour here).
    const left = g.expiresAt ? Math.round((g.expiresAt - Date.now()) / 1000) : 3600;
    assert.ok(Math.abs(mine[0].duration - Math.min(3600, Math.max(900, left))) <= 10, `${mine[0].duration} s for a grant with ${left} s left`);
    const actions = mine[0].policy.Statement[0].Action;
    assert.ok(actions.includes('s3:List*') && !actions.some((a) => /Put|Delete|Create|Update/.test(a)), JSON.stringify(actions));

    // A stand-in aws in a runner's turn: the shim asks for read, the runner runs it with assumed credentials.
    writeFileSync(join(work, 'bin', 'aws'), '#!/bin/sh\necho "aws ran: $*; session sha256 $(printf %s "$AWS_SESSION_TOKEN" | sha256sum | cut -c1-64)"\n');
    chmodSync(join(work, 'bin', 'aws'), 0o755);
    const shell = ok(await mcp.tool('create_agent', { name: 'Cloud shell', harness: 'runner', model: 'sh' }), 'create_agent');
    const started = ok(await mcp.tool('start_session', { agent_id: shell.agent_id, message: 'aws s3 ls', idempotency_key: ikey('aws') }), 'start');
    const turn = await readTurn(mcp.tool, { session_id: started.session.session_id, cursor: started.cursor, message_id: started.message_id, deadlineMs: 90_000 });
    const said = turn.events.map((e) => e.text ?? '').join('\n');
    const ran = (await assumed()).at(-1);
    assert.ok(said.includes(`aws ran: s3 ls; session sha256 ${ran.sha256}`), said);
    assert.ok(!said.includes(process.env.AGENTSKY_E2E_AWS_SECRET), 'the key pair never reaches the agent');
  });

  test('a service account generates each grant a read-only token limited to the bucket; a gcloud command runs with it', { timeout: 120_000 }, async () => {
    const account = { type: 'service_account', project_id: 'e2e-project', client_email: 'agents@e2e-project.iam.gserviceaccount.com',
      private_key: SA_KEY, token_uri: `${GOOGLE}/token` };
    const assets = ok(await mcp.tool('connect_target', { name: 'assets', provider: 'gcp', env: 'prod', credentials: { service_account: account, buckets: ['e2e-assets'] } }), 'connect_target gcp');
    assert.equal(assets.scoped, true, JSON.stringify(assets));
    ok(await mcp.tool('set_policy', { connector_id: assets.connector_id, scope: 'read', decision: 'allow' }), 'set_policy');
    const google = async () => (await (await fetch(`${GOOGLE}/_e2e/google`)).json());
    const before = (await google()).length;
    const own = await sessionAgent();
    const g = await call('request_access', { target: 'assets', scope: ['read'], reason: 'read the assets' }, own);
    const cred = await call('get_credential', { grantId: g.grantId }, own);
    assert.equal(cred.scoped, true);
    assert.equal(cred.env.CLOUDSDK_CORE_PROJECT, 'e2e-project');
    const [generated, exchanged] = (await google()).slice(before);
    assert.deepEqual(generated.scope, ['https://www.googleapis.com/auth/cloud-platform.read-only']);
    assert.ok(generated.lifetime >= 1 && generated.lifetime <= 3600, JSON.stringify(generated));
    assert.deepEqual(exchanged.options.accessBoundary.accessBoundaryRules,
      [{ availableResource: '//storage.googleapis.com/projects/_/buckets/e2e-assets', availablePermissions: ['inRole:roles/storage.objectViewer'] }]);
    assert.equal(exchanged.sha256, sha(cred.env.CLOUDSDK_AUTH_ACCESS_TOKEN), 'the downscoped token is the one handed over');

    writeFileSync(join(work, 'bin', 'gcloud'), '#!/bin/sh\necho "gcloud ran: $*; token sha256 $(printf %s "$CLOUDSDK_AUTH_ACCESS_TOKEN" | sha256sum | cut -c1-64)"\n');
    chmodSync(join(work, 'bin', 'gcloud'), 0o755);
    const shell = ok(await mcp.tool('create_agent', { name: 'Gcloud shell', harness: 'runner', model: 'sh' }), 'create_agent');
    const started = ok(await mcp.tool('start_session', { agent_id: shell.agent_id, message: 'gcloud storage ls gs://e2e-assets', idempotency_key: ikey('gcloud') }), 'start');
    const turn = await readTurn(mcp.tool, { session_id: started.session.session_id, cursor: started.cursor, message_id: started.message_id, deadlineMs: 90_000 });
    const said = turn.events.map((e) => e.text ?? '').join('\n');
    const last = (await google()).at(-1);
    assert.equal(last.kind, 'exchange', JSON.stringify(last));
    assert.ok(said.includes(`gcloud ran: storage ls gs://e2e-assets; token sha256 ${last.sha256}`), said);
  });
});
