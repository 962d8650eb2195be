//! `TestApp`: a fresh in-memory SQLite with every migration applied, a clock the test moves, and helpers
//! that send REST and JSON-RPC requests through `handle()`.

use agentsky::app::{self, RequestMeta};
use agentsky::cx::{
    BlobPage, Blobs, Clock, Config, Cx, Env, Feeds, Limiter, Net, Outbound, Queue, SandboxBoot, Sandboxes, Sessions,
};
use agentsky::http::{HttpRequest, HttpResponse};
use agentsky::objects::session_shell::{ObjectPlatform, SessionShell, Wakeups};
use agentsky::rules::rate::{Decision, Window};
use agentsky::session::{Core, LocalSql, SessionCall};
use agentsky::store::Counted;
use agentsky::store::{DbError, DbResult, Param, Row, Sql, Stmt};
use futures::future::LocalBoxFuture;
use rusqlite::types::ValueRef;
use serde_json::{json, Value};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

/// [`Sql`] over rusqlite: the host twin of the D1 adapter.
#[derive(Clone)]
pub struct Sqlite(pub Rc<rusqlite::Connection>);

fn to_sql(p: &Param) -> rusqlite::types::Value {
    match p {
        Param::Null => rusqlite::types::Value::Null,
        Param::Int(i) => rusqlite::types::Value::Integer(*i),
        Param::Real(f) => rusqlite::types::Value::Real(*f),
        Param::Text(s) => rusqlite::types::Value::Text(s.clone()),
    }
}

fn run(conn: &rusqlite::Connection, stmt: &Stmt) -> DbResult<Vec<Row>> {
    exec(conn, stmt.sql, &stmt.params)
}

fn exec(conn: &rusqlite::Connection, sql: &str, params: &[Param]) -> DbResult<Vec<Row>> {
    let err = |e: rusqlite::Error| DbError::from_message(e.to_string());
    let mut prepared = conn.prepare(sql).map_err(err)?;
    let names: Vec<String> = prepared.column_names().into_iter().map(str::to_owned).collect();
    let params: Vec<rusqlite::types::Value> = params.iter().map(to_sql).collect();
    let mut rows = prepared.query(rusqlite::params_from_iter(params)).map_err(err)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(err)? {
        let mut map = Row::new();
        for (i, name) in names.iter().enumerate() {
            let v = match row.get_ref(i).map_err(err)? {
                ValueRef::Null => Value::Null,
                ValueRef::Integer(n) => json!(n),
                ValueRef::Real(f) => json!(f),
                ValueRef::Text(t) => json!(String::from_utf8_lossy(t)),
                ValueRef::Blob(b) => json!(b),
            };
            map.insert(name.clone(), v);
        }
        out.push(map);
    }
    Ok(out)
}

impl Sql for Sqlite {
    fn all(&self, stmt: Stmt) -> LocalBoxFuture<'_, DbResult<Vec<Row>>> {
        let result = run(&self.0, &stmt);
        Box::pin(async move { result })
    }

    fn batch(&self, stmts: Vec<Stmt>) -> LocalBoxFuture<'_, DbResult<Vec<Vec<Row>>>> {
        let conn = &self.0;
        let result = (|| {
            conn.execute_batch("BEGIN").map_err(|e| DbError::Other(e.to_string()))?;
            let results: DbResult<Vec<Vec<Row>>> = stmts.iter().map(|s| run(conn, s)).collect();
            let end = if results.is_ok() { "COMMIT" } else { "ROLLBACK" };
            conn.execute_batch(end).map_err(|e| DbError::Other(e.to_string()))?;
            results
        })();
        Box::pin(async move { result })
    }
}

/// The limiter's host twin: the same sliding-window logs, in a map, on the tests' clock; `trips` counts
/// the calls that reached it.
#[derive(Clone, Default)]
pub struct MemoryLimiter(Rc<RefCell<HashMap<String, Window>>>, pub Rc<Cell<u32>>);

impl Limiter for MemoryLimiter {
    fn hit(
        &self,
        bucket: String,
        limit: u32,
        period_ms: i64,
        now_ms: i64,
    ) -> LocalBoxFuture<'_, Result<Decision, String>> {
        let d = self.0.borrow_mut().entry(bucket).or_default().hit(now_ms, limit, period_ms).decision;
        self.1.set(self.1.get() + 1);
        Box::pin(async move { Ok(d) })
    }
}

/// One session object's SQLite, as the Durable Object's storage is.
pub struct ObjectDb(pub rusqlite::Connection);

impl LocalSql for ObjectDb {
    fn exec(&self, sql: &str, params: &[Param]) -> Result<Vec<Row>, String> {
        exec(&self.0, sql, params).map_err(|e| e.to_string())
    }
}

/// One session object: its SQLite, its alarm and its memory.
pub struct HostObject {
    db: ObjectDb,
    alarm: Cell<Option<i64>>,
    wakeups: Wakeups,
}

/// The host's stand-in for the `Session` objects: one [`HostObject`] per session, run by the object's own
/// code ([`SessionShell`]) over rusqlite and the tests' clock; alarms ring when the clock reaches them.
#[derive(Clone)]
pub struct HostSessions {
    objects: Rc<RefCell<HashMap<String, Rc<HostObject>>>>,
    db: Sqlite,
    limiter: MemoryLimiter,
    blobs: MemoryBlobs,
    pub net: ScriptedNet,
    config: Config,
    now: Rc<Cell<i64>>,
    /// What happens elsewhere while a call waits on a key: the test's runner, answering its jobs.
    pub on_wait: Rc<RefCell<Option<WaitHook>>>,
    /// The workspace feeds, shared by the app and the sessions.
    pub feeds: MemoryFeeds,
    /// While set, objects commit their state but their D1 index writes fail (as if they died before
    /// them): the index misses what changed until an activation after it is cleared.
    pub crash_before_index: Rc<Cell<bool>>,
    /// For each time a step woke the session's readers: the D1 round trips that step had made by then.
    pub woken_after_trips: Rc<RefCell<Vec<u32>>>,
    /// The meter of the request calling the objects: its trace goes with each call.
    pub caller_meter: Option<Rc<agentsky::cx::Meter>>,
    /// The app's finished calls not yet counted in D1 (the Worker keeps one per isolate).
    pub pending_calls: Rc<agentsky::rules::metrics::PendingCalls>,
    /// What the objects enqueued (a request's Web Push message): kept for the test to deliver.
    pub queue: MemoryQueue,
    /// Hosted sandboxes, recorded: shared by the app and the sessions.
    pub sandboxes: RecordingSandboxes,
}

/// Runs while a call waits on a key (given the key), with the app to send requests to.
pub type WaitHook = Rc<dyn Fn(HostSessions, String) -> LocalBoxFuture<'static, ()>>;

impl HostSessions {
    /// Moves the tests' clock (from inside a wait hook).
    pub fn advance(&self, ms: i64) {
        self.now.set(self.now.get() + ms);
    }

    /// Answers an HTTP request as the app does, from inside another one (a wait hook).
    pub async fn handle(&self, req: HttpRequest) -> HttpResponse {
        let meta = RequestMeta { now_ms: self.now.get(), request_id: "req_hook".into() };
        app::handle(&self.env(), req, meta).await
    }

    fn object(&self, session_id: &str) -> Rc<HostObject> {
        self.objects
            .borrow_mut()
            .entry(session_id.to_owned())
            .or_insert_with(|| {
                Rc::new(HostObject {
                    db: ObjectDb(rusqlite::Connection::open_in_memory().unwrap()),
                    alarm: Cell::new(None),
                    wakeups: Wakeups::default(),
                })
            })
            .clone()
    }

    /// The object's code over `object`.
    fn shell<'a>(&'a self, object: &'a HostObject) -> SessionShell<'a, HostPlatform<'a>> {
        SessionShell { platform: HostPlatform { sessions: self, object }, wakeups: &object.wakeups }
    }

    /// The platform as a session's object sees it.
    pub fn env(&self) -> Env {
        Env {
            db: Counted::new(Box::new(self.db.clone())),
            limiter: Box::new(self.limiter.clone()),
            sessions: Box::new(self.clone()),
            blobs: Box::new(self.blobs.clone()),
            queue: Box::new(self.queue.clone()),
            feeds: Box::new(self.feeds.clone()),
            clock: Box::new(HostClock(self.now.clone())),
            assets: Box::new(BuiltAssets),
            net: Box::new(self.net.clone()),
            sandboxes: Box::new(self.sandboxes.clone()),
            config: self.config.clone(),
            meter: Default::default(),
            pending_calls: self.pending_calls.clone(),
        }
    }

    /// Rings the session's alarm each time it is due by `until`, moving the clock to its time.
    pub fn run_until(&self, session_id: &str, until: i64) {
        futures::executor::block_on(self.alarms_until(session_id, until))
    }

    async fn alarms_until(&self, session_id: &str, until: i64) {
        let object = self.object(session_id);
        while let Some(at) = object.alarm.get().filter(|at| *at <= until) {
            self.now.set(self.now.get().max(at));
            // As the platform does, the alarm is cleared as it rings; the step may set the next one.
            object.alarm.set(None);
            self.shell(&object).alarm().await.unwrap();
        }
    }

    /// Cancels a session's running turn in its object alone, as a cancel landing while a step runs.
    pub fn cancel_in_object(&self, session_id: &str) {
        let obj = self.object(session_id);
        Core::open(&obj.db).unwrap().cancel_turn(None, self.now.get()).unwrap();
    }

    pub fn session_ids(&self) -> Vec<String> {
        self.objects.borrow().keys().cloned().collect()
    }
}

impl Sessions for HostSessions {
    fn call(&self, session_id: &str, call: SessionCall) -> LocalBoxFuture<'_, Result<Value, String>> {
        let session_id = session_id.to_owned();
        Box::pin(async move {
            match &call {
                // Waiting lets time pass: the alarms due within the wait ring first.
                SessionCall::Read(c) => self.alarms_until(&session_id, self.now.get() + c.wait_ms).await,
                // What happens elsewhere meanwhile (the test's runner answering) happens first.
                SessionCall::Wait(c) => {
                    let hook = self.on_wait.borrow().clone();
                    if let Some(hook) = hook {
                        hook(self.clone(), c.key.clone()).await;
                    }
                }
                _ => {}
            }
            // As the Worker's object client sends it.
            let traceparent = match call {
                SessionCall::Init(_) | SessionCall::Send(_) => {
                    self.caller_meter.as_ref().and_then(|m| m.child_traceparent())
                }
                _ => None,
            };
            let object = self.object(&session_id);
            let answer = self.shell(&object).call(call, traceparent.as_deref()).await;
            serde_json::to_value(answer).map_err(|e| e.to_string())
        })
    }
}

/// A session object's platform in the host: rusqlite, the tests' clock, and the app's D1 and feeds.
pub struct HostPlatform<'a> {
    sessions: &'a HostSessions,
    object: &'a HostObject,
}

fn ready<T: 'static>(v: T) -> LocalBoxFuture<'static, T> {
    Box::pin(std::future::ready(v))
}

impl ObjectPlatform for HostPlatform<'_> {
    type Sql = ObjectDb;

    fn sql(&self) -> &ObjectDb {
        &self.object.db
    }

    fn now_ms(&self) -> i64 {
        self.sessions.now.get()
    }

    /// The tests' clock moves only when they move it: a wait nothing wakes runs out at once.
    fn sleep(&self, _ms: i64) -> LocalBoxFuture<'static, ()> {
        ready(())
    }

    fn yield_now(&self) -> LocalBoxFuture<'static, ()> {
        ready(())
    }

    fn get_alarm(&self) -> LocalBoxFuture<'_, Result<Option<i64>, String>> {
        ready(Ok(self.object.alarm.get()))
    }

    fn set_alarm(&self, at_ms: i64) -> LocalBoxFuture<'_, Result<(), String>> {
        self.object.alarm.set(Some(at_ms));
        ready(Ok(()))
    }

    fn delete_alarm(&self) -> LocalBoxFuture<'_, Result<(), String>> {
        self.object.alarm.set(None);
        ready(Ok(()))
    }

    fn delete_all(&self) -> LocalBoxFuture<'_, Result<(), String>> {
        let conn = &self.object.db.0;
        let tables = exec(conn, "SELECT name FROM sqlite_master WHERE type = 'table'", &[]);
        let dropped = tables.map_err(|e| e.to_string()).and_then(|rows| {
            rows.iter()
                .filter_map(|r| r["name"].as_str())
                .try_for_each(|name| conn.execute_batch(&format!("DROP TABLE \"{name}\"")).map_err(|e| e.to_string()))
        });
        ready(dropped)
    }

    fn db(&self) -> Result<Box<dyn Sql>, String> {
        if self.sessions.crash_before_index.get() {
            return Ok(Box::new(Down));
        }
        Ok(Box::new(self.sessions.db.clone()))
    }

    fn feeds(&self) -> Result<Box<dyn Feeds>, String> {
        Ok(Box::new(self.sessions.feeds.clone()))
    }

    /// Traced, counted and logged as the object's steps are ([`agentsky::objects::observe`]).
    fn step_env(&self) -> Result<(Env, Box<dyn Net>), String> {
        let env = self.sessions.env();
        let clock = self.sessions.now.clone();
        let net = agentsky::cx::meter::ObservedNet {
            inner: self.sessions.net.clone(),
            meter: env.meter.clone(),
            now_ms: Box::new(move || clock.get()),
        };
        Ok((env, Box::new(net)))
    }

    fn step_woke(&self, env: &Env) {
        self.sessions.woken_after_trips.borrow_mut().push(env.db.calls());
    }
}

/// D1 while an object is crashing: nothing it writes there lands.
struct Down;

impl Sql for Down {
    fn all(&self, _: Stmt) -> LocalBoxFuture<'_, DbResult<Vec<Row>>> {
        ready(Err(DbError::Other("the object crashed before writing to D1".into())))
    }

    fn batch(&self, _: Vec<Stmt>) -> LocalBoxFuture<'_, DbResult<Vec<Vec<Row>>>> {
        ready(Err(DbError::Other("the object crashed before writing to D1".into())))
    }
}

type Handler = Rc<dyn Fn(&Outbound) -> HttpResponse>;

/// How much of an answer's body [`ScriptedNet`] hands over at a time, as a network delivers it in chunks.
pub const NET_CHUNK_BYTES: usize = 4096;

/// Credits a workspace's wallet with the admin token `adm` (the app's `admin_token`).
pub fn credit(app: &TestApp, slug: &str, cents: i64) {
    let body = Some(json!({"amount_cents": cents}));
    let r = app.request("POST", &format!("/v1/workspaces/{slug}/credit"), Some("adm"), body);
    assert_eq!(r.status, 200, "{:?}", r.json_body());
}

/// The wallet of `who`'s workspace.
pub fn balance(app: &TestApp, who: &Account) -> i64 {
    app.ok(&who.key, "get_usage", json!({}))["balance_cents"].as_i64().unwrap()
}

/// A request of the runner face (`/v1/runner/*`) with a runner token.
pub fn runner_request(token: &str, method: &str, path: &str, body: Value) -> HttpRequest {
    let (path, query) = path.split_once('?').unwrap_or((path, ""));
    HttpRequest {
        method: method.into(),
        path: path.into(),
        query: query.into(),
        headers: vec![
            ("host".into(), "127.0.0.1:8787".into()),
            ("authorization".into(), format!("Bearer {token}")),
            ("content-type".into(), "application/json".into()),
        ],
        body: serde_json::to_vec(&body).unwrap(),
        ..Default::default()
    }
}

/// The network's host twin: every POST goes to the test's handler (a scripted model or MCP server).
#[derive(Clone, Default)]
pub struct ScriptedNet {
    handler: Rc<RefCell<Option<Handler>>>,
    pub requests: Rc<RefCell<Vec<Outbound>>>,
    /// Bytes of GET answers' bodies read so far.
    pub taken: Rc<Cell<usize>>,
    /// GETs never answer (a server that accepts the connection and says nothing).
    hang: Rc<Cell<bool>>,
}

impl ScriptedNet {
    pub fn answer(&self, f: impl Fn(&Outbound) -> HttpResponse + 'static) {
        self.hang.set(false);
        *self.handler.borrow_mut() = Some(Rc::new(f));
    }

    /// From now on GETs hang until the caller gives up.
    pub fn hang(&self) {
        self.hang.set(true);
    }
}

impl Net for ScriptedNet {
    fn post(&self, req: Outbound) -> LocalBoxFuture<'_, Result<HttpResponse, String>> {
        let handler = self.handler.borrow().clone();
        self.requests.borrow_mut().push(req.clone());
        Box::pin(async move {
            match handler {
                Some(h) => Ok(h(&req)),
                None => Err("no network in this test".to_owned()),
            }
        })
    }
    /// A GET reaches the same handler, with an empty body. Its answer's body is taken as the Worker takes
    /// it, a chunk at a time, and no more once past `max_bytes` ([`Net::get`]).
    fn get(&self, req: Outbound, max_bytes: usize) -> LocalBoxFuture<'_, Result<HttpResponse, String>> {
        if self.hang.get() {
            self.requests.borrow_mut().push(req);
            return Box::pin(futures::future::pending());
        }
        let answer = self.post(Outbound { body: vec![], ..req });
        Box::pin(async move {
            let mut resp = answer.await?;
            let mut body = Vec::new();
            for chunk in resp.body.chunks(NET_CHUNK_BYTES) {
                self.taken.set(self.taken.get() + chunk.len());
                body.extend_from_slice(chunk);
                if body.len() > max_bytes {
                    body.truncate(max_bytes + 1);
                    break;
                }
            }
            resp.body = body;
            Ok(resp)
        })
    }
}

/// The queue's host twin: messages wait until the test delivers them.
#[derive(Clone, Default)]
pub struct MemoryQueue(pub Rc<RefCell<Vec<Value>>>);

impl Queue for MemoryQueue {
    fn send(&self, body: Value) -> LocalBoxFuture<'_, Result<(), String>> {
        self.0.borrow_mut().push(body);
        Box::pin(async { Ok(()) })
    }
}

/// Hosted sandboxes' host twin: records every boot and stop; available unless a test says why not. A
/// booted sandbox runs until it is stopped or a test puts it to sleep ([`Self::sleep`]).
#[derive(Clone, Default)]
pub struct RecordingSandboxes {
    pub boots: Rc<RefCell<Vec<SandboxBoot>>>,
    pub stops: Rc<RefCell<Vec<String>>>,
    /// The sessions whose sandbox runs.
    pub running: Rc<RefCell<std::collections::BTreeSet<String>>>,
    /// `Some(why)`: this deployment runs no sandboxes.
    pub unavailable: Rc<RefCell<Option<String>>>,
    /// `Some(why)`: boots fail (the container runtime refused them).
    pub failing: Rc<RefCell<Option<String>>>,
}

impl RecordingSandboxes {
    /// The session's sandbox went to sleep (its runner found no work for a while).
    pub fn sleep(&self, session_id: &str) {
        self.running.borrow_mut().remove(session_id);
    }

    /// Every boot from now on fails, saying `why`.
    pub fn fail_boots(&self, why: &str) {
        *self.failing.borrow_mut() = Some(why.to_owned());
    }
}

impl Sandboxes for RecordingSandboxes {
    fn available(&self) -> Result<(), String> {
        self.unavailable.borrow().clone().map_or(Ok(()), Err)
    }
    fn running(&self, session_id: &str) -> LocalBoxFuture<'_, Result<bool, String>> {
        ready(Ok(self.running.borrow().contains(session_id)))
    }
    fn boot(&self, boot: SandboxBoot) -> LocalBoxFuture<'_, Result<(), String>> {
        let answer = self.available().and_then(|()| self.failing.borrow().clone().map_or(Ok(()), Err));
        if answer.is_ok() {
            self.running.borrow_mut().insert(boot.session_id.clone());
            self.boots.borrow_mut().push(boot);
        }
        ready(answer)
    }
    fn stop(&self, session_id: &str) -> LocalBoxFuture<'_, Result<(), String>> {
        self.running.borrow_mut().remove(session_id);
        self.stops.borrow_mut().push(session_id.to_owned());
        ready(Ok(()))
    }
}

/// The workspace feeds' host twin: a count per workspace. A wait on an unchanged version lets its time
/// pass on the tests' clock (nothing else can happen meanwhile) and answers.
#[derive(Clone, Default)]
pub struct MemoryFeeds {
    counts: Rc<RefCell<HashMap<String, u64>>>,
    now: Rc<Cell<i64>>,
}

impl MemoryFeeds {
    /// Every bump of every workspace so far.
    pub fn bumps(&self) -> u64 {
        self.counts.borrow().values().sum()
    }

    pub fn version(&self, workspace_id: &str) -> String {
        format!("host.{}", self.counts.borrow().get(workspace_id).copied().unwrap_or(0))
    }
}

impl Feeds for MemoryFeeds {
    fn bump(&self, workspace_id: &str) -> LocalBoxFuture<'_, Result<(), String>> {
        *self.counts.borrow_mut().entry(workspace_id.to_owned()).or_default() += 1;
        Box::pin(async { Ok(()) })
    }
    fn wait(&self, workspace_id: &str, seen: &str, wait_ms: i64) -> LocalBoxFuture<'_, Result<String, String>> {
        let v = self.version(workspace_id);
        if v == seen {
            self.now.set(self.now.get() + wait_ms.max(0));
        }
        Box::pin(async move { Ok(v) })
    }
}

/// R2's host twin.
#[derive(Clone, Default)]
pub struct MemoryBlobs(pub Rc<RefCell<HashMap<String, Vec<u8>>>>);

impl Blobs for MemoryBlobs {
    fn put(&self, key: String, bytes: Vec<u8>) -> LocalBoxFuture<'_, Result<(), String>> {
        self.0.borrow_mut().insert(key, bytes);
        Box::pin(async { Ok(()) })
    }
    fn get(&self, key: String) -> LocalBoxFuture<'_, Result<Option<Vec<u8>>, String>> {
        let found = self.0.borrow().get(&key).cloned();
        Box::pin(async move { Ok(found) })
    }
    fn list(&self, prefix: String, cursor: Option<String>) -> LocalBoxFuture<'_, Result<BlobPage, String>> {
        let mut keys: Vec<String> = self
            .0
            .borrow()
            .keys()
            .filter(|k| k.starts_with(&prefix) && cursor.as_ref().is_none_or(|c| *k > c))
            .cloned()
            .collect();
        keys.sort();
        let more = keys.len() > 1000;
        keys.truncate(1000);
        let next = more.then(|| keys.last().cloned()).flatten();
        Box::pin(async move { Ok((keys, next)) })
    }
    fn delete(&self, keys: Vec<String>) -> LocalBoxFuture<'_, Result<(), String>> {
        for k in keys {
            self.0.borrow_mut().remove(&k);
        }
        Box::pin(async { Ok(()) })
    }
}

/// The test's clock: sleeping moves it.
#[derive(Clone)]
pub struct HostClock(pub Rc<Cell<i64>>);

impl Clock for HostClock {
    fn now_ms(&self) -> i64 {
        self.0.get()
    }
    fn sleep(&self, ms: i64) -> LocalBoxFuture<'_, ()> {
        self.0.set(self.0.get() + ms);
        Box::pin(async {})
    }
}

/// [`HostClock`] for work whose network answers slowly: its sleeps never end, so no timeout cuts a call
/// the test's network holds for a few polls.
pub struct PatientClock(pub Rc<Cell<i64>>);

impl Clock for PatientClock {
    fn now_ms(&self) -> i64 {
        self.0.get()
    }
    fn sleep(&self, _ms: i64) -> LocalBoxFuture<'_, ()> {
        Box::pin(futures::future::pending())
    }
}

/// Applies every file of `migrations/` in name order, as `wrangler d1 migrations apply` does.
pub fn migrated() -> rusqlite::Connection {
    let conn = rusqlite::Connection::open_in_memory().unwrap();
    conn.execute_batch("PRAGMA foreign_keys = ON").unwrap();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/migrations");
    let mut files: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert!(!files.is_empty());
    for f in files {
        conn.execute_batch(&std::fs::read_to_string(&f).unwrap()).unwrap_or_else(|e| panic!("{f:?}: {e}"));
    }
    conn
}

pub struct TestApp {
    pub db: Sqlite,
    pub limiter: MemoryLimiter,
    pub sessions: HostSessions,
    pub blobs: MemoryBlobs,
    pub queue: MemoryQueue,
    pub config: Config,
    pub now_ms: Rc<Cell<i64>>,
    /// D1 round trips of the last request.
    pub last_queries: Cell<u32>,
}

/// A signed-up account: its key and personal workspace slug.
pub struct Account {
    pub key: String,
    pub slug: String,
    pub email: String,
}

impl TestApp {
    pub fn new() -> Self {
        Self::with_config(Self::config())
    }

    /// What [`Self::new`] runs with (open sign-up, 600 calls a minute): tests change a field or two of it.
    pub fn config() -> Config {
        Config { open_signup: true, rate_limit_per_min: 600, ..Config::default() }
    }

    /// With `SECRETS_KEY` set: workspace secrets and connector credentials can be sealed.
    pub fn with_secrets() -> Self {
        Self::with_config(Config { secrets_key: Some("test-master-key".into()), ..TestApp::config() })
    }

    pub fn with_config(config: Config) -> Self {
        let db = Sqlite(Rc::new(migrated()));
        let now_ms = Rc::new(Cell::new(1_780_000_000_000));
        let blobs = MemoryBlobs::default();
        let limiter = MemoryLimiter::default();
        let sessions = HostSessions {
            objects: Rc::default(),
            db: db.clone(),
            limiter: limiter.clone(),
            blobs: blobs.clone(),
            net: ScriptedNet::default(),
            config: config.clone(),
            now: now_ms.clone(),
            on_wait: Rc::default(),
            feeds: MemoryFeeds { counts: Rc::default(), now: now_ms.clone() },
            crash_before_index: Rc::default(),
            woken_after_trips: Rc::default(),
            caller_meter: None,
            pending_calls: Rc::default(),
            queue: MemoryQueue::default(),
            sandboxes: RecordingSandboxes::default(),
        };
        Self { db, limiter, sessions, blobs, queue: MemoryQueue::default(), config, now_ms, last_queries: Cell::new(0) }
    }

    fn env(&self) -> Env {
        let meter = Rc::new(agentsky::cx::Meter::default());
        Env {
            db: Counted::new(Box::new(self.db.clone())),
            limiter: Box::new(self.limiter.clone()),
            sessions: Box::new(HostSessions { caller_meter: Some(meter.clone()), ..self.sessions.clone() }),
            blobs: Box::new(self.blobs.clone()),
            queue: Box::new(self.queue.clone()),
            feeds: Box::new(self.sessions.feeds.clone()),
            clock: Box::new(HostClock(self.now_ms.clone())),
            assets: Box::new(BuiltAssets),
            net: Box::new(self.sessions.net.clone()),
            sandboxes: Box::new(self.sessions.sandboxes.clone()),
            config: self.config.clone(),
            meter,
            pending_calls: self.sessions.pending_calls.clone(),
        }
    }

    /// Runs `f` as background work runs (the cron trigger, the queue consumer): no caller.
    pub fn system<T>(&self, f: impl for<'a> FnOnce(&'a Cx<'a>) -> LocalBoxFuture<'a, T>) -> T {
        let env = self.env();
        let cx = Cx::system(&env, self.now_ms.get(), "req_system".into());
        futures::executor::block_on(f(&cx))
    }

    /// [`Self::system`] on a [`PatientClock`]: for background work over a network that answers slowly.
    pub fn system_patient<T>(&self, f: impl for<'a> FnOnce(&'a Cx<'a>) -> LocalBoxFuture<'a, T>) -> T {
        let env = Env { clock: Box::new(PatientClock(self.now_ms.clone())), ..self.env() };
        let cx = Cx::system(&env, self.now_ms.get(), "req_system".into());
        futures::executor::block_on(f(&cx))
    }

    /// The cron trigger, once.
    pub fn cron(&self) -> usize {
        self.system(|cx| Box::pin(agentsky::ops::routines::tick(cx))).unwrap()
    }

    /// Delivers every queued message to the consumer (once each); returns the fire ids delivered.
    pub fn deliver(&self) -> Vec<String> {
        let messages: Vec<Value> = self.queue.0.borrow_mut().drain(..).collect();
        let mut ids = Vec::new();
        for m in messages {
            let id = m["fire_id"].as_str().unwrap().to_owned();
            let fire = id.clone();
            self.system(move |cx| Box::pin(async move { agentsky::ops::routines::run_fire(cx, &fire).await })).unwrap();
            ids.push(id);
        }
        ids
    }

    pub fn send(&self, req: HttpRequest) -> HttpResponse {
        let env = self.env();
        let meta = RequestMeta { now_ms: self.now_ms.get(), request_id: "req_test".into() };
        let resp = futures::executor::block_on(app::handle(&env, req, meta));
        // The request's own round trips (its metrics row is written after the answer).
        self.last_queries.set(resp.header("x-d1-queries").and_then(|n| n.parse().ok()).unwrap_or(u32::MAX));
        resp
    }

    /// [`Self::send`] with the log line it wrote (`Null`: none, under `REQUEST_LOG=errors`).
    pub fn send_logged(&self, req: HttpRequest) -> (HttpResponse, Value) {
        let env = self.env();
        let meta = RequestMeta { now_ms: self.now_ms.get(), request_id: "req_test".into() };
        let (resp, done) = futures::executor::block_on(app::serve(&env, req, meta));
        let line = if done.logged(&env.config) { done.line.clone() } else { Value::Null };
        futures::executor::block_on(app::observe::finish(&env, done));
        (resp, line)
    }

    /// [`Self::send`] as the Worker runs it, answer and aftermath; with every D1 round trip both made.
    pub fn send_counted(&self, req: HttpRequest) -> (HttpResponse, u32) {
        let env = self.env();
        let meta = RequestMeta { now_ms: self.now_ms.get(), request_id: "req_test".into() };
        let (resp, done) = futures::executor::block_on(app::serve(&env, req, meta));
        futures::executor::block_on(app::observe::finish(&env, done));
        (resp, env.db.calls())
    }

    pub fn request(&self, method: &str, path_and_query: &str, key: Option<&str>, body: Option<Value>) -> HttpResponse {
        let (path, query) = path_and_query.split_once('?').unwrap_or((path_and_query, ""));
        let mut headers =
            vec![("host".to_owned(), "127.0.0.1:8787".to_owned()), ("content-type".into(), "application/json".into())];
        if let Some(k) = key {
            headers.push(("authorization".into(), format!("Bearer {k}")));
        }
        self.send(HttpRequest {
            stream: None,
            method: method.into(),
            path: path.into(),
            query: query.into(),
            headers,
            body: body.map(|b| serde_json::to_vec(&b).unwrap()).unwrap_or_default(),
            client_ip: "203.0.113.7".into(),
        })
    }

    /// Sends one JSON-RPC message to an MCP endpoint in the legacy era (as the TS SDK 1.x does after
    /// `initialize`), from `ip`, with `bearer` if given.
    pub fn mcp_post(&self, path: &str, bearer: Option<&str>, ip: &str, method: &str, params: Value) -> HttpResponse {
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
        let mut headers = vec![
            ("host".to_owned(), "127.0.0.1:8787".to_owned()),
            ("content-type".into(), "application/json".into()),
            ("accept".into(), "application/json, text/event-stream".into()),
            ("mcp-protocol-version".into(), "2025-06-18".into()),
        ];
        if let Some(b) = bearer {
            headers.push(("authorization".into(), format!("Bearer {b}")));
        }
        self.send(HttpRequest {
            method: "POST".into(),
            path: path.into(),
            headers,
            body: serde_json::to_vec(&body).unwrap(),
            client_ip: ip.into(),
            ..Default::default()
        })
    }

    /// Sends one JSON-RPC message to `/v1/mcp` with an API key.
    pub fn rpc(&self, key: &str, method: &str, params: Value) -> HttpResponse {
        self.mcp_post("/v1/mcp", Some(key), "203.0.113.7", method, params)
    }

    /// Calls a tool and returns its `CallToolResult`. A successful result must match the tool's published
    /// `outputSchema`, as SDK clients require.
    pub fn call(&self, key: &str, tool: &str, args: Value) -> Value {
        let resp = self.rpc(key, "tools/call", json!({ "name": tool, "arguments": args }));
        assert_eq!(resp.status, 200, "{}", String::from_utf8_lossy(&resp.body));
        let body = resp.json_body();
        assert!(body.get("error").is_none(), "JSON-RPC error: {body}");
        let result = body["result"].clone();
        // A success must carry structuredContent; any structuredContent, even on an error (the TS SDK 1.x
        // checks it there too), must match.
        let listed = agentsky::operator_mcp::operator_tools().iter().find(|t| t["name"] == tool);
        if let Some(schema) = listed.and_then(|t| t.get("outputSchema")) {
            if result["isError"] == false || result.get("structuredContent").is_some() {
                let errors = crate::schemas::validate(&result["structuredContent"], schema);
                assert!(errors.is_empty(), "{tool}'s result does not match its outputSchema: {errors:?}\n{result}");
            }
        }
        result
    }

    /// The API's error (`{code, message, retry_after_ms?}`) of a failed tool result, read from its text.
    pub fn tool_error(result: &Value) -> Value {
        assert_eq!(result["isError"], true, "not a tool error: {result}");
        let text = result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text: {result}"));
        serde_json::from_str::<Value>(text).unwrap_or_else(|e| panic!("{e}: {text}"))["error"].clone()
    }

    /// Calls a tool that must succeed and returns its structured result.
    pub fn ok(&self, key: &str, tool: &str, args: Value) -> Value {
        let result = self.call(key, tool, args);
        assert_eq!(result["isError"], false, "{tool} failed: {result}");
        result["structuredContent"].clone()
    }

    /// Calls a tool that must fail and returns its error code.
    pub fn err_code(&self, key: &str, tool: &str, args: Value) -> String {
        let result = self.call(key, tool, args);
        assert_eq!(result["isError"], true, "{tool} should have failed: {result}");
        Self::tool_error(&result)["code"].as_str().unwrap().to_owned()
    }

    pub fn signup(&self, name: &str, email: &str) -> Account {
        let resp = self.request("POST", "/v1/accounts", None, Some(json!({ "name": name, "email": email })));
        assert_eq!(resp.status, 201, "{}", String::from_utf8_lossy(&resp.body));
        let body = resp.json_body();
        Account {
            key: body["key"]["key"].as_str().unwrap().to_owned(),
            slug: body["workspace"]["slug"].as_str().unwrap().to_owned(),
            email: email.to_owned(),
        }
    }

    /// Creates an agent (`body` as `POST /v1/agents` takes it) with `key`; its id.
    pub fn create_agent(&self, key: &str, body: Value) -> String {
        let resp = self.request("POST", "/v1/agents", Some(key), Some(body));
        assert_eq!(resp.status, 201, "{}", String::from_utf8_lossy(&resp.body));
        resp.json_body()["agent_id"].as_str().unwrap().to_owned()
    }

    pub fn advance(&self, ms: i64) {
        self.now_ms.set(self.now_ms.get() + ms);
    }

    /// The calls counted on keys' per-minute buckets (D1's `rate_log`) so far; the test clock holds still,
    /// so none are pruned.
    pub fn key_units(&self) -> i64 {
        self.db.0.query_row("SELECT COUNT(*) FROM rate_log WHERE bucket LIKE 'key:%'", [], |r| r.get(0)).unwrap()
    }

    /// Lets every session's due steps run (the objects' alarms), without moving the clock.
    pub fn settle(&self) {
        for id in self.sessions.session_ids() {
            self.sessions.run_until(&id, self.now_ms.get());
        }
    }
}

impl TestApp {
    /// An echo agent named Dev and a session of it in a new task, its first turn (`message`) run: the
    /// agent's id and the session's (the task's) id.
    pub fn echo_session(&self, key: &str, message: &str) -> (String, String) {
        let agent_id = self.create_agent(key, json!({"name": "Dev", "harness": "echo", "model": "m"}));
        let s =
            self.ok(key, "start_session", json!({"agent_id": agent_id, "message": message, "idempotency_key": "s0"}));
        self.settle();
        (agent_id, s["session"]["session_id"].as_str().unwrap().to_owned())
    }

    /// A session token for the session server.
    pub fn session_token(&self, key: &str, session_id: &str) -> String {
        let r = self.request("POST", &format!("/v1/sessions/{session_id}/token"), Some(key), None);
        assert_eq!(r.status, 201, "{:?}", r.json_body());
        r.json_body()["token"].as_str().unwrap().to_owned()
    }

    /// Calls a session-server tool with a session token; the `CallToolResult`.
    pub fn agent_call(&self, token: &str, tool: &str, args: Value) -> Value {
        let params = json!({ "name": tool, "arguments": args });
        let resp = self.mcp_post("/v1/session/mcp", Some(token), "203.0.113.7", "tools/call", params);
        assert_eq!(resp.status, 200, "{}", String::from_utf8_lossy(&resp.body));
        resp.json_body()["result"].clone()
    }

    /// A session tool that must succeed: its JSON result.
    pub fn agent_ok(&self, token: &str, tool: &str, args: Value) -> Value {
        let r = self.agent_call(token, tool, args);
        assert_eq!(r["isError"], false, "{tool}: {r}");
        serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap()
    }

    /// A session tool that must fail: its error text (ending with its code).
    pub fn agent_err(&self, token: &str, tool: &str, args: Value) -> String {
        let r = self.agent_call(token, tool, args);
        assert_eq!(r["isError"], true, "{tool} should fail: {r}");
        r["content"][0]["text"].as_str().unwrap().to_owned()
    }
}

impl TestApp {
    /// Creates the shared workspace `slug`, owned by `owner`.
    pub fn shared_workspace(&self, owner: &Account, slug: &str) {
        let r = self.request("POST", "/v1/workspaces", Some(&owner.key), Some(json!({"name": slug, "slug": slug})));
        assert_eq!(r.status, 201, "{:?}", r.json_body());
    }

    /// Makes `who` a member of `slug` with `role`: an owner or admin (`by`) invites, `who` accepts.
    pub fn join(&self, by: &Account, slug: &str, who: &Account, role: &str) {
        let made = self.request(
            "POST",
            &format!("/v1/workspaces/{slug}/invitations"),
            Some(&by.key),
            Some(json!({"role": role})),
        );
        assert_eq!(made.status, 201, "{:?}", made.json_body());
        let token = made.json_body()["token"].clone();
        let r = self.request("POST", "/v1/invitations/accept", Some(&who.key), Some(json!({"token": token})));
        assert_eq!(r.status, 201, "{:?}", r.json_body());
    }
}

/// A request as a browser sends it to the console: its cookie, its `Origin`, a form body on POST.
pub fn browser_request(
    method: &str,
    path: &str,
    cookie: Option<&str>,
    body: &str,
    origin: Option<&str>,
) -> HttpRequest {
    let (path, query) = path.split_once('?').unwrap_or((path, ""));
    let mut headers = vec![("host".to_owned(), "127.0.0.1:8787".to_owned())];
    if let Some(c) = cookie {
        headers.push(("cookie".into(), c.to_owned()));
    }
    if let Some(o) = origin {
        headers.push(("origin".into(), o.to_owned()));
    }
    if method == "POST" {
        headers.push(("content-type".into(), "application/x-www-form-urlencoded".into()));
    }
    HttpRequest {
        stream: None,
        method: method.into(),
        path: path.into(),
        query: query.into(),
        headers,
        body: body.as_bytes().to_vec(),
        client_ip: "203.0.113.9".into(),
    }
}

/// A form body, encoded as browsers do.
pub fn form_body(fields: &[(&str, &str)]) -> String {
    form_urlencoded::Serializer::new(String::new()).extend_pairs(fields).finish()
}

/// An article's Markdown as the build deployed it among the static assets (`help/articles.json`).
pub fn article_markdown(slug: &str) -> String {
    let texts = std::fs::read_to_string(concat!(env!("OUT_DIR"), "/help/articles.json")).unwrap();
    let texts: serde_json::Value = serde_json::from_str(&texts).unwrap();
    texts[slug].as_str().unwrap_or_else(|| panic!("no article `{slug}`")).to_owned()
}

/// The static assets as the build made them: the Help Center's pages build.rs rendered into `OUT_DIR`
/// (`scripts/build.sh` deploys the same files beside the Worker).
struct BuiltAssets;

impl agentsky::cx::Assets for BuiltAssets {
    fn get(&self, path: String) -> LocalBoxFuture<'_, Result<Option<String>, String>> {
        Box::pin(async move { Ok(std::fs::read_to_string(format!("{}/{path}", env!("OUT_DIR"))).ok()) })
    }
}
