// The load generator of `make bench`: sequential requests on ONE keep-alive connection (node:http,
// maxSockets 1), so each number is one request's full round trip through wrangler dev and the Worker.
// Usage: node bench/load.mjs BASE_URL  (env: BENCH_N requests per route, BENCH_WARMUP, BENCH_WASM path)
import http from 'node:http';
import { readFileSync, existsSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

const BASE = new URL(process.argv[2] ?? process.env.AGENTSKY_URL);
const N = Number(process.env.BENCH_N ?? 2000);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 200);
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function send(method, path, { headers = {}, body } = {}) {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const req = http.request({
      host: BASE.hostname, port: BASE.port, method, path, agent,
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
  for (let i = 0; i < WARMUP; i++) check(await make());
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
agent.destroy();

const f = (x) => x.toFixed(2);
const table = [
  ['route', 'n', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'req/s', 'x-d1-queries', 'failed'],
  ...rows.map((r) => [r.name, String(r.n), f(r.p50), f(r.p90), f(r.p99), f(r.max), r.rps.toFixed(0), r.d1, String(r.failures)]),
];
const widths = table[0].map((_, c) => Math.max(...table.map((row) => row[c].length)));
const line = (row) => row.map((cell, c) => (c === 0 || c === 7 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  ');
console.log();
console.log(`agentsky bench: ${N} sequential requests per route on one keep-alive connection (after ${WARMUP} warm-up), ${BASE.origin}`);
console.log(line(table[0]));
console.log(widths.map((w) => '-'.repeat(w)).join('  '));
for (const row of table.slice(1)) console.log(line(row));
const floor = rows[0].p50; const call = rows[2].p50;
console.log();
console.log(`tools/call p50 / floor p50 = ${(call / floor).toFixed(2)}x   (aim: <= 1.5x)`);
const wasm = process.env.BENCH_WASM;
if (wasm && existsSync(wasm)) {
  const raw = readFileSync(wasm);
  const gz = gzipSync(raw, { level: 9 }).length;
  console.log(`wasm ${wasm.replace(/^.*\/build\//, 'build/')}: ${(raw.length / 1024).toFixed(0)} KiB raw, ${(gz / 1024).toFixed(0)} KiB gzip -9   (aim: <= 1024 KiB gzip)`);
}
const failed = rows.reduce((s, r) => s + r.failures, 0);
if (failed) { console.error(`${failed} requests failed`); process.exit(1); }
