// Schemas as the official SDKs read them (issue 13): every tool of every MCP endpoint (/v1/mcp,
// /v1/session/mcp, /v1/help/mcp) lists schemas that ajv's JSON Schema 2020-12 draft compiles in strict
// mode, and the check every suite's tool calls go through (helpers.mjs `checked`, `rawMcp`) refuses what
// the SDKs refused: a required field listed twice, a result missing a field its outputSchema requires, and
// an error result whose structuredContent is not of the outputSchema's shape.
import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import {
  BASE, rest, createAccount, createAgent, ok, rawMcp, readTurn, ikey, toolSchemas, checkResult,
} from './helpers.mjs';

/** tools/list of one endpoint over plain JSON-RPC. */
async function listed(path, bearer) {
  const res = await fetch(`${BASE}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json', accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25', ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
  });
  const body = await res.json();
  assert.equal(res.status, 200, `${path}: ${JSON.stringify(body)}`);
  assert.ok(body.result.tools.length > 0, `${path} lists tools`);
  return body.result.tools;
}

describe('schemas', () => {
  let acct; let token;
  before(async () => {
    acct = await createAccount();
    const agent = await createAgent(acct.key);
    const { tool } = rawMcp(acct.key);
    const s = ok(await tool('start_session', { agent_id: agent.agent_id, message: 'hi', idempotency_key: ikey('s') }));
    await readTurn(tool, { session_id: s.session.session_id, cursor: s.cursor, message_id: s.message_id });
    const t = await rest('POST', `/v1/sessions/${s.session.session_id}/token`, { key: acct.key });
    assert.equal(t.status, 201, JSON.stringify(t.body));
    token = t.body.token;
  });

  test('every listed inputSchema and outputSchema of every MCP endpoint is valid JSON Schema 2020-12', async () => {
    for (const [path, bearer] of [['/v1/mcp', acct.key], ['/v1/session/mcp', token], ['/v1/help/mcp', null]]) {
      const tools = await listed(path, bearer);
      const schemas = toolSchemas(tools, path); // throws naming the tool and the problem
      assert.equal(schemas.size, tools.length);
    }
  });

  test('the check refuses a required field listed twice and a result that misses a required field', () => {
    const good = { type: 'object', properties: { operations: { type: 'array' } }, required: ['operations'] };
    const twice = { ...good, required: ['operations', 'operations'] };
    assert.throws(() => toolSchemas([{ name: 'get_task', inputSchema: { type: 'object' }, outputSchema: twice }], 'x'),
      /get_task outputSchema is not valid JSON Schema 2020-12: .*duplicate/);
    const undeclared = { ...good, required: ['sessions'] };
    assert.throws(() => toolSchemas([{ name: 't', inputSchema: undeclared }], 'x'), /not valid JSON Schema 2020-12/);
    const schemas = toolSchemas([{ name: 'help', inputSchema: { type: 'object' }, outputSchema: good }], 'x');
    assert.throws(() => checkResult(schemas, 'help', { structuredContent: { topics: [] } }, 'x'),
      /help: the result does not match its outputSchema/);
    checkResult(schemas, 'help', { structuredContent: { operations: [] } }, 'x');
    // The TS SDK 1.x checks an error's structuredContent too; an error without one is not checked.
    assert.throws(() => checkResult(schemas, 'help', { isError: true, structuredContent: { error: { code: 'x', message: 'y' } } }, 'x'),
      /does not match its outputSchema/);
    checkResult(schemas, 'help', { isError: true, content: [{ type: 'text', text: '{"error":{"code":"x","message":"y"}}' }] }, 'x');
  });
});
