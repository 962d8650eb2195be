// Company skills end to end with the official TypeScript SDK: a skill is created over MCP and refused when
// it breaks the Agent Skills layout; describe_workspace shows it with a usage line; an openai-harness
// session (a scripted model on loopback) sees it listed in its instructions and reads it with read_skill;
// the console's Skills page in headless Chromium lists it, adds another from its form and deletes it
// (screenshots in tests/e2e/.state/screenshots).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { signedIn, SHOTS } from './browser.mjs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  BASE, MCP_URL, rest, createAccount, addCredit, putSecret, readTurn, ok, toolError, checked, ikey, texts, uniq,
} from './helpers.mjs';
import { fakeOpenAI } from './fakes.mjs';

const SKILL_MD = '---\nname: release-notes\ndescription: Write release notes from merged pull requests. Use when asked for a changelog.\n---\n# Release notes\nGroup changes by area; one line each.\n';

/** The fake model: asked for a changelog, it reads the skill the instructions list, then follows it. */
function script(body) {
  const last = body.messages.at(-1);
  if (last.role === 'user') {
    return { content: null, tool_calls: [{ id: 'call_skill', type: 'function', function: { name: 'read_skill', arguments: JSON.stringify({ name: 'release-notes' }) } }] };
  }
  if (last.role === 'tool' && last.tool_call_id === 'call_skill') {
    const skill = JSON.parse(last.content);
    return { content: `Following the skill: ${skill.skill_md.split('\n').at(-2)}` };
  }
  throw new Error(`unscripted conversation: ${JSON.stringify(body.messages)}`);
}

describe('company skills', () => {
  let acct; let ws; let client; let openai;
  const call = async (name, args) => client.callTool({ name, arguments: args });

  before(async () => {
    acct = await createAccount(`Ada ${uniq()}`);
    ws = acct.workspace.slug;
    client = new Client({ name: 'agentsky-e2e-skills', version: '0.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(MCP_URL), {
      requestInit: { headers: { authorization: `Bearer ${acct.key}` } },
    }));
    checked(client, 'TS SDK (skills)');
    openai = await fakeOpenAI(script);
  });
  after(async () => { await client?.close(); await openai?.close(); });

  test('a skill is created over MCP (through manage), checked, listed and read', async () => {
    // Skills are set up seldom: the model sees them as operations of the one `manage` tool.
    const { tools } = await client.listTools();
    const managed = tools.find((t) => t.name === 'manage').inputSchema.properties.operation.enum;
    for (const n of ['list_skills', 'get_skill', 'put_skill', 'delete_skill']) assert.ok(managed.includes(n), n);
    assert.ok(!tools.some((t) => t.name === 'put_skill'), 'not a tool of its own');

    const put = { name: 'release-notes', skill_md: SKILL_MD, files: { 'templates/entry.md': '- {title}' }, workspace: ws };
    const saved = ok(await call('manage', { operation: 'put_skill', arguments: put }), 'put_skill');
    assert.equal(saved.created, true);
    assert.match(saved.description, /^Write release notes/);
    const bad = toolError(await call('put_skill', { name: 'Bad_Name', skill_md: SKILL_MD, workspace: ws }), 'put_skill (bad name)');
    assert.equal(bad.code, 'invalid_params');
    const noFront = toolError(await call('put_skill', { name: 'x', skill_md: '# no front matter', workspace: ws }), 'put_skill (no front matter)');
    assert.match(noFront.message, /front matter/);
    const listed = ok(await call('list_skills', { workspace: ws }), 'list_skills');
    assert.deepEqual(listed.skills.map((s) => s.name), ['release-notes']);
    const got = ok(await call('get_skill', { name: 'release-notes', workspace: ws }), 'get_skill');
    assert.equal(got.skill_md, SKILL_MD);
    assert.deepEqual(got.files, { 'templates/entry.md': '- {title}' });
  });

  test('describe_workspace shows the skill, with a usage line', async () => {
    const d = ok(await call('describe_workspace', { workspace: ws }), 'describe_workspace');
    const skill = d.skills.find((s) => s.name === 'release-notes');
    assert.ok(skill, JSON.stringify(d.skills));
    assert.match(skill.usage, /^manage \{"arguments":\{"name":"release-notes"/);
    assert.match(skill.usage, /"operation":"get_skill"/);
    for (const field of ['agents', 'routines', 'connectors', 'policies', 'budget', 'route_groups']) {
      assert.ok(field in d, `describe_workspace has ${field}`);
    }
  });

  test('an openai-harness session sees the skill in its instructions and reads it with read_skill', async () => {
    await putSecret(acct.key, 'OPENAI_BASE_URL', openai.baseUrl, ws);
    await putSecret(acct.key, 'OPENAI_API_KEY', `sk-e2e-${uniq()}`, ws);
    await addCredit(ws, 100_000);
    const r = await rest('POST', '/v1/agents', { key: acct.key, body: { name: `Writer ${uniq()}`, harness: 'openai', model: 'e2e-priced', workspace: ws, instructions: 'You write changelogs.' } });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    const started = ok(await call('start_session', { agent_id: r.body.agent_id, message: 'Write the changelog.', idempotency_key: ikey('skill'), workspace: ws }), 'start_session');
    const turn = await readTurn(call, { session_id: started.session.session_id, cursor: started.cursor, message_id: started.message_id });
    const result = turn.events.find((e) => e.type === 'tool_result');
    assert.ok(result && !result.is_error, JSON.stringify(turn.events));
    assert.equal(JSON.parse(result.content).skill_md, SKILL_MD);
    assert.deepEqual(texts(turn.events).at(-1), 'Following the skill: Group changes by area; one line each.');
    const first = openai.requests[0].body;
    assert.match(first.messages[0].content, /- release-notes: Write release notes from merged pull requests\./);
    assert.ok(first.tools.some((t) => t.function.name === 'read_skill'), 'read_skill is offered');
  });

  test('the console lists, adds and deletes skills (Chromium)', async () => {
    const { browser, page } = await signedIn(acct.key);
    try {
      await page.goto(`${BASE}/console/w/${ws}`);
      await page.click('nav a:has-text("Skills")');
      await page.waitForURL(`**/console/w/${ws}/skills`);
      assert.equal(await page.textContent('h1'), 'Skills');
      assert.match(await page.textContent('article[data-skill=release-notes]'), /Write release notes/);
      await page.screenshot({ path: `${SHOTS}skills-list.png`, fullPage: true });

      const md = '---\nname: on-call\ndescription: Page the on-call engineer when production is down.\n---\nCall them.\n';
      await page.fill('form[data-skill-form] input[name=name]', 'on-call');
      await page.fill('form[data-skill-form] textarea[name=skill_md]', md);
      await page.click('form[data-skill-form] button[type=submit]');
      await page.locator('article[data-skill=on-call]').waitFor({ timeout: 5000 });
      const got = ok(await call('get_skill', { name: 'on-call', workspace: ws }), 'get_skill (from the console)');
      assert.equal(got.skill_md, md);

      await page.click('article[data-skill=on-call] a');
      await page.waitForURL(`**/console/w/${ws}/skills/on-call`);
      assert.match(await page.textContent('pre[data-skill-md]'), /Call them\./);
      await page.screenshot({ path: `${SHOTS}skills-one.png`, fullPage: true });
      page.once('dialog', (d) => d.accept());
      await page.click('form:has(input[name=name][value=on-call]) button.danger');
      await page.waitForURL(`**/console/w/${ws}**`);
      const left = ok(await call('list_skills', { workspace: ws }), 'list_skills');
      assert.deepEqual(left.skills.map((s) => s.name), ['release-notes']);
    } finally {
      await browser.close();
    }
  });
});
