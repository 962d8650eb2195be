// Shared helpers for the TypeScript end-to-end tests. The server is the one tests/e2e/run.sh started;
// its URL arrives in AGENTSKY_URL. Only what a client can see is asserted.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';

export const BASE = (process.env.AGENTSKY_URL ?? '').replace(/\/$/, '');
if (!BASE) throw new Error('AGENTSKY_URL is not set: run these tests through tests/e2e/run.sh');
export const MCP_URL = `${BASE}/v1/mcp`;

/** A short random suffix so every test makes its own account, names and slugs. */
export const uniq = () => randomBytes(4).toString('hex');

/** Whether this machine runs hosted sandboxes (scripts/sandbox.sh left `ready`): then checks with no
 * person's runner online run in the session's sandbox instead of waiting for one. */
export const SANDBOXES = (() => {
  try { return readFileSync(new URL('../../build/sandbox/status', import.meta.url), 'utf8').trim() === 'ready'; } catch { return false; }
})();

/** One REST call. Returns { status, headers, body } with body parsed as JSON when it is JSON. */
export async function rest(method, path, { key, body, headers = {} } = {}) {
  const h = { accept: 'application/json', ...headers };
  if (body !== undefined) h['content-type'] = 'application/json';
  if (key) h.authorization = `Bearer ${key}`;
  const res = await fetch(`${BASE}${path}`, {
    method,
    headers: h,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed = text;
  try { parsed = text ? JSON.parse(text) : null; } catch { /* not JSON: keep the text */ }
  return { status: res.status, headers: res.headers, body: parsed };
}

/**
 * POST /v1/accounts: a new user, its personal workspace and a write key.
 * Sign-up is limited per caller address (20 a minute), and every test here calls from 127.0.0.1:
 * make one or two accounts per file and isolate tests with fresh workspaces (createWorkspace).
 */
export async function createAccount(name = `E2E ${uniq()}`) {
  const email = `e2e-${uniq()}@example.com`;
  let r = await rest('POST', '/v1/accounts', { body: { name, email } });
  // Every suite signs up from 127.0.0.1: past the limit, wait out the window the server names, as a client should.
  for (let tries = 0; r.status === 429 && tries < 3; tries++) {
    await new Promise((ok) => setTimeout(ok, (r.body?.error?.retry_after_ms ?? 1000) + 100));
    r = await rest('POST', '/v1/accounts', { body: { name, email } });
  }
  assert.equal(r.status, 201, `POST /v1/accounts -> ${r.status} ${JSON.stringify(r.body)}`);
  const { account, workspace, key } = r.body;
  assert.equal(account.email, email);
  assert.match(key.key, /^ast_[A-Za-z0-9_-]{20,}$/, 'the key is an ast_… string');
  assert.deepEqual([...key.scopes].sort(), ['read', 'write']);
  assert.ok(workspace.slug, 'personal workspace has a slug');
  return { account, workspace, key: key.key, keyInfo: key };
}

/** POST /v1/keys with the given scopes, optionally locked to one workspace slug. */
export async function createKey(ownerKey, { scopes, workspace, name = `key-${uniq()}` }) {
  const body = { name, scopes };
  if (workspace) body.workspace = workspace;
  const r = await rest('POST', '/v1/keys', { key: ownerKey, body });
  assert.equal(r.status, 201, `POST /v1/keys -> ${r.status} ${JSON.stringify(r.body)}`);
  assert.match(r.body.key, /^ast_/);
  assert.deepEqual([...r.body.scopes].sort(), [...scopes].sort());
  return r.body;
}

/** POST /v1/workspaces: a fresh, empty workspace the key's account owns. */
export async function createWorkspace(ownerKey, name = `Team ${uniq()}`) {
  const r = await rest('POST', '/v1/workspaces', { key: ownerKey, body: { name } });
  assert.equal(r.status, 201, `POST /v1/workspaces -> ${r.status} ${JSON.stringify(r.body)}`);
  assert.ok(r.body.slug, 'workspace has a slug');
  return r.body;
}

/** POST /v1/agents with the echo harness (free, deterministic). */
export async function createAgent(key, extra = {}) {
  const body = { name: `Echo ${uniq()}`, harness: 'echo', model: 'echo-1', ...extra };
  const r = await rest('POST', '/v1/agents', { key, body });
  assert.equal(r.status, 201, `POST /v1/agents -> ${r.status} ${JSON.stringify(r.body)}`);
  assert.ok(r.body.agent_id, 'agent has an agent_id');
  return r.body;
}

/** The structured result of a successful tool call (asserts it is not an error). */
export function ok(result, what = 'tool call') {
  assert.notEqual(result.isError, true, `${what} failed: ${JSON.stringify(result)}`);
  assert.ok(result.structuredContent, `${what} has structuredContent`);
  return result.structuredContent;
}

/**
 * The API's error `{code, message, retry_after_ms?}` of a tool error result (asserts it is one), from its
 * JSON text: an error carries no structuredContent, which clients check against the outputSchema.
 */
export function toolError(result, what = 'tool call') {
  assert.equal(result.isError, true, `${what} should be a tool error: ${JSON.stringify(result)}`);
  assert.equal(result.structuredContent, undefined, `${what}: no structuredContent on an error: ${JSON.stringify(result)}`);
  let err;
  try { err = JSON.parse(result.content?.[0]?.text).error; } catch { /* asserted below */ }
  assert.ok(err && typeof err.code === 'string' && typeof err.message === 'string',
    `${what}: the text is {"error": {code, message}}: ${JSON.stringify(result)}`);
  return err;
}

/** The error code of a tool error result (asserts it is one). */
export function toolErrorCode(result, what = 'tool call') {
  return toolError(result, what).code;
}

/** The tool names every operator server must offer from the first issue on. */
export const CORE_TOOLS = ['list_workspaces', 'describe_workspace', 'help', 'list_agents'];

/**
 * The write tool used to prove a read key cannot write: `start_session`, the contract's first write tool.
 * (It stood in, by the lead's choice, before it existed; then these tests failed with "unknown tool".)
 * The arguments are valid, so only the scope can refuse the call.
 */
export const WRITE_TOOL = 'start_session';
export const writeToolArgs = (agentId) => ({
  agent_id: agentId,
  message: 'say hello',
  idempotency_key: `e2e-${uniq()}`,
});

// ---------------------------------------------------------------------------------------------------
// Sessions and turns (issue 3).

/** The deployment's admin token, when tests/e2e/run.sh started the server with one. */
export const ADMIN_TOKEN = process.env.AGENTSKY_ADMIN_TOKEN ?? '';

/** POST /v1/workspaces/{slug}/credit with the admin token; returns the new balance. */
export async function addCredit(slug, cents, { base = BASE } = {}) {
  assert.ok(ADMIN_TOKEN, 'AGENTSKY_ADMIN_TOKEN is not set: run these tests through tests/e2e/run.sh');
  const r = await restAt(base, 'POST', `/v1/workspaces/${slug}/credit`, { key: ADMIN_TOKEN, body: { amount_cents: cents } });
  assert.equal(r.status, 200, `POST /v1/workspaces/${slug}/credit -> ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.balance_cents;
}

/** PUT /v1/secrets/{name}. */
export async function putSecret(key, name, value, workspace) {
  const body = { value };
  if (workspace) body.workspace = workspace;
  const r = await rest('PUT', `/v1/secrets/${name}`, { key, body });
  assert.equal(r.status, 200, `PUT /v1/secrets/${name} -> ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

/** `rest` against another server than the run's (a test that owns its server). */
export async function restAt(base, method, path, opts = {}) {
  const h = { accept: 'application/json', ...(opts.headers ?? {}) };
  if (opts.body !== undefined) h['content-type'] = 'application/json';
  if (opts.key) h.authorization = `Bearer ${opts.key}`;
  const res = await fetch(`${base}${path}`, {
    method, headers: h, body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  const text = await res.text();
  let parsed = text;
  try { parsed = text ? JSON.parse(text) : null; } catch { /* not JSON */ }
  return { status: res.status, headers: res.headers, body: parsed };
}

// ---------------------------------------------------------------------------------------------------
// Schemas (issue 13): what the official SDKs check, checked on every call of every suite, so a result
// that does not match its tool's outputSchema fails here before a client meets it. ajv's JSON Schema
// 2020-12 draft in strict mode: a listed schema must be valid against the meta-schema and use no
// unknown keyword, and `required` names must be declared in `properties`.

const ajv = new Ajv2020({ strict: true, allErrors: true });
const compiled = new Map();

function compile(schema, what) {
  const text = JSON.stringify(schema);
  if (!compiled.has(text)) {
    assert.equal(schema?.type, 'object', `${what}: an MCP tool schema is an object schema: ${text}`);
    try { compiled.set(text, ajv.compile(schema)); } catch (e) {
      assert.fail(`${what} is not valid JSON Schema 2020-12: ${e.message}`);
    }
  }
  return compiled.get(text);
}

/** Compiles every listed tool's inputSchema and outputSchema; a map name → { output } validators. */
export function toolSchemas(tools, where) {
  const out = new Map();
  for (const t of tools) {
    compile(t.inputSchema, `${where} ${t.name} inputSchema`);
    out.set(t.name, { output: t.outputSchema ? compile(t.outputSchema, `${where} ${t.name} outputSchema`) : null });
  }
  return out;
}

/**
 * A successful CallToolResult must carry structuredContent, and any structuredContent must match the
 * tool's outputSchema: the TS SDK 1.x checks it on error results too.
 */
export function checkResult(schemas, name, result, where) {
  const tool = schemas.get(name);
  if (!tool?.output || (result?.isError === true && result.structuredContent === undefined)) return;
  const data = result?.structuredContent;
  assert.ok(data && typeof data === 'object' && !Array.isArray(data),
    `${where} ${name}: a tool with an outputSchema answers structuredContent: ${JSON.stringify(result)}`);
  assert.ok(tool.output(data), `${where} ${name}: the result does not match its outputSchema: `
    + `${ajv.errorsText(tool.output.errors)}\n${JSON.stringify(data).slice(0, 2000)}`);
}

/**
 * Makes an official SDK client (TS SDK v1 or v2 `Client`) check every callTool result against the tool's
 * published outputSchema, the list read once per client through the client itself. Returns the client.
 */
export function checked(client, where = 'MCP') {
  const call = client.callTool.bind(client);
  let schemas;
  client.callTool = async (params, ...rest) => {
    schemas ??= toolSchemas((await client.listTools()).tools, where);
    const result = await call(params, ...rest);
    checkResult(schemas, params.name, result, where);
    return result;
  };
  return client;
}

let rpcId = 0;
/**
 * A bare stateless MCP client: one JSON-RPC POST per call to /v1/mcp (no initialize: the server keeps no
 * MCP session), as the bench and many hosts do. `tool(name, args)` returns the CallToolResult, checked
 * against the tool's outputSchema like every SDK client's here.
 */
export function rawMcp(key, { base = BASE } = {}) {
  const rpc = async (method, params) => {
    const res = await fetch(`${base}/v1/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-11-25',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++rpcId, method, params }),
    });
    const text = await res.text();
    assert.equal(res.status, 200, `${method} -> HTTP ${res.status} ${text.slice(0, 500)}`);
    const j = JSON.parse(text);
    assert.ok(!j.error, `${method}: JSON-RPC error ${text.slice(0, 500)}`);
    return j.result;
  };
  let schemas;
  const tool = async (name, args = {}) => {
    schemas ??= toolSchemas((await rpc('tools/list', {})).tools, `${base}/v1/mcp`);
    const result = await rpc('tools/call', { name, arguments: args });
    checkResult(schemas, name, result, `${base}/v1/mcp`);
    return result;
  };
  return { rpc, tool };
}

/**
 * Reads one turn to its end as the contract says: read_session from `cursor` for `message_id`, waiting
 * `wait_seconds` while nothing is new, at once while `has_more`, until `turn_finished`. `callTool(name,
 * args)` returns a CallToolResult (any client). Checks every page's own invariants on the way.
 * Returns { events, cursor, status, pages }.
 */
export async function readTurn(callTool, { session_id, cursor, message_id, wait_seconds = 50, limit, deadlineMs = 120_000 }) {
  const events = [];
  let pages = 0; let status; let hasMore = false;
  const t0 = Date.now();
  for (;;) {
    assert.ok(Date.now() - t0 < deadlineMs, `turn ${message_id} did not finish within ${deadlineMs} ms: ${JSON.stringify(events)}`);
    const args = { session_id, cursor, wait_seconds: hasMore ? 0 : wait_seconds };
    if (message_id) args.message_id = message_id;
    if (limit) args.limit = limit;
    const page = ok(await callTool('read_session', args), 'read_session');
    pages++;
    checkPage(page, cursor);
    events.push(...page.events);
    cursor = page.cursor; status = page.status; hasMore = page.has_more;
    if (page.turn_finished) break;
  }
  if (message_id) for (const e of events) assert.equal(e.message_id, message_id, `an event of another message: ${JSON.stringify(e)}`);
  return { events, cursor, status, pages };
}

/** What every read_session page must satisfy, whoever reads it. */
export function checkPage(page, after) {
  assert.ok(Array.isArray(page.events), `events is an array: ${JSON.stringify(page)}`);
  assert.equal(typeof page.cursor, 'string');
  assert.equal(typeof page.has_more, 'boolean');
  assert.equal(typeof page.turn_finished, 'boolean');
  assert.ok(['provisioning', 'idle', 'running', 'terminated'].includes(page.status), `status ${page.status}`);
  if (page.events.length === 0) {
    if (after !== undefined) assert.equal(page.cursor, after, 'an empty page keeps the cursor');
  } else {
    assert.equal(page.cursor, page.events.at(-1).cursor, "the page's cursor is its last event's");
    assert.ok(!page.events.some((e) => e.cursor === after), 'a page starts after its cursor');
  }
  const seen = new Set();
  for (const e of page.events) {
    assert.equal(typeof e.cursor, 'string'); assert.equal(typeof e.type, 'string');
    assert.equal(typeof e.at_ms, 'number'); assert.ok(e.message_id?.startsWith('msg_'), JSON.stringify(e));
    assert.ok(!seen.has(e.cursor), `duplicate cursor ${e.cursor}`); seen.add(e.cursor);
  }
  for (let i = 1; i < page.events.length; i++) {
    assert.ok(page.events[i].at_ms >= page.events[i - 1].at_ms, 'events are oldest first');
  }
}

/** The session's whole log, every message, from the start (pages of 200, no waiting). */
export async function readAll(callTool, session_id) {
  const events = []; let cursor;
  for (;;) {
    const args = { session_id, wait_seconds: 0 };
    if (cursor) args.cursor = cursor;
    const page = ok(await callTool('read_session', args), 'read_session (whole log)');
    checkPage(page, cursor);
    events.push(...page.events);
    cursor = page.cursor;
    if (!page.has_more) return { events, cursor, status: page.status };
  }
}

/** The texts of a list of events of one type. */
export const texts = (events, type = 'agent_message') => events.filter((e) => e.type === type).map((e) => e.text);

/** A fresh idempotency key. */
export const ikey = (what = 'k') => `e2e-${what}-${uniq()}-${Date.now()}`;

/** The sky binary (`$SKY`, or this tree's release build, built once if missing). */
export function skyBinary() {
  if (process.env.SKY) return process.env.SKY;
  const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
  const built = spawnSync('cargo', ['build', '-p', 'sky', '--release', '--quiet'], { cwd: root, stdio: 'inherit' });
  assert.equal(built.status, 0, 'cargo build -p sky --release');
  return join(root, 'target', 'release', 'sky');
}

/** One session-server tool call with a session token (the agent's side); resolves when the tool answers. */
export async function agentTool(token, name, args) {
  const res = await fetch(`${BASE}/v1/session/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
  });
  const j = await res.json();
  assert.ok(j.result, JSON.stringify(j));
  return JSON.parse(j.result.content[0].text);
}
