// No body read, no auth, no MCP: `/` is a hello world, `/d1` the same after one D1 round trip, and
// `/batch` after one round trip shaped like a read tool's (agentsky's key touch and lookup, the per-key
// count's prune, insert and state, and a 20-row read, in one atomic batch).
let seeded = false;
// The per-key limit the rig's agentsky runs with (RATE_LIMIT_PER_MIN), so no call is refused.
const CAPACITY = 100000000;

async function seed(db) {
  await db.batch([
    db.prepare("CREATE TABLE IF NOT EXISTS api_key (key_hash TEXT PRIMARY KEY, account_id TEXT, last_used_ms INTEGER)"),
    db.prepare(`CREATE TABLE IF NOT EXISTS rate_log (bucket TEXT NOT NULL, seq INTEGER NOT NULL, at_ms INTEGER NOT NULL,
      PRIMARY KEY (bucket, seq)) WITHOUT ROWID`),
    db.prepare("CREATE INDEX IF NOT EXISTS rate_log_at ON rate_log (at_ms)"),
    db.prepare("CREATE TABLE IF NOT EXISTS membership (account_id TEXT, workspace_id TEXT, role TEXT, PRIMARY KEY (account_id, workspace_id))"),
    db.prepare("INSERT OR IGNORE INTO membership VALUES ('acct', 'ws', 'owner')"),
    db.prepare("CREATE TABLE IF NOT EXISTS agent (agent_id TEXT PRIMARY KEY, workspace_id TEXT, name TEXT, handle TEXT, model TEXT)"),
    db.prepare("INSERT OR IGNORE INTO api_key VALUES ('bench', 'acct', 0)"),
    ...Array.from({ length: 20 }, (_, i) =>
      db.prepare("INSERT OR IGNORE INTO agent VALUES (?1, 'ws', ?2, ?3, 'echo-1')").bind(`ag_${i}`, `Agent ${i}`, `@agent${i}`)),
  ]);
  seeded = true;
}

function readToolBatch(db, now) {
  const bucket = "key:bench";
  return db.batch([
    db.prepare("UPDATE api_key SET last_used_ms = ?2 WHERE key_hash = ?1 AND last_used_ms < ?2 - 60000").bind("bench", now),
    db.prepare(`SELECT k.key_hash, k.account_id, (SELECT json_group_array(json_object('workspace_id', m.workspace_id,
      'role', m.role)) FROM membership m WHERE m.account_id = k.account_id) AS memberships
      FROM api_key k WHERE k.key_hash = ?1`).bind("bench"),
    db.prepare("DELETE FROM rate_log WHERE at_ms <= ?1").bind(now - 60000),
    db.prepare(`INSERT INTO rate_log (bucket, seq, at_ms) SELECT ?1, COALESCE(l.seq, 0) + 1, MAX(?2, COALESCE(l.at_ms, ?2))
      FROM (SELECT 1) LEFT JOIN (SELECT seq, at_ms FROM rate_log WHERE bucket = ?1 ORDER BY seq DESC LIMIT 1) l
      WHERE COALESCE(l.seq - (SELECT seq FROM rate_log WHERE bucket = ?1 ORDER BY seq LIMIT 1) + 1, 0) < ?3
      RETURNING seq`).bind(bucket, now, CAPACITY),
    db.prepare(`SELECT l.seq - f.seq + 1 AS n, (SELECT at_ms FROM rate_log WHERE bucket = ?1 AND seq = l.seq - ?2 + 1) AS blocking
      FROM (SELECT seq FROM rate_log WHERE bucket = ?1 ORDER BY seq DESC LIMIT 1) l,
      (SELECT seq FROM rate_log WHERE bucket = ?1 ORDER BY seq LIMIT 1) f`).bind(bucket, CAPACITY),
    db.prepare("SELECT agent_id, name, handle, model FROM agent WHERE workspace_id = ?1 ORDER BY agent_id LIMIT 50").bind("ws"),
  ]);
}

export default {
  async fetch(request, env) {
    const path = new URL(request.url).pathname;
    let result = {};
    if (path === "/d1") {
      result = await env.DB.prepare("SELECT 1 AS one").first();
    } else if (path === "/batch") {
      if (!seeded) await seed(env.DB);
      const answers = await readToolBatch(env.DB, Date.now());
      result = { agents: answers[5].results };
    }
    return new Response(JSON.stringify({ jsonrpc: "2.0", id: 1, result }), {
      headers: { "content-type": "application/json" },
    });
  },
};
