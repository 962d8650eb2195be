// Hosted sandboxes in `make bench` (a measurement, not a test): on the bench's server, a hosted `runner`
// agent (command `cat`: the turn is the sandbox's own cost), BENCH_SANDBOX_N rounds of
// - a cold turn: start_session → its reply, the container booted for it (boot included);
// - a warm turn: the next message → its reply, in the running container;
// - a wake: once the idle runner exited and the container slept (SANDBOX_IDLE_S), a message → its reply;
// then the sandbox image's size. Prints p50 and max of each. Without Docker (build/sandbox/status not
// `ready`) it says so and measures nothing.
// Usage: node bench/sandbox.mjs BASE_URL
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const BASE = (process.argv[2] ?? process.env.AGENTSKY_URL).replace(/\/$/, '');
const N = Number(process.env.BENCH_SANDBOX_N ?? 3);
const status = (() => {
  try { return readFileSync(new URL('../build/sandbox/status', import.meta.url), 'utf8').trim(); } catch { return 'scripts/sandbox.sh has not run'; }
})();
console.log('\n== hosted sandboxes ==');
if (status !== 'ready') {
  console.log(`sandbox bench NOT RUN: ${status}`);
  process.exit(0);
}

const json = async (method, path, key, body) => {
  const res = await fetch(`${BASE}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const j = await res.json();
  if (res.status >= 300) throw new Error(`${method} ${path} -> ${res.status} ${JSON.stringify(j)}`);
  return j;
};
let rpcId = 0;
const tool = async (key, name, args) => {
  const j = await json('POST', '/v1/mcp', key, { jsonrpc: '2.0', id: ++rpcId, method: 'tools/call', params: { name, arguments: args } });
  if (j.result?.isError) throw new Error(`${name}: ${JSON.stringify(j.result)}`);
  return j.result.structuredContent;
};
/** Waits for the turn of `message_id` to finish; its duration from `t0`. */
const turn = async (key, session_id, cursor, message_id, t0) => {
  for (;;) {
    const page = await tool(key, 'read_session', { session_id, cursor, message_id, wait_seconds: 30 });
    cursor = page.cursor;
    const failed = page.events.find((e) => e.type === 'error');
    if (failed) throw new Error(`the turn failed: ${failed.message}`);
    if (page.turn_finished) return Date.now() - t0;
  }
};
const sandboxes = () => execFileSync('docker', ['ps', '--format', '{{.Names}}'], { encoding: 'utf8' })
  .split('\n').filter((n) => n.includes('-Sandbox-') && !n.endsWith('-proxy')).length;

const acct = await json('POST', '/v1/accounts', null, { name: 'Sandbox bench', email: `sandbox-bench-${Date.now()}@example.com` });
const key = acct.key.key;
const agent = await json('POST', '/v1/agents', key, { name: 'Bench hosted', harness: 'runner', model: 'shell', placement: 'hosted', command: 'cat' });
const rows = { cold: [], warm: [], wake: [] };
for (let i = 0; i < N; i++) {
  let t0 = Date.now();
  const started = await tool(key, 'start_session', { agent_id: agent.agent_id, message: `cold ${i}`, idempotency_key: `sb-${Date.now()}-${i}` });
  const session_id = started.session.session_id;
  rows.cold.push(await turn(key, session_id, started.cursor, started.message_id, t0));
  t0 = Date.now();
  const warm = await tool(key, 'send_message', { session_id, message: `warm ${i}`, idempotency_key: `sbw-${Date.now()}-${i}` });
  rows.warm.push(await turn(key, session_id, warm.cursor, warm.message_id, t0));
  const slept = Date.now() + 90_000;
  while (sandboxes() > 0 && Date.now() < slept) await new Promise((r) => setTimeout(r, 250));
  t0 = Date.now();
  const wake = await tool(key, 'send_message', { session_id, message: `wake ${i}`, idempotency_key: `sbk-${Date.now()}-${i}` });
  rows.wake.push(await turn(key, session_id, wake.cursor, wake.message_id, t0));
  await tool(key, 'stop_session', { session_id });
}
const p50 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
for (const [name, label] of [['cold', 'first turn, booting its sandbox'], ['warm', 'next turn, sandbox running'], ['wake', 'turn waking a sleeping sandbox']]) {
  console.log(`${label.padEnd(36)} p50 ${String(p50(rows[name])).padStart(5)} ms   max ${String(Math.max(...rows[name])).padStart(5)} ms   (n=${N})`);
}
// The newest sandbox image (wrangler builds one per server start: the final image, with sky), the agent
// CLIs' image it is made from, and the Debian base under both.
const images = execFileSync('docker', ['images', '--format', '{{.Repository}}:{{.Tag}} {{.Size}}'], { encoding: 'utf8' }).split('\n');
for (const repo of ['cloudflare-dev/sandbox', 'agentsky/sandbox-agents', 'agentsky/sandbox-base']) {
  const line = images.find((l) => l.startsWith(`${repo}:`));
  if (line) console.log(`image ${line.replace(' ', '  ')}`);
}
