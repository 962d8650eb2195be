// Resources, prompts and completions on /v1/mcp (issue 19, items 1–3), end to end against wrangler dev with
// the echo harness, over the official TypeScript SDK: v1 (legacy era, initialize) and the v2 client in auto
// mode (2026-07-28). An agent writes a task file; the file, the session's transcript and result and a
// published artifact read back as resources; the four workflow prompts render with their arguments and
// name the right tools; completion offers the caller's own agents, tasks, sessions and paths and nothing
// of another account; another account's task file, transcript and artifact read as "not found".
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import {
  MCP_URL, createAccount, createAgent, ok, readTurn, ikey, uniq,
} from './helpers.mjs';

async function v1(key) {
  const client = new ClientV1({ name: 'agentsky-e2e-resources', version: '0.0.0' });
  await client.connect(new TransportV1(new URL(MCP_URL), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  }));
  return client;
}

async function v2(key) {
  const client = new ClientV2({ name: 'agentsky-e2e-resources-v2', version: '0.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(new TransportV2(new URL(MCP_URL), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  }));
  return client;
}

/** The JSON-RPC error code of a rejected request. */
async function rejectsWith(promise, code, what) {
  await assert.rejects(promise, (e) => {
    assert.equal(e.code, code, `${what}: ${e.message}`);
    return true;
  });
}

describe('resources, prompts and completions (TS SDK v1 legacy, v2 modern)', () => {
  let owner; let other; let c1; let c2; let o1; let o2;
  let agent; let sid; let taskId; let artifactId;

  before(async () => {
    owner = await createAccount();
    other = await createAccount();
    [c1, c2, o1, o2] = await Promise.all([v1(owner.key), v2(owner.key), v1(other.key), v2(other.key)]);
    agent = await createAgent(owner.key, { handle: `writer${uniq()}` });
    const tool = (name, args) => c1.callTool({ name, arguments: args });
    const started = ok(await tool('start_session', {
      agent_id: agent.agent_id, message: '/write notes/plan.md step one: parse', idempotency_key: ikey('res'),
    }), 'start_session');
    sid = started.session.session_id;
    taskId = started.session.task_id;
    await readTurn(tool, { session_id: sid, cursor: started.cursor, message_id: started.message_id });
    // The agent's file waits in its lane (a new task gives each session one); a person's write is the base's.
    artifactId = ok(await tool('publish_artifact', { task_id: taskId, path: 'notes/plan.md', session_id: sid }), 'publish').artifact_id;
    ok(await tool('write_task_file', { task_id: taskId, path: 'notes/todo.md', content: 'ship it' }), 'write the base');
  });
  after(async () => { await Promise.all([c1, c2, o1, o2].map((c) => c?.close())); });

  test('both eras declare resources, prompts and completions; v2 lands on 2026-07-28', () => {
    for (const c of [c1, c2]) {
      const caps = c.getServerCapabilities();
      assert.ok(caps.resources && caps.prompts && caps.completions, JSON.stringify(caps));
    }
    // resources/subscribe needs a session; 2026-07-28's subscriptions/listen carries its own (subscriptions.test.mjs).
    assert.equal(c1.getServerCapabilities().resources.subscribe, false, 'no resources/subscribe on the 2025 wire');
    assert.equal(c2.getServerCapabilities().resources.subscribe, true, 'subscriptions/listen on 2026-07-28');
    assert.equal(c2.getProtocolEra(), 'modern');
  });

  test('resources/list is the Help Center, the same for everyone, and each reads as Markdown', async () => {
    const mine = (await c1.listResources()).resources;
    const theirs = (await o2.listResources()).resources;
    assert.deepEqual(mine.map((r) => r.uri), theirs.map((r) => r.uri), 'deterministic, caller-independent');
    assert.ok(mine.length >= 10);
    const en = mine.find((r) => r.uri === 'agentsky://help/en/getting-started');
    assert.ok(en && en.mimeType === 'text/markdown', JSON.stringify(mine.slice(0, 2)));
    for (const c of [c1, c2]) {
      const read = await c.readResource({ uri: 'agentsky://help/zh/getting-started' });
      assert.equal(read.contents[0].mimeType, 'text/markdown');
      assert.match(read.contents[0].text, /^# /);
    }
    const templates = (await c2.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);
    assert.deepEqual(templates, [
      'agentsky://help/{lang}/{slug}', 'agentsky://tasks/{task_id}/files/{+path}',
      'agentsky://sessions/{session_id}/files/{+path}', 'agentsky://artifacts/{artifact_id}',
      'agentsky://sessions/{session_id}/transcript', 'agentsky://sessions/{session_id}/result',
    ]);
  });

  test('a task file, an artifact, the transcript and the result read back in both eras', async () => {
    for (const c of [c1, c2]) {
      const file = await c.readResource({ uri: `agentsky://sessions/${sid}/files/notes/plan.md` });
      assert.equal(file.contents[0].text, 'step one: parse');
      assert.equal(file.contents[0].mimeType, 'text/markdown');
      const encoded = await c.readResource({ uri: `agentsky://sessions/${sid}/files/notes%2Fplan.md` });
      assert.equal(encoded.contents[0].text, 'step one: parse', 'an encoded slash is the same path');
      const base = await c.readResource({ uri: `agentsky://tasks/${taskId}/files/notes%2Ftodo.md` });
      assert.equal(base.contents[0].text, 'ship it');
      const art = await c.readResource({ uri: `agentsky://artifacts/${artifactId}` });
      assert.equal(art.contents[0].text, 'step one: parse');
      const transcript = (await c.readResource({ uri: `agentsky://sessions/${sid}/transcript` })).contents[0];
      assert.equal(transcript.mimeType, 'text/markdown');
      assert.match(transcript.text, new RegExp(`# Session ${sid}`));
      assert.match(transcript.text, /\/write notes\/plan\.md step one: parse/);
      assert.match(transcript.text, /## agent/);
      const result = JSON.parse((await c.readResource({ uri: `agentsky://sessions/${sid}/result` })).contents[0].text);
      assert.equal(result.session_id, sid);
      assert.deepEqual(result.files.map((f) => f.path), ['notes/plan.md']);
    }
  });

  test('another account\'s file, artifact, transcript and result are "not found", in each era\'s code', async () => {
    const uris = [
      `agentsky://tasks/${taskId}/files/notes/todo.md`, `agentsky://sessions/${sid}/files/notes/plan.md`, `agentsky://artifacts/${artifactId}`,
      `agentsky://sessions/${sid}/transcript`, `agentsky://sessions/${sid}/result`,
      `agentsky://tasks/${taskId}/files/nope.md`, 'agentsky://help/fr/getting-started', 'agentsky://nothing',
    ];
    for (const uri of uris) {
      await rejectsWith(o1.readResource({ uri }), -32002, `legacy ${uri}`);
      await rejectsWith(o2.readResource({ uri }), -32602, `modern ${uri}`);
    }
  });

  test('prompts list with arguments and render messages naming the right tools and resources', async () => {
    for (const c of [c1, c2]) {
      const prompts = (await c.listPrompts()).prompts;
      assert.deepEqual(prompts.map((p) => p.name), ['delegate_task', 'split_work', 'review_result', 'whats_waiting']);
      assert.deepEqual(prompts[0].arguments.map((a) => [a.name, a.required]), [['agent', true], ['task', true], ['task_id', false]]);
    }
    const delegate = await c2.getPrompt({ name: 'delegate_task', arguments: { agent: '@someone', task: 'Write the launch note' } });
    const text = delegate.messages.map((m) => m.content.text).join('\n');
    for (const needle of ['@someone', 'Write the launch note', 'start_session', 'read_session', 'collect_result', 'agentsky://sessions/']) {
      assert.ok(text.includes(needle), `delegate_task names ${needle}`);
    }
    const split = await c1.getPrompt({ name: 'split_work', arguments: { goal: 'Ship it', agents: '@a, @b', task_id: taskId } });
    assert.match(split.messages.at(-1).content.text, new RegExp(`task_id \`${taskId}\``));
    assert.match(split.messages.at(-1).content.text, /write_task_file/);
    const waiting = await c1.getPrompt({ name: 'whats_waiting', arguments: {} });
    assert.match(waiting.messages[0].content.text, /list_requests[\s\S]*answer_request[\s\S]*list_tasks/);

    // review_result embeds the session's result, read as the caller: another account cannot.
    const review = await c2.getPrompt({ name: 'review_result', arguments: { session_id: sid } });
    assert.equal(review.messages[0].content.type, 'resource');
    assert.equal(review.messages[0].content.resource.uri, `agentsky://sessions/${sid}/result`);
    assert.match(review.messages[1].content.text, /record_session/);
    await rejectsWith(o1.getPrompt({ name: 'review_result', arguments: { session_id: sid } }), -32602, 'other review');
    await rejectsWith(c1.getPrompt({ name: 'delegate_task', arguments: { agent: '@x' } }), -32602, 'missing task');
    await rejectsWith(c2.getPrompt({ name: 'no_such_prompt', arguments: {} }), -32602, 'unknown prompt');
  });

  test('completion offers the caller\'s own agents, tasks, sessions, paths and help slugs only', async () => {
    const complete = (c, ref, name, value, context) => c.complete({ ref, argument: { name, value }, ...(context ? { context: { arguments: context } } : {}) })
      .then((r) => r.completion.values);
    const prompt = (name) => ({ type: 'ref/prompt', name });
    const template = (uri) => ({ type: 'ref/resource', uri });
    for (const c of [c1, c2]) {
      assert.deepEqual(await complete(c, prompt('delegate_task'), 'agent', agent.handle.slice(0, 6)), [`@${agent.handle}`]);
      assert.deepEqual(await complete(c, prompt('split_work'), 'agents', `@x, ${agent.handle.slice(0, 4)}`), [`@x, @${agent.handle}`]);
      assert.ok((await complete(c, prompt('delegate_task'), 'task_id', '')).includes(taskId));
      assert.ok((await complete(c, prompt('review_result'), 'session_id', sid.slice(0, 6))).includes(sid));
      const paths = await complete(c, template('agentsky://tasks/{task_id}/files/{+path}'), 'path', 'no', { task_id: taskId });
      assert.deepEqual(paths, ['notes/todo.md'], 'the base');
      const lane = await complete(c, template('agentsky://sessions/{session_id}/files/{+path}'), 'path', 'no', { session_id: sid });
      assert.deepEqual(lane, ['notes/plan.md', 'notes/todo.md'], 'the lane over the base');
      assert.ok((await complete(c, template('agentsky://help/{lang}/{slug}'), 'slug', 'getting', { lang: 'zh' })).includes('getting-started'));
      assert.deepEqual(await complete(c, template('agentsky://help/{lang}/{slug}'), 'lang', ''), ['en', 'zh']);
    }
    // Another account sees none of it, and its try at the owner's task's paths is refused.
    assert.deepEqual(await complete(o2, prompt('delegate_task'), 'agent', agent.handle.slice(0, 6)), []);
    assert.ok(!(await complete(o1, prompt('review_result'), 'session_id', '')).includes(sid));
    assert.deepEqual(await complete(o1, template('agentsky://tasks/{task_id}/files/{+path}'), 'path', '', { task_id: taskId }), []);
    await rejectsWith(complete(c2, prompt('nope'), 'x', ''), -32602, 'unknown prompt');
  });
});
