// The load generator of `make bench`: sequential requests on ONE keep-alive connection (node:http,
// maxSockets 1), so each number is one request's full round trip through wrangler dev and the Worker.
// Then sessions and turns (echo harness), measured on the same server in the same run:
// - start_session / send_message latency (sequential) and throughput (sequential and BENCH_CONC in flight);
// - send_message → its echo reply read by a waiting read_session (a turn's round trip);
// - wake-up: a read_session waiting in the session's object during a `/sleep 1` turn, from the reply
//   event's `at_ms` (appended) to the read's return at the client (same machine, same clock);
// - read_session page latency on a session of 10 events and one of 10,006 (`/burst 5000` twice).
// Usage: node bench/load.mjs BASE_URL  (env: BENCH_N requests per route, BENCH_WARMUP, BENCH_WASM path,
// BENCH_SESSIONS starts/sends per row, BENCH_CONC, BENCH_WAKE_N wake-up samples, BENCH_WAKE_PAR sessions
// sampled side by side, BENCH_PAGE_N reads per page row)
import http from 'node:http';
import { readFileSync, existsSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

const BASE = new URL(process.argv[2] ?? process.env.AGENTSKY_URL);
const N = Number(process.env.BENCH_N ?? 2000);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 200);
const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 200);
const CONC = Number(process.env.BENCH_CONC ?? 8);
const WAKE_N = Number(process.env.BENCH_WAKE_N ?? 50);
const WAKE_PAR = Number(process.env.BENCH_WAKE_PAR ?? 5);
const PAGE_N = Number(process.env.BENCH_PAGE_N ?? 200);
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function send(method, path, { headers = {}, body, via = agent } = {}) {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const req = http.request({
      host: BASE.hostname, port: BASE.port, method, path, agent: via,
      headers: { ...headers, ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}) },
    }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({
        ms: Number(process.hrtime.bigint() - t0) / 1e6,
        status: res.statusCode, headers: res.headers, text: Buffer.concat(chunks).toString(),
      }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

async function measure(name, make, check) {
  return measureN(name, N, make, check);
}

async function measureN(name, N, make, check) {
  for (let i = 0; i < Math.min(WARMUP, N); i++) check(await make());
  const ms = []; const d1 = new Map(); let failures = 0;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) {
    const r = await make();
    ms.push(r.ms);
    try { check(r); } catch { failures++; }
    const q = r.headers['x-d1-queries'] ?? '—';
    d1.set(q, (d1.get(q) ?? 0) + 1);
  }
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  ms.sort((a, b) => a - b);
  return {
    name, n: N, failures, p50: pct(ms, 50), p90: pct(ms, 90), p99: pct(ms, 99), max: ms.at(-1),
    rps: N / wall, d1: [...d1.entries()].sort((a, b) => b[1] - a[1]).map(([q, c]) => (d1.size > 1 ? `${q}×${c}` : q)).join(' '),
  };
}

function expect200(r) {
  if (r.status !== 200) throw new Error(`HTTP ${r.status}: ${r.text.slice(0, 300)}`);
}
function expectResult(r) {
  expect200(r);
  const j = JSON.parse(r.text);
  if (j.error) throw new Error(`JSON-RPC error: ${r.text.slice(0, 300)}`);
  if (j.result?.isError) throw new Error(`tool error: ${r.text.slice(0, 300)}`);
}

// An account with a few agents, so list_agents returns rows.
const acct = await send('POST', '/v1/accounts', { body: { name: 'Bench', email: `bench-${Date.now()}@example.com` } });
if (acct.status !== 201) throw new Error(`POST /v1/accounts -> ${acct.status} ${acct.text}`);
const key = JSON.parse(acct.text).key.key;
const auth = { authorization: `Bearer ${key}` };
for (let i = 0; i < 3; i++) {
  const a = await send('POST', '/v1/agents', { headers: auth, body: { name: `Bench echo ${i}`, harness: 'echo', model: 'echo-1' } });
  if (a.status !== 201) throw new Error(`POST /v1/agents -> ${a.status} ${a.text}`);
}

// MCP as a stateless legacy-era client sends it after initialize (Claude Code, Codex, the v1 SDK).
const mcpHeaders = {
  ...auth, accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25',
};
let id = 0;
const rpc = (method, params) => () => send('POST', '/v1/mcp', { headers: mcpHeaders, body: { jsonrpc: '2.0', id: ++id, method, params } });
// Make sure the first tools/call works before timing anything.
expectResult(await rpc('tools/call', { name: 'list_agents', arguments: {} })());

const rows = [];
rows.push(await measure('GET /v1/health (floor)', () => send('GET', '/v1/health'), expect200));
rows.push(await measure('MCP tools/list', rpc('tools/list', {}), expectResult));
rows.push(await measure('MCP tools/call list_agents', rpc('tools/call', { name: 'list_agents', arguments: {} }), expectResult));
// The same two calls with BENCH_CONC connections in flight (what `with-agentsky.sh` compares at 8).
const rpcOn = (method, params) => async (i, via) => {
  const r = await send('POST', '/v1/mcp', { headers: mcpHeaders, body: { jsonrpc: '2.0', id: ++id, method, params }, via });
  let err = null;
  try { expectResult(r); } catch { err = `HTTP ${r.status}`; }
  return { ms: r.ms, headers: r.headers, err };
};
rows.push(await load(`MCP tools/list, ${CONC} connections`, N, CONC, rpcOn('tools/list', {})));
rows.push(await load(`MCP tools/call list_agents, ${CONC} connections`, N, CONC, rpcOn('tools/call', { name: 'list_agents', arguments: {} })));
// What a client downloads for the tool list, and roughly what its model pays for it: the model is shown
// each tool's name, description and inputSchema (outputSchema validates results; clients do not send it).
const listed = (await rpc('tools/list', {})()).text;
const shown = JSON.stringify(JSON.parse(listed).result.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema })));
const listNote = `tools/list: ${listed.length} bytes (${gzipSync(listed).length} gzipped); what a model is shown of it: ${shown.length} chars, ~${Math.round(shown.length / 4)} tokens at 4 chars a token`;

// ---------------------------------------------------------------------------------------------------
// Sessions and turns.

const agentId = JSON.parse((await rpc('tools/call', { name: 'list_agents', arguments: {} })()).text).result.structuredContent.agents[0].id;
let keyN = 0;
const ikey = (what) => `bench-${what}-${Date.now()}-${++keyN}`;
/** tools/call on a given connection; returns { ms, headers, sc (structuredContent), err }. */
async function tool(name, args, via = agent) {
  const r = await send('POST', '/v1/mcp', { headers: mcpHeaders, body: { jsonrpc: '2.0', id: ++id, method: 'tools/call', params: { name, arguments: args } }, via });
  expect200(r);
  const j = JSON.parse(r.text);
  if (j.error) throw new Error(`JSON-RPC error: ${r.text.slice(0, 300)}`);
  const sc = j.result.structuredContent;
  // An error's body is the result's JSON text (no structuredContent).
  const err = () => { try { return JSON.parse(j.result.content[0].text).error.code; } catch { return 'error'; } };
  return { ms: r.ms, headers: r.headers, sc, err: j.result.isError ? err() : null };
}
const must = (r, what) => { if (r.err) throw new Error(`${what}: ${r.err} ${JSON.stringify(r.sc)}`); return r.sc; };

function summarize(name, ms, wall, { failures = 0, d1 = new Map(), n = ms.length, note = '' } = {}) {
  const sorted = [...ms].sort((a, b) => a - b);
  return {
    name, n, failures, p50: pct(sorted, 50), p90: pct(sorted, 90), p99: pct(sorted, 99), max: sorted.at(-1),
    rps: wall ? n / wall : NaN, note,
    d1: [...d1.entries()].sort((a, b) => b[1] - a[1]).map(([q, c]) => (d1.size > 1 ? `${q}×${c}` : q)).join(' ') || '—',
  };
}

/** n calls of make(i) with `conc` in flight, each conc lane on its own keep-alive connection. */
async function load(name, n, conc, make) {
  const lanes = Array.from({ length: conc }, () => new http.Agent({ keepAlive: true, maxSockets: 1 }));
  const ms = []; const d1 = new Map(); let failures = 0; let next = 0; const errors = new Map();
  const t0 = process.hrtime.bigint();
  await Promise.all(lanes.map(async (via) => {
    for (let i = next++; i < n; i = next++) {
      const r = await make(i, via);
      ms.push(r.ms);
      if (r.err) { failures++; errors.set(r.err, (errors.get(r.err) ?? 0) + 1); }
      const q = r.headers['x-d1-queries'] ?? '—';
      d1.set(q, (d1.get(q) ?? 0) + 1);
    }
  }));
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  for (const l of lanes) l.destroy();
  return summarize(name, ms, wall, { failures, d1, note: [...errors].map(([c, k]) => `${c}×${k}`).join(' ') });
}

const sessionRows = [];
const started = [];
const startOne = (via) => tool('start_session', { agent_id: agentId, message: 'bench', idempotency_key: ikey('start') }, via);
for (let i = 0; i < Math.min(20, SESSIONS); i++) started.push(must(await startOne(agent), 'start_session warm-up'));
sessionRows.push(await load('start_session (echo), sequential', SESSIONS, 1, async (i, via) => {
  const r = await startOne(via); if (!r.err) started.push(r.sc); return r;
}));
sessionRows.push(await load(`start_session (echo), ${CONC} in flight`, SESSIONS, CONC, async (i, via) => {
  const r = await startOne(via); if (!r.err) started.push(r.sc); return r;
}));

// send_message round-robins over the sessions just started: each is long idle again when its turn comes.
const pool = started.map((s) => s.session.session_id);
let rr = 0;
const sendOne = (via) => tool('send_message', { session_id: pool[rr++ % pool.length], message: 'bench again', idempotency_key: ikey('send') }, via);
sessionRows.push(await load('send_message (echo), sequential', SESSIONS, 1, (i, via) => sendOne(via)));
sessionRows.push(await load(`send_message (echo), ${CONC} in flight`, SESSIONS, CONC, (i, via) => sendOne(via)));

// A turn's round trip: send_message's answer → its echo reply returned by a waiting read_session.
{
  const sid = must(await startOne(agent), 'start').session.session_id;
  await new Promise((r) => setTimeout(r, 100));
  const ms = []; let failures = 0;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < WAKE_N; i++) {
    const sent = must(await tool('send_message', { session_id: sid, message: `turn ${i}`, idempotency_key: ikey('turn') }), 'send_message');
    const tSent = performance.now();
    let cursor = sent.cursor; let got = false;
    for (let tries = 0; tries < 10 && !got; tries++) {
      const page = must(await tool('read_session', { session_id: sid, cursor, message_id: sent.message_id, wait_seconds: 10 }), 'read_session');
      if (page.events.some((e) => e.type === 'agent_message')) { ms.push(performance.now() - tSent); got = true; }
      cursor = page.cursor;
      if (page.turn_finished) break;
    }
    if (!got) failures++;
    // Let the turn's end land before the next send (no session_busy).
    for (let tries = 0; tries < 50; tries++) {
      const page = must(await tool('read_session', { session_id: sid, cursor, message_id: sent.message_id, wait_seconds: 10 }), 'read_session');
      cursor = page.cursor;
      if (page.turn_finished) break;
    }
  }
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  sessionRows.push(summarize('send_message → echo reply read (turn round trip)', ms, wall, { failures, n: WAKE_N }));
}

// Wake-up: during a `/sleep 1` turn a read_session waits in the object; the reply's append wakes it.
const wake = [];
{
  let notWaiting = 0;
  const t0 = process.hrtime.bigint();
  const lane = async (lanes, laneNo) => {
    const via = new http.Agent({ keepAlive: true, maxSockets: 1 });
    await new Promise((r) => setTimeout(r, laneNo * Math.floor(1000 / lanes)));
    const sid = must(await startOne(via), 'start').session.session_id;
    await new Promise((r) => setTimeout(r, 100));
    for (let i = laneNo; i < WAKE_N; i += lanes) {
      const sent = must(await tool('send_message', { session_id: sid, message: `/sleep 1 wake ${i}`, idempotency_key: ikey('wake') }, via), 'send_message');
      // The first read returns the turn's "sleeping" status; the second waits for the reply.
      const status = must(await tool('read_session', { session_id: sid, cursor: sent.cursor, message_id: sent.message_id, wait_seconds: 50 }, via), 'read status');
      const asked = Date.now();
      const page = must(await tool('read_session', { session_id: sid, cursor: status.cursor, message_id: sent.message_id, wait_seconds: 50 }, via), 'read reply');
      const back = Date.now();
      const reply = page.events.find((e) => e.type === 'agent_message');
      if (!reply || reply.at_ms < asked) { notWaiting++; } else wake.push(back - reply.at_ms);
      let cursor = page.cursor; let done = page.turn_finished;
      while (!done) {
        const p = must(await tool('read_session', { session_id: sid, cursor, message_id: sent.message_id, wait_seconds: 10 }, via), 'read end');
        cursor = p.cursor; done = p.turn_finished;
      }
    }
    via.destroy();
  };
  await Promise.all(Array.from({ length: WAKE_PAR }, (_, k) => lane(WAKE_PAR, k)));
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  sessionRows.push(summarize(`wake-up: reply at_ms → waiting read returns (${WAKE_PAR} sessions side by side)`, wake, wall,
    { n: wake.length, note: notWaiting ? `${notWaiting} samples dropped: the reply landed before the read was sent` : '' }));
}

// read_session page latency: a session of 10 events against one of 10,006.
async function readyTurn(s) {
  let cursor = s.cursor;
  for (;;) {
    const p = must(await tool('read_session', { session_id: s.session?.session_id ?? s.session_id, cursor, message_id: s.message_id, wait_seconds: 50 }), 'read');
    cursor = p.cursor;
    if (p.turn_finished) return cursor;
  }
}
const small = must(await tool('start_session', { agent_id: agentId, message: '/burst 7', idempotency_key: ikey('small') }), 'start small');
await readyTurn(small);
const big = must(await tool('start_session', { agent_id: agentId, message: '/burst 5000', idempotency_key: ikey('big') }), 'start big');
await readyTurn(big);
const big2 = must(await tool('send_message', { session_id: big.session.session_id, message: '/burst 5000', idempotency_key: ikey('big2') }), 'send big');
await readyTurn(big2);
async function logInfo(sid) {
  // The cursors of the first and last events, by paging the whole log.
  const cursors = []; let cursor;
  for (;;) {
    const p = must(await tool('read_session', { session_id: sid, ...(cursor ? { cursor } : {}) }), 'read all');
    cursors.push(...p.events.map((e) => e.cursor));
    cursor = p.cursor;
    if (!p.has_more) return cursors;
  }
}
const logs = {
  small: { s: small, last: small, cursors: await logInfo(small.session.session_id) },
  big: { s: big, last: big2, cursors: await logInfo(big.session.session_id) },
};
const pageRows = [];
const cases = [
  ['first page (no cursor), limit 10', (L) => ({ limit: 10 })],
  ['last 10 events, limit 10', (L) => ({ cursor: L.cursors.at(-11), limit: 10 })],
  ["last turn's first 10 (message_id), limit 10", (L) => ({ cursor: L.last.cursor, message_id: L.last.message_id, limit: 10 })],
  ["last turn's last 10 (message_id), limit 10", (L) => ({ cursor: L.cursors.at(-11), message_id: L.last.message_id, limit: 10 })],
  ['at the end, nothing new (wait_seconds 0)', (L) => ({ cursor: L.cursors.at(-1), message_id: L.last.message_id })],
];
for (const [label, args] of cases) {
  const pair = [];
  for (const which of ['small', 'big']) {
    const L = logs[which];
    const a = { session_id: L.s.session.session_id, ...args(L) };
    for (let i = 0; i < 20; i++) must(await tool('read_session', a), 'warm-up');
    const r = await load(`read_session: ${label} — ${L.cursors.length} events`, PAGE_N, 1, () => tool('read_session', a));
    pair.push(r); pageRows.push(r);
  }
  pair[1].ratio = pair[1].p50 / pair[0].p50;
}
// ---------------------------------------------------------------------------------------------------
// The console: pages a person opens, signed in with a cookie, rendered on the server.
const CONSOLE_N = Number(process.env.BENCH_CONSOLE_N ?? 300);
const origin = BASE.origin;
const form = `key=${encodeURIComponent(key)}`;
const login = await new Promise((resolve, reject) => {
  const req = http.request({ host: BASE.hostname, port: BASE.port, method: 'POST', path: '/console/login', agent,
    headers: { origin, 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(form) } },
  (res) => { res.resume(); res.on('end', () => resolve(res)); });
  req.on('error', reject); req.end(form);
});
const cookie = String(login.headers['set-cookie'] ?? '').split(';')[0];
if (!cookie.startsWith('agentsky_console=')) throw new Error(`console sign-in gave no cookie (HTTP ${login.statusCode})`);
const slug = JSON.parse((await rpc('tools/call', { name: 'list_workspaces', arguments: {} })()).text).result.structuredContent.workspaces[0].slug;
const page = (path) => () => send('GET', `/console/w/${slug}${path}`, { headers: { cookie } });
const consoleRows = [];
for (const [name, path] of [['Approvals', ''], ['Board', '/board'], ['Session', `/sessions/${started[0].session.session_id}`], ['Usage', '/usage'], ['Agents', '/agents'], ['API keys', '/keys']]) {
  const r = await measureN(`console ${name}`, CONSOLE_N, page(path), expect200);
  consoleRows.push(r);
}

agent.destroy();

const f = (x) => (Number.isFinite(x) ? x.toFixed(2) : '—');
function printTable(title, rs, withRatio = false) {
  const head = ['route', 'n', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'req/s', 'x-d1-queries', 'failed'];
  if (withRatio) head.push('p50 vs 10');
  const table = [head, ...rs.map((r) => {
    const row = [r.name, String(r.n), f(r.p50), f(r.p90), f(r.p99), f(r.max), Number.isFinite(r.rps) ? r.rps.toFixed(0) : '—', r.d1, String(r.failures) + (r.note ? ` (${r.note})` : '')];
    if (withRatio) row.push(r.ratio ? `${r.ratio.toFixed(2)}x` : '');
    return row;
  })];
  const widths = table[0].map((_, c) => Math.max(...table.map((row) => row[c].length)));
  const line = (row) => row.map((cell, c) => (c === 0 || c === 7 || c === 8 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  ');
  console.log();
  console.log(title);
  console.log(line(table[0]));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of table.slice(1)) console.log(line(row));
}
printTable(`agentsky bench: ${N} sequential requests per route on one keep-alive connection (after ${WARMUP} warm-up), ${BASE.origin}`, rows);
const floor = rows[0].p50; const call = rows[2].p50;
console.log();
console.log(`tools/call p50 / floor p50 = ${(call / floor).toFixed(2)}x   (aim: <= 1.5x)`);
console.log(listNote);
printTable(`sessions and turns (echo harness): ${SESSIONS} calls per start/send row, ${WAKE_N} turn samples`, sessionRows);
const wakeRow = sessionRows.at(-1);
console.log();
console.log(`wake-up p50 ${f(wakeRow.p50)} ms, p99 ${f(wakeRow.p99)} ms over ${wakeRow.n} samples   (aim: p50 < 20 ms)`);
printTable(`read_session page latency, ${PAGE_N} sequential reads per row: a session of ${logs.small.cursors.length} events vs ${logs.big.cursors.length}`, pageRows, true);
console.log();
const ratios = pageRows.filter((r) => r.ratio).map((r) => r.ratio);
console.log(`page p50 on ${logs.big.cursors.length} events / on ${logs.small.cursors.length}: ${ratios.map((x) => `${x.toFixed(2)}x`).join(', ')}   (aim: ~1x, whatever the log's length)`);
printTable(`console pages (server-rendered, signed in with a cookie): ${CONSOLE_N} sequential GETs per page`, consoleRows);
console.log();
console.log(`console page p50 minus the floor's p50 (the page's own server time): ${consoleRows.map((r) => `${r.name.slice(8)} ${f(r.p50 - floor)} ms`).join(', ')}   (aim: < 50 ms)`);
const wasm = process.env.BENCH_WASM;
if (wasm && existsSync(wasm)) {
  const raw = readFileSync(wasm);
  const gz = gzipSync(raw, { level: 9 }).length;
  console.log(`wasm ${wasm.replace(/^.*\/build\//, 'build/')}: ${(raw.length / 1024).toFixed(0)} KiB raw, ${(gz / 1024).toFixed(0)} KiB gzip -9   (issue 38 aims at <= 1,468,006 bytes = 1.4 MiB gzip: ${gz.toLocaleString("en-US")} bytes now)`);
}
const failed = [...rows, ...sessionRows, ...pageRows].reduce((s, r) => s + r.failures, 0);
if (failed) { console.error(`${failed} requests failed`); process.exit(1); }
