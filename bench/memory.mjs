// What the Worker holds in memory across a long fuzz and a long session (`make bench-memory`), sampled
// before, during and after each: the isolate's JS heap through V8's inspector (Runtime.getHeapUsage; a
// HeapProfiler.collectGarbage before each "after GC" column), the wasm linear memory as the Worker
// reports it to the admin token (`/v1/health`'s `memory`; it never shrinks, so it is the peak so far),
// and the resident memory of workerd and of wrangler (node) from /proc.
// The fuzz: FUZZ_N requests (bounded by FUZZ_SECONDS too) of malformed and odd bodies on every face:
// random JSON-RPC methods and tools, unknown bearer keys (the key cache's negative path), huge strings and
// arrays up to the body limit, deep nesting, random OAuth client ids, many per-address buckets (distinct
// CF-Connecting-IP, trusted for the run). The session: an echo agent, SESSION_TURNS messages (every tenth
// `/burst 500`), each read to its end with a waiting read_session, then the whole log read back.
// Loopback only: no body names a host other than this machine.
// Usage: node bench/memory.mjs BASE_URL INSPECTOR_URL SERVER_PGID   (env: AGENTSKY_ADMIN_TOKEN, FUZZ_N,
//   FUZZ_SECONDS, FUZZ_CONC, SESSION_TURNS, IDLE_SECONDS)
import http from 'node:http';
import { readFileSync, readdirSync } from 'node:fs';

const BASE = new URL(process.argv[2]);
const INSPECTOR = process.argv[3];
const PGID = Number(process.argv[4]);
const ADMIN = process.env.AGENTSKY_ADMIN_TOKEN;
const FUZZ_N = Number(process.env.FUZZ_N ?? 6000);
const FUZZ_SECONDS = Number(process.env.FUZZ_SECONDS ?? 600);
const FUZZ_CONC = Number(process.env.FUZZ_CONC ?? 4);
const SESSION_TURNS = Number(process.env.SESSION_TURNS ?? 200);
const IDLE_SECONDS = Number(process.env.IDLE_SECONDS ?? 15);
const MAX_BODY = 4 * 1024 * 1024; // MAX_BODY_BYTES
if (!ADMIN) throw new Error('AGENTSKY_ADMIN_TOKEN is not set');

const progress = (what) => process.stderr.write(`memory: ${what}\n`);
const main = new http.Agent({ keepAlive: true, maxSockets: 1 });
function send(method, path, { headers = {}, body, raw, via = main } = {}) {
  const payload = raw ?? (body === undefined ? undefined : Buffer.from(JSON.stringify(body)));
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: BASE.hostname, port: BASE.port, method, path, agent: via,
      headers: { ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}), ...headers },
    }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.setTimeout(120_000, () => req.destroy(new Error(`${method} ${path}: no answer in 120 s`)));
    req.on('error', reject);
    req.end(payload);
  });
}

// ---------------------------------------------------------------------------------------------------
// The three gauges.

async function debuggerUrl() {
  const base = new URL(INSPECTOR);
  const list = await (await fetch(`http://${base.host}/json`)).json();
  const target = list.find((t) => /agentsky/.test(t.title ?? t.id ?? '') && t.webSocketDebuggerUrl) ?? list.find((t) => t.webSocketDebuggerUrl);
  if (!target) throw new Error(`no debuggable target at ${base.host}/json: ${JSON.stringify(list)}`);
  return target.webSocketDebuggerUrl;
}

function cdp(url) {
  // wrangler's inspector proxy refuses an upgrade without an Origin.
  const ws = new WebSocket(url, { headers: { origin: 'http://127.0.0.1' } });
  // Ids far above wrangler's proxy's own (it sends small ones and answers them on the same socket).
  let next = 2_000_000_000; const waiting = new Map();
  ws.onmessage = (m) => {
    const msg = JSON.parse(m.data);
    const w = msg.id !== undefined && waiting.get(msg.id);
    if (!w) return;
    waiting.delete(msg.id);
    if (msg.error) w.reject(new Error(`${w.method}: ${JSON.stringify(msg.error)}`)); else w.resolve(msg.result);
  };
  const opened = new Promise((resolve, reject) => { ws.onopen = resolve; ws.onerror = (e) => reject(new Error(`inspector: ${e.message ?? e.type}`)); });
  return {
    opened,
    call: (method, params = {}) => new Promise((resolve, reject) => {
      const id = ++next; waiting.set(id, { resolve, reject, method });
      ws.send(JSON.stringify({ id, method, params }));
    }),
  };
}

/** RSS (bytes) of the server's processes by name: workerd, and wrangler's node. */
function rss() {
  const by = {};
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let stat, status;
    try { stat = readFileSync(`/proc/${pid}/stat`, 'utf8'); status = readFileSync(`/proc/${pid}/status`, 'utf8'); } catch { continue; }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // after "pid (comm) "
    if (Number(fields[2]) !== PGID) continue; // field 5, pgrp: start_server's setsid group
    const name = /^Name:\s*(.+)$/m.exec(status)?.[1] ?? '?';
    const kb = Number(/^VmRSS:\s*(\d+)/m.exec(status)?.[1] ?? 0);
    const kind = /workerd/.test(name) ? 'workerd' : 'wrangler';
    by[kind] = (by[kind] ?? 0) + kb * 1024;
  }
  return by;
}

async function wasmBytes() {
  const r = await send('GET', '/v1/health', { headers: { authorization: `Bearer ${ADMIN}` } });
  const m = JSON.parse(r.text).memory;
  if (!m) throw new Error(`/v1/health shows no memory to the admin token: ${r.text.slice(0, 300)}`);
  return m;
}

const inspector = cdp(await debuggerUrl());
await inspector.opened;
progress('inspector connected');
const samples = [];
/** One row: the JS heap as found, after a full GC when `gc`, the wasm memory and the RSS. */
async function sample(label, { gc = false } = {}) {
  const heap = await inspector.call('Runtime.getHeapUsage');
  let after = null;
  if (gc) {
    // An idle isolate runs the inspector's commands only when it next has work: a request wakes it.
    let collected = false;
    const done = inspector.call('HeapProfiler.collectGarbage').then(() => { collected = true; });
    while (!collected) {
      await send('GET', '/');
      await Promise.race([done, new Promise((r) => setTimeout(r, 200))]);
    }
    after = await inspector.call('Runtime.getHeapUsage');
  }
  const memory = await wasmBytes();
  progress(`sampled: ${label}`);
  const row = { label, js: heap.usedSize, jsTotal: heap.totalSize, jsGc: after?.usedSize ?? null, wasm: memory.wasm_bytes, memory, ...rss() };
  samples.push(row);
  return row;
}

// ---------------------------------------------------------------------------------------------------
// Setup: an account with an echo agent, for the fuzz's valid key and the session.

const ip = (n) => `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
const acct = await send('POST', '/v1/accounts', { headers: { 'cf-connecting-ip': ip(1) }, body: { name: 'Memory', email: `memory-${Date.now()}@example.com` } });
if (acct.status !== 201) throw new Error(`POST /v1/accounts -> ${acct.status} ${acct.text}`);
const key = JSON.parse(acct.text).key.key;
const auth = { authorization: `Bearer ${key}` };
const agentRes = await send('POST', '/v1/agents', { headers: auth, body: { name: 'Memory echo', harness: 'echo', model: 'echo-1' } });
if (agentRes.status !== 201) throw new Error(`POST /v1/agents -> ${agentRes.status} ${agentRes.text}`);
const mcpHeaders = { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
let rpcId = 0;
async function tool(name, args) {
  const r = await send('POST', '/v1/mcp', { headers: { ...auth, ...mcpHeaders }, body: { jsonrpc: '2.0', id: ++rpcId, method: 'tools/call', params: { name, arguments: args } } });
  const j = JSON.parse(r.text);
  if (r.status !== 200 || j.error || j.result?.isError) throw new Error(`${name}: HTTP ${r.status} ${r.text.slice(0, 300)}`);
  return j.result.structuredContent;
}
for (let i = 0; i < 20; i++) await tool('list_agents', {}); // warm: the compiled wasm, the isolate's lists
const agentId = (await tool('list_agents', {})).agents[0].id;
await sample('start', { gc: true });

// ---------------------------------------------------------------------------------------------------
// The fuzz. A seeded generator, so two runs send the same requests.

let seed = 0x9e3779b9;
const rand = () => { seed ^= seed << 13; seed ^= seed >>> 17; seed ^= seed << 5; return (seed >>> 0) / 4294967296; };
const int = (n) => Math.floor(rand() * n);
const pick = (xs) => xs[int(xs.length)];
const word = (n = 8) => Array.from({ length: 1 + int(n) }, () => 'abcdefghijklmnopqrstuvwxyz_/.-0123456789'[int(40)]).join('');
const odd = () => pick([null, true, 0, -1, 1e308, '', 'x'.repeat(int(5000)), [], {}, [1, [2, [3]]], { a: { b: { c: null } } }, '\u0000\ud800', word(40)]);
const nested = (depth) => '['.repeat(depth) + ']'.repeat(depth);
// Built once: the largest bodies, just under the limit and just over it.
const hugeString = (n) => Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'help', arguments: { topic: 'x'.repeat(n) } } }));
const nearLimitString = hugeString(MAX_BODY - 200);
const overLimit = hugeString(MAX_BODY + 10);
// Many small values: what a parse into serde_json::Value multiplies most.
const smallValues = (() => {
  const head = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"help","arguments":{"topic":[';
  const n = Math.floor((MAX_BODY - head.length - 10) / 2);
  return Buffer.from(`${head}${'0,'.repeat(n - 1)}0]}}}`);
})();
const smallValuesRest = Buffer.from(`[${'0,'.repeat(Math.floor((MAX_BODY - 10) / 2) - 1)}0]`);
const rpcOdd = () => ({ jsonrpc: pick(['2.0', '2.0', '1.0', 2, null]), id: pick([int(1e6), word(), null, [], 1.5]), method: pick(['tools/call', 'tools/list', 'initialize', 'ping', 'resources/read', 'prompts/get', 'tasks/get', word(30)]), params: pick([{ name: pick(['list_agents', 'get_session', 'read_session', 'help', word(20)]), arguments: { [word()]: odd(), session_id: `ses_${word(20)}`, cursor: word(30) } }, odd(), { name: word(200) }]) });

const kinds = [
  // [weight, name, make(i) -> [method, path, opts]]
  [20, 'mcp, unknown key', (i) => ['POST', '/v1/mcp', { headers: { ...mcpHeaders, authorization: `Bearer ast_${word(40)}${i}` }, body: rpcOdd() }]],
  [20, 'mcp, odd calls', () => ['POST', '/v1/mcp', { headers: { ...auth, ...mcpHeaders }, body: rpcOdd() }]],
  [8, 'mcp, malformed', () => ['POST', '/v1/mcp', { headers: { ...auth, ...mcpHeaders }, raw: Buffer.from(pick(['{', '{"jsonrpc":"2.0","id":1,"method":', nested(100 + int(20000)), `{"a":"${'\\u'.repeat(3)}"}`, '[]', 'null', word(3000)])) }]],
  [2, 'mcp, not UTF-8', () => ['POST', '/v1/mcp', { headers: { ...auth, ...mcpHeaders }, raw: Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]) }]],
  [10, 'rest, unknown key', (i) => [pick(['GET', 'POST', 'DELETE']), pick(['/v1/agents', '/v1/sessions', `/v1/sessions/ses_${word()}`, `/v1/${word()}`, '/v1/workspaces']), { headers: { authorization: `Bearer ast_${word(30)}${i}` }, body: pick([undefined, odd(), { name: word(100) }]) }]],
  [10, 'rest, odd', () => [pick(['GET', 'GET', 'POST', 'PATCH']), pick([`/v1/sessions/ses_${word()}`, `/v1/agents/agt_${word()}`, `/v1/${word(20)}`, `/v1/tasks/tsk_${word()}/file?path=${word()}`, `/v1/sessions?limit=${int(1e6)}&cursor=${word()}`, `/v1/help?topic=${word(50)}`]), { headers: auth, body: pick([undefined, odd(), { [word()]: odd() }]) }]],
  [8, 'help mcp, per address', (i) => ['POST', '/v1/help/mcp', { headers: { ...mcpHeaders, 'cf-connecting-ip': ip(1000 + i) }, body: { jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: pick(['help_search', 'help_get', word()]), arguments: { query: word(300), slug: word() } } } }]],
  [5, 'oauth authorize, random client', (i) => ['GET', `/oauth/authorize?response_type=code&client_id=${encodeURIComponent(pick([`c_${word(30)}`, `https://127.0.0.1:9/${word()}`, word(500)]))}&redirect_uri=${encodeURIComponent(`http://127.0.0.1:9/${word()}`)}&code_challenge=${word(43)}&code_challenge_method=S256&state=${i}`, {}]],
  [4, 'oauth register/token, per address', (i) => ['POST', pick(['/oauth/register', '/oauth/token', '/oauth/revoke']), { headers: { 'cf-connecting-ip': ip(200_000 + i), ...(rand() < 0.5 ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) }, raw: Buffer.from(rand() < 0.5 ? `grant_type=${word()}&code=${word(40)}&client_id=${word()}` : JSON.stringify({ redirect_uris: [`http://127.0.0.1:9/${word()}`], client_name: word(200) })) }]],
  [4, 'signup, per address', (i) => ['POST', '/v1/accounts', { headers: { 'cf-connecting-ip': ip(400_000 + i) }, body: pick([{ name: '', email: 'x' }, { name: word(500), email: `${word()}@` }, odd()]) }]],
  [4, 'session mcp, unknown token', () => ['POST', '/v1/session/mcp', { headers: { ...mcpHeaders, authorization: `Bearer ${word(60)}` }, body: rpcOdd() }]],
  [4, 'pages', () => ['GET', pick([`/help/${word()}`, `/s/${word(40)}`, `/a/${word(40)}`, `/console/${word()}`, `/.well-known/${word()}`, `/device?code=${word()}`]), {}]],
  [1, 'huge string (just under 4 MB)', () => ['POST', '/v1/mcp', { headers: { ...auth, ...mcpHeaders }, raw: nearLimitString }]],
  [1, 'many small values (4 MB)', () => ['POST', '/v1/mcp', { headers: { ...auth, ...mcpHeaders }, raw: smallValues }]],
  [1, 'many small values, REST (4 MB)', () => ['POST', '/v1/agents', { headers: auth, raw: smallValuesRest }]],
  [1, 'over the limit', () => ['POST', '/v1/mcp', { headers: { ...auth, ...mcpHeaders }, raw: overLimit }]],
];
const totalWeight = kinds.reduce((a, [w]) => a + w, 0);
const chooseKind = () => { let x = rand() * totalWeight; for (const k of kinds) { x -= k[0]; if (x < 0) return k; } return kinds[0]; };

async function fuzz() {
  const counts = new Map(); const statuses = new Map();
  const deadline = Date.now() + FUZZ_SECONDS * 1000;
  let next = 0; let sent = 0; let failures = 0;
  const lanes = Array.from({ length: FUZZ_CONC }, () => new http.Agent({ keepAlive: true, maxSockets: 1 }));
  let sampled = 0;
  await Promise.all(lanes.map(async (via) => {
    for (let i = next++; i < FUZZ_N && Date.now() < deadline; i = next++) {
      const [, name, make] = chooseKind();
      const [method, path, opts] = make(i);
      counts.set(name, (counts.get(name) ?? 0) + 1);
      sent++;
      try {
        const r = await send(method, path, { ...opts, via });
        const s = `${r.status}`; statuses.set(s, (statuses.get(s) ?? 0) + 1);
      } catch { failures++; }
      if (i >= FUZZ_N / 2 && !sampled++) await sample('during the fuzz');
    }
  }));
  for (const l of lanes) l.destroy();
  return { n: sent, counts, statuses, failures };
}
const t0 = Date.now();
const fuzzed = await fuzz();
const fuzzS = (Date.now() - t0) / 1000;
await sample('after the fuzz', { gc: true });

// ---------------------------------------------------------------------------------------------------
// The long session.

async function untilTurnEnds(sessionId, sent) {
  let cursor = sent.cursor;
  for (;;) {
    const page = await tool('read_session', { session_id: sessionId, cursor, message_id: sent.message_id, wait_seconds: 30 });
    cursor = page.cursor;
    if (page.turn_finished) return cursor;
  }
}
progress('the session');
const t1 = Date.now();
const ikey = (n) => `memory-${Date.now()}-${n}`;
const started = await tool('start_session', { agent_id: agentId, message: 'memory bench', idempotency_key: ikey(0) });
const sessionId = started.session.session_id;
await untilTurnEnds(sessionId, started);
for (let i = 1; i < SESSION_TURNS; i++) {
  const message = i % 10 === 0 ? '/burst 500' : `turn ${i}: ${'words '.repeat(int(200))}`;
  const sent = await tool('send_message', { session_id: sessionId, message, idempotency_key: ikey(i) });
  await untilTurnEnds(sessionId, sent);
  if (i === Math.floor(SESSION_TURNS / 2)) await sample('during the session');
}
// Readers that wait on an idle session and time out.
let cursorEnd = (await tool('read_session', { session_id: sessionId, limit: 1, cursor: started.cursor })).cursor;
for (let i = 0; i < 20; i++) cursorEnd = (await tool('read_session', { session_id: sessionId, cursor: cursorEnd, wait_seconds: 1 })).cursor;
// The whole log, read back.
let events = 0; let cursor;
for (;;) {
  const page = await tool('read_session', { session_id: sessionId, ...(cursor ? { cursor } : {}), limit: 200 });
  events += page.events.length; cursor = page.cursor;
  if (!page.has_more) break;
}
const sessionS = (Date.now() - t1) / 1000;
await sample('after the session', { gc: true });

await new Promise((r) => setTimeout(r, IDLE_SECONDS * 1000));
await sample(`idle ${IDLE_SECONDS} s, after GC`, { gc: true });

// ---------------------------------------------------------------------------------------------------
// The table.

const mb = (b) => (b === null || b === undefined ? '—' : (b / 1048576).toFixed(1));
console.log(`fuzz: ${fuzzed.n} requests in ${fuzzS.toFixed(0)} s (${FUZZ_CONC} connections), ${fuzzed.failures} without an answer; statuses ${[...fuzzed.statuses].sort().map(([s, c]) => `${s}×${c}`).join(' ')}`);
console.log(`      ${[...fuzzed.counts].map(([k, c]) => `${k} ×${c}`).join('; ')}`);
console.log(`session: ${SESSION_TURNS} messages (every tenth /burst 500) in ${sessionS.toFixed(0)} s; ${events} events read back\n`);
const cols = ['sample', 'JS heap', 'JS heap after GC', 'wasm memory', 'workerd RSS', 'wrangler RSS'];
const rows = samples.map((s) => [s.label, mb(s.js), mb(s.jsGc), mb(s.wasm), mb(s.workerd), mb(s.wrangler)]);
const width = cols.map((c, i) => Math.max(c.length, ...rows.map((r) => r[i].length)));
const line = (r) => r.map((c, i) => (i === 0 ? c.padEnd(width[i]) : c.padStart(width[i]))).join('  ');
console.log(`${line(cols)}   (MB)`);
for (const r of rows) console.log(line(r));
const first = samples[0]; const last = samples.at(-1);
const grew = (k) => `${mb(last[k] - first[k])} MB`;
console.log(`\ngrowth, start → idle after GC: JS heap ${grew('jsGc')}, wasm memory ${grew('wasm')} (its peak: wasm memory never shrinks), workerd RSS ${grew('workerd')}`);
const extra = Object.keys(last.memory).filter((k) => k !== 'wasm_bytes');
if (extra.length) console.log(`the Worker's own tallies at the end: ${JSON.stringify(Object.fromEntries(extra.map((k) => [k, last.memory[k]])))}`);
main.destroy();
process.exit(0); // the inspector's WebSocket would hold the process open
