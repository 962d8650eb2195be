// CPU profile of the Worker under load, through V8's inspector (the Chrome DevTools Protocol that
// `wrangler dev --inspector-port` exposes for workerd): Profiler.start, BENCH_PROFILE_N tools/call
// list_agents and tools/list on one keep-alive connection, Profiler.stop. Prints self time by function
// (wasm functions carry their Rust names when the wasm kept its name section: `PROFILING=1` builds), by
// crate for the wasm part, and writes the raw profile (open it in Chrome DevTools' Performance tab).
// Usage: node bench/profile.mjs BASE_URL INSPECTOR_URL OUT.cpuprofile
//   env: BENCH_PROFILE_N (default 1000 calls per method), BENCH_PROFILE_TOP (default 40 rows)
import http from 'node:http';
import { writeFileSync } from 'node:fs';

const BASE = new URL(process.argv[2]);
const INSPECTOR = process.argv[3];
const OUT = process.argv[4] ?? 'profile.cpuprofile';
const N = Number(process.env.BENCH_PROFILE_N ?? 1000);
const TOP = Number(process.env.BENCH_PROFILE_TOP ?? 40);
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function send(method, path, { headers = {}, body } = {}) {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: BASE.hostname, port: BASE.port, method, path, agent,
      headers: { ...headers, ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}) },
    }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

// The inspector: wrangler's proxy lists its targets at /json; take the user worker's.
async function debuggerUrl() {
  const base = new URL(INSPECTOR);
  const list = await (await fetch(`http://${base.host}/json`)).json();
  const target = list.find((t) => /agentsky/.test(t.title ?? t.id ?? '') && t.webSocketDebuggerUrl) ?? list.find((t) => t.webSocketDebuggerUrl);
  if (!target) throw new Error(`no debuggable target at ${base.host}/json: ${JSON.stringify(list)}`);
  return target.webSocketDebuggerUrl;
}

function cdp(url) {
  // wrangler's inspector proxy refuses an upgrade without an Origin (Node's WebSocket sends none by itself).
  const ws = new WebSocket(url, { headers: { origin: 'http://127.0.0.1' } });
  let next = 0; const waiting = new Map();
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
    close: () => ws.close(),
  };
}

// A key and 20 agents, as the side-by-side bench seeds.
const acct = await send('POST', '/v1/accounts', { body: { name: 'Profile', email: `profile-${Date.now()}@example.com` } });
if (acct.status !== 201) throw new Error(`POST /v1/accounts -> ${acct.status} ${acct.text}`);
const key = JSON.parse(acct.text).key.key;
const auth = { authorization: `Bearer ${key}` };
for (let i = 0; i < 20; i++) {
  const a = await send('POST', '/v1/agents', { headers: auth, body: { name: `Agent ${i}`, harness: 'echo', model: 'echo-1', description: `bench agent ${i}` } });
  if (a.status !== 201) throw new Error(`POST /v1/agents -> ${a.status} ${a.text}`);
}
const mcpHeaders = { ...auth, accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
let id = 0;
const rpc = async (method, params) => {
  const r = await send('POST', '/v1/mcp', { headers: mcpHeaders, body: { jsonrpc: '2.0', id: ++id, method, params } });
  const j = JSON.parse(r.text);
  if (r.status !== 200 || j.error || j.result?.isError) throw new Error(`${method}: HTTP ${r.status} ${r.text.slice(0, 300)}`);
};
const call = () => rpc('tools/call', { name: 'list_agents', arguments: {} });
const list = () => rpc('tools/list', {});
for (let i = 0; i < 50; i++) { await call(); await list(); } // warm: compiled wasm, the isolate's caches

const inspector = cdp(await debuggerUrl());
await inspector.opened;
await inspector.call('Profiler.enable');
await inspector.call('Profiler.setSamplingInterval', { interval: 100 }); // µs
await inspector.call('Profiler.start');
const t0 = performance.now();
for (let i = 0; i < N; i++) await call();
const tCall = performance.now();
for (let i = 0; i < N; i++) await list();
const tList = performance.now();
const { profile } = await inspector.call('Profiler.stop');
inspector.close();
agent.destroy(); // the keep-alive socket would hold the process open
writeFileSync(OUT, JSON.stringify(profile));

// Self time per node = its samples × the sampling deltas that follow them.
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map();
for (let i = 0; i < profile.samples.length; i++) {
  const dt = profile.timeDeltas[i + 1] ?? 0;
  self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + dt);
}
const total = [...self.values()].reduce((a, b) => a + b, 0);
const kind = (f) => (f.url?.startsWith('wasm://') ? 'wasm' : f.url ? 'js' : 'vm');
const fname = (f) => f.functionName || `(anonymous ${f.url?.split('/').pop() ?? ''}:${f.lineNumber})`;
const fns = new Map(); const kinds = new Map(); const crates = new Map();
for (const [nid, us] of self) {
  const f = byId.get(nid).callFrame;
  const k = kind(f);
  const name = fname(f);
  const key = `${k}\t${name}`;
  fns.set(key, (fns.get(key) ?? 0) + us);
  const busy = !['(idle)', '(program)', '(garbage collector)'].includes(name);
  const bucket = busy ? k : name;
  kinds.set(bucket, (kinds.get(bucket) ?? 0) + us);
  if (k === 'wasm') {
    // Rust symbols: `crate::path::fn` (demangled) or the mangled `_ZN5crate...`; group by crate.
    const m = name.match(/^<?([A-Za-z_][A-Za-z0-9_]*)(::|$)/) || name.match(/^_ZN\d+([A-Za-z_][A-Za-z0-9_]*)/);
    const crate = m ? m[1] : name.startsWith('$') ? '(no name section)' : '(other)';
    crates.set(crate, (crates.get(crate) ?? 0) + us);
  }
}
const pc = (us) => `${((100 * us) / total).toFixed(1).padStart(5)} %`;
const ms = (us) => `${(us / 1000).toFixed(0).padStart(7)} ms`;
const busy = total - ['(idle)', '(program)', '(garbage collector)'].reduce((a, k) => a + (kinds.get(k) ?? 0), 0);
console.log(`profile: ${N} tools/call list_agents in ${(tCall - t0).toFixed(0)} ms, ${N} tools/list in ${(tList - tCall).toFixed(0)} ms; ${profile.samples.length} samples, ${(total / 1000).toFixed(0)} ms sampled; raw: ${OUT}`);
console.log(`per request in the isolate's thread (wasm + js + gc, not idle): ${(busy / (2 * N) / 1000).toFixed(3)} ms\n`);
console.log('where the time went');
for (const [k, us] of [...kinds].sort((a, b) => b[1] - a[1])) console.log(`${ms(us)} ${pc(us)}  ${k}`);
console.log('\nwasm self time by crate');
for (const [k, us] of [...crates].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(`${ms(us)} ${pc(us)}  ${k}`);
console.log(`\ntop ${TOP} functions by self time`);
for (const [k, us] of [...fns].sort((a, b) => b[1] - a[1]).slice(0, TOP)) {
  const [kd, name] = k.split('\t');
  console.log(`${ms(us)} ${pc(us)}  ${kd.padEnd(4)} ${name.length > 150 ? `${name.slice(0, 147)}...` : name}`);
}
// Exit at once: Node stayed alive after close() on the inspector's WebSocket (wrangler's proxy), and
// `make profile` never returned.
process.exit(0);
