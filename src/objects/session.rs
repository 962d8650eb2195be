//! The `Session` Durable Object: one per session. Its SQLite holds the event log, the turn and the
//! configuration ([`crate::session::Core`]); this shell adds what only an object can do: hold
//! `read_session` waiters in memory and wake them when an event lands, run the harness step by step from
//! alarms, and write status and spend back to the D1 index.
//!
//! Memory holds only wake-ups. A waiter re-reads the log after waking, so a lost wake-up or a client
//! that went away loses nothing; a turn whose alarm was lost (a restart) is re-armed by the next call.

use crate::cx::Feeds;
use crate::edge::{d1::D1, now_ms, DB, FEEDS};
use crate::session::keyed::Keyed;
use crate::session::{calls, Answer, Code, Core, LocalSql, Refusal, SessionCall, Transition, TurnState};
use crate::store::{Param, Row};
use crate::turns::driver;
use crate::turns::openai::Ports;
use futures::channel::oneshot;
use futures::future::{select, Either, LocalBoxFuture};
use serde_json::Value;
use std::cell::RefCell;
use std::pin::pin;
use std::time::Duration;
use worker::{durable_object, DurableObject, Env, Request, Response, Result, SqlStorage, SqlStorageValue, State};

/// How soon an alarm retries telling the D1 index of a status it has not heard of yet.
const INDEX_RETRY_MS: i64 = 5_000;

/// The object's SQLite as the session core's storage.
struct ObjectSql(SqlStorage);

impl LocalSql for ObjectSql {
    fn exec(&self, sql: &str, params: &[Param]) -> std::result::Result<Vec<Row>, String> {
        let values: Vec<SqlStorageValue> = params
            .iter()
            .map(|p| match p {
                Param::Null => SqlStorageValue::Null,
                Param::Int(i) => SqlStorageValue::Integer(*i),
                Param::Real(f) => SqlStorageValue::Float(*f),
                Param::Text(s) => SqlStorageValue::String(s.clone()),
            })
            .collect();
        let cursor = self.0.exec(sql, Some(values)).map_err(|e| e.to_string())?;
        cursor.to_array::<Row>().map_err(|e| e.to_string())
    }
}

#[durable_object]
pub struct Session {
    state: State,
    env: Env,
    waiters: RefCell<Vec<oneshot::Sender<()>>>,
    /// Calls waiting for an answer to one request (`Wait { key }`), woken by `Signal { key }`.
    keyed: RefCell<Keyed<oneshot::Sender<()>>>,
}

impl DurableObject for Session {
    fn new(state: State, env: Env) -> Self {
        Self { state, env, waiters: RefCell::new(Vec::new()), keyed: RefCell::default() }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        let call: SessionCall = req.json().await?;
        if matches!(call, SessionCall::Init(_) | SessionCall::Send(_)) {
            // The turn this call may start continues the caller's trace.
            let traceparent = req.headers().get("traceparent").ok().flatten();
            super::observe::remember(&ObjectSql(self.state.storage().sql()), traceparent.as_deref());
        }
        Response::from_json(&self.handle(call).await)
    }

    /// One harness step. An error makes the platform retry the alarm; the step is re-run from the state
    /// persisted before it, never from half of it.
    async fn alarm(&self) -> Result<Response> {
        let sql = ObjectSql(self.state.storage().sql());
        let core = Core::open(&sql).map_err(refusal)?;
        let now = now_ms();
        let env = crate::edge::core_env(&self.env)?;
        let net = crate::edge::net::observed(env.meter.clone());
        let ports = Ports { env: &env, net: &net, wake: &|| self.wake_first() };
        self.converge(&core, &env.db, now).await;
        let step = core.turn().ok().map(|turn| super::observe::begin(&sql, &env, &turn, now));
        if let Some((config, t)) = driver::step(&core, &ports, now).await.map_err(refusal)? {
            if let Some(step) = step {
                super::observe::end(&sql, &env, &net, &config, &t, step).await;
            }
            self.effects(&core, &config, &t, now).await;
            // The search index of a turn that ended comes last: it may take seconds for a long turn, and
            // the D1 index above must not wait for it.
            crate::domain::index::index_turn(&env.db, &core, &config, &t, now).await;
        }
        Response::ok("")
    }
}

fn refusal(r: Refusal) -> worker::Error {
    worker::Error::RustError(format!("{}: {}", r.code.as_str(), r.message))
}

impl Session {
    async fn handle(&self, call: SessionCall) -> Answer<Value> {
        let sql = ObjectSql(self.state.storage().sql());
        let core = Core::open(&sql)?;
        if let Ok(db) = self.env.d1(DB) {
            self.converge(&core, &D1(db), now_ms()).await;
        }
        if let SessionCall::Read(c @ calls::Read { after, message_id, limit, wait_ms }) = &call {
            let page = self.read(&core, *after, message_id.as_deref(), *limit, *wait_ms).await?;
            return Ok(driver::reply(c, page));
        }
        if let SessionCall::Wait(c @ calls::Wait { key, wait_ms }) = &call {
            let (tx, rx) = oneshot::channel();
            if self.keyed.borrow_mut().wait(key, tx, now_ms()).is_some() {
                return Ok(driver::reply(c, true));
            }
            let timer = worker::Delay::from(Duration::from_millis((*wait_ms).max(0) as u64));
            let signaled = matches!(select(rx, pin!(timer)).await, Either::Left(_));
            if !signaled {
                // This call's receiver is gone now: forget it, and any other that gave up.
                self.keyed.borrow_mut().forget(oneshot::Sender::is_canceled);
            }
            return Ok(driver::reply(c, signaled));
        }
        if let SessionCall::Signal(calls::Signal { key }) = &call {
            for tx in self.keyed.borrow_mut().signal(key, now_ms()) {
                let _ = tx.send(());
            }
        }
        let now = now_ms();
        if let SessionCall::Purge(c) = &call {
            let _ = core.purge();
            self.wake();
            let _ = self.state.storage().delete_alarm().await;
            let _ = self.state.storage().delete_all().await;
            return Ok(driver::reply(c, ()));
        }
        let db = self.env.d1(DB).map_err(|e| Refusal::new(Code::Internal, format!("no D1: {e}")))?;
        let (reply, t) = driver::serve(&core, &D1(db), &call, now).await?;
        if let (Some(t), Ok(Some(config))) = (t, core.config()) {
            self.effects(&core, &config, &t, now).await;
        }
        Ok(reply)
    }

    /// Waits, up to `wait_ms`, until the page has something or the turn is over, then answers it.
    async fn read(
        &self,
        core: &Core<'_, ObjectSql>,
        after: i64,
        message_id: Option<&str>,
        limit: u32,
        wait_ms: i64,
    ) -> std::result::Result<crate::session::Page, Refusal> {
        self.rearm(core).await;
        // "From the end" is the end as the call found it, not as each wake finds it.
        let after = if after == crate::session::FROM_END { core.last_seq()? } else { after };
        let deadline = now_ms() + wait_ms;
        loop {
            let page = core.page(after, message_id, limit)?;
            let remaining = deadline - now_ms();
            if page.answers_wait(message_id.is_some()) || remaining <= 0 {
                return Ok(page);
            }
            let (tx, rx) = oneshot::channel();
            self.waiters.borrow_mut().push(tx);
            let timer = worker::Delay::from(Duration::from_millis(remaining as u64));
            if matches!(select(rx, pin!(timer)).await, Either::Right(_)) {
                // Timed out, its receiver dropped: readers that stopped waiting are forgotten (on an idle
                // session nothing drains them), then one last read answers whatever is there.
                self.waiters.borrow_mut().retain(|tx| !tx.is_canceled());
                return core.page(after, message_id, limit);
            }
        }
    }

    /// Wakes the waiting readers; whether there were any.
    fn wake(&self) -> bool {
        let mut waiters = self.waiters.borrow_mut();
        let any = !waiters.is_empty();
        for tx in waiters.drain(..) {
            let _ = tx.send(());
        }
        any
    }

    /// Wakes the waiting readers, then yields to them (a zero timer), so their answers leave before the
    /// D1 writes that follow a transition: started first, those would hold the answers behind them. With
    /// no one woken there is nothing to yield to (a step's effects wake again after the step did).
    fn wake_first(&self) -> LocalBoxFuture<'static, ()> {
        if self.wake() {
            Box::pin(worker::Delay::from(Duration::ZERO))
        } else {
            Box::pin(std::future::ready(()))
        }
    }

    /// A running turn must have an alarm; after a restart it may not.
    async fn rearm(&self, core: &Core<'_, ObjectSql>) {
        let Ok(turn) = core.turn() else { return };
        if turn.state != TurnState::Running {
            return;
        }
        let storage = self.state.storage();
        if let Ok(None) = storage.get_alarm().await {
            let at = turn.next_at_ms.unwrap_or(0);
            let _ = storage.set_alarm((at - now_ms()).max(0)).await;
        }
    }

    /// Copies a status the D1 index has yet to hear of (left by a crash between the object's write and
    /// the index's) before anything else: every activation makes the index converge.
    async fn converge(&self, core: &Core<'_, ObjectSql>, db: &dyn crate::store::Sql, now: i64) {
        if !matches!(core.index_due(), Ok(Some(_))) {
            return;
        }
        if let Ok(Some(config)) = core.config() {
            if let Err(e) = driver::publish(core, db, &config, now).await {
                crate::error::log_line(&format!("session {}: index write failed: {e}", config.session_id));
            }
        }
    }

    /// Acts on a transition: wake readers, arm or clear the alarm, write the index.
    async fn effects(
        &self,
        core: &Core<'_, ObjectSql>,
        config: &crate::session::SessionConfig,
        t: &Transition,
        now: i64,
    ) {
        if t.wake {
            self.wake_first().await;
        }
        let storage = self.state.storage();
        // While the index has yet to hear of a turn that stopped, an alarm stands by to tell it: set with no
        // `.await` since the transition's writes, so it lands with them and survives a crash.
        let due = matches!(core.index_due(), Ok(Some(_)));
        let alarm = match (t.alarm_at_ms, t.turn.state) {
            (Some(at), TurnState::Running) => Some(at),
            (_, TurnState::Running) => None,
            _ if due => Some(now + INDEX_RETRY_MS),
            _ => None,
        };
        if let Some(at) = alarm {
            if let Err(e) = storage.set_alarm((at - now).max(0)).await {
                crate::error::log_line(&format!("session {}: set_alarm failed: {e}", config.session_id));
            }
        }
        let db = match self.env.d1(DB) {
            Ok(db) => D1(db),
            Err(e) => return crate::error::log_line(&format!("session {}: no D1: {e}", config.session_id)),
        };
        match driver::publish(core, &db, config, now).await {
            Ok(()) if t.turn.state != TurnState::Running => {
                let _ = storage.delete_alarm().await;
            }
            Ok(()) => {}
            Err(e) => crate::error::log_line(&format!("session {}: index write failed: {e}", config.session_id)),
        }
        if t.index_changed {
            // People watching the workspace (the console, `sky approvals`) see the new status at once.
            if let Ok(ns) = self.env.durable_object(FEEDS) {
                let _ = crate::edge::feeds::Client(ns).bump(&config.workspace_id).await;
            }
        }
    }
}
