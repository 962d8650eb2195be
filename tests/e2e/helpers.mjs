// Shared helpers for the TypeScript end-to-end tests. The server is the one tests/e2e/run.sh started;
// its URL arrives in AGENTSKY_URL. Only what a client can see is asserted.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';

export const BASE = (process.env.AGENTSKY_URL ?? '').replace(/\/$/, '');
if (!BASE) throw new Error('AGENTSKY_URL is not set: run these tests through tests/e2e/run.sh');
export const MCP_URL = `${BASE}/v1/mcp`;

/** A short random suffix so every test makes its own account, names and slugs. */
export const uniq = () => randomBytes(4).toString('hex');

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
  const r = await rest('POST', '/v1/accounts', { body: { name, email } });
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

/** The error code of a tool error result (asserts it is one). */
export function toolErrorCode(result, what = 'tool call') {
  assert.equal(result.isError, true, `${what} should be a tool error: ${JSON.stringify(result)}`);
  const err = result.structuredContent?.error;
  assert.ok(err && typeof err.code === 'string' && typeof err.message === 'string',
    `${what}: structuredContent.error {code, message}: ${JSON.stringify(result)}`);
  return err.code;
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
