//! The `Session` object's logic, platform-free: what the object does around [`crate::session::Core`] that
//! a pure core cannot. It answers calls (a read that waits for an event, a wait on a key until its
//! signal), runs the harness step by step from alarms, re-arms an alarm a restart lost, and tells the D1
//! index and the workspace's feed what changed, retrying the index from an alarm. The Worker's object
//! ([`super::session`]) and the host tests' stand-in are thin adapters over [`ObjectPlatform`], so both
//! run this same code.
//!
//! Memory holds only wake-ups ([`Wakeups`]). A waiter re-reads the log after waking, so a lost wake-up
//! or a client that went away loses nothing; a turn whose alarm was lost is re-armed by the next read.

use super::observe;
use crate::cx::{Env, Feeds, Net};
use crate::session::keyed::Keyed;
use crate::session::{
    calls, Answer, Code, Core, LocalSql, Page, Refusal, SessionCall, SessionConfig, Transition, TurnState, FROM_END,
};
use crate::store::Sql;
use crate::turns::driver;
use crate::turns::ports::Ports;
use futures::channel::oneshot;
use futures::future::{select, Either, LocalBoxFuture};
use serde_json::Value;
use std::cell::RefCell;

/// How soon an alarm retries telling the D1 index of a status it has not heard of yet.
pub const INDEX_RETRY_MS: i64 = 5_000;

/// What an object runs on: its own SQLite and alarm, time, and the bindings it reaches out to.
pub trait ObjectPlatform {
    type Sql: LocalSql;

    /// The object's own SQLite.
    fn sql(&self) -> &Self::Sql;
    fn now_ms(&self) -> i64;
    /// Resolves after `ms`: how long a waiting call may wait.
    fn sleep(&self, ms: i64) -> LocalBoxFuture<'static, ()>;
    /// Lets readers just woken send their answers before the object goes on.
    fn yield_now(&self) -> LocalBoxFuture<'static, ()>;

    /// The object's one alarm: when it is set for, if it is.
    fn get_alarm(&self) -> LocalBoxFuture<'_, Result<Option<i64>, String>>;
    fn set_alarm(&self, at_ms: i64) -> LocalBoxFuture<'_, Result<(), String>>;
    fn delete_alarm(&self) -> LocalBoxFuture<'_, Result<(), String>>;
    /// Deletes the object's whole storage.
    fn delete_all(&self) -> LocalBoxFuture<'_, Result<(), String>>;

    /// D1, whose index of sessions the object keeps level with its own state.
    fn db(&self) -> Result<Box<dyn Sql>, String>;
    /// The workspaces' feeds, told when a session's status or spend changed.
    fn feeds(&self) -> Result<Box<dyn Feeds>, String>;
    /// The platform a step runs with, and the network its calls go out on (traced and counted).
    fn step_env(&self) -> Result<(Env, Box<dyn Net>), String>;
    /// A step is waking the session's readers (its events are stored); `env` is the step's.
    fn step_woke(&self, _env: &Env) {}
}

/// The object's memory: the calls waiting to be woken, and nothing else.
#[derive(Default)]
pub struct Wakeups {
    /// Reads waiting for the next event.
    readers: RefCell<Vec<oneshot::Sender<()>>>,
    /// Calls waiting for an answer to one request (`Wait { key }`), woken by `Signal { key }`.
    keyed: RefCell<Keyed<oneshot::Sender<()>>>,
}

/// One session object: its platform and its memory.
pub struct SessionShell<'a, P: ObjectPlatform> {
    pub platform: P,
    pub wakeups: &'a Wakeups,
}

fn internal(e: String) -> Refusal {
    Refusal::new(Code::Internal, e)
}

impl<P: ObjectPlatform> SessionShell<'_, P> {
    /// Answers one call, in the JSON of its reply. `traceparent` is the caller's trace, which a turn the
    /// call starts continues.
    pub async fn call(&self, call: SessionCall, traceparent: Option<&str>) -> Answer<Value> {
        let p = &self.platform;
        if matches!(call, SessionCall::Init(_) | SessionCall::Send(_)) {
            observe::remember(p.sql(), traceparent);
        }
        let core = Core::open(p.sql())?;
        if let Ok(db) = p.db() {
            self.converge(&core, db.as_ref(), p.now_ms()).await;
        }
        match &call {
            SessionCall::Read(c) => return Ok(driver::reply(c, self.read(&core, c).await?)),
            SessionCall::Wait(c) => return Ok(driver::reply(c, self.wait(c).await)),
            SessionCall::Signal(c) => {
                for tx in self.wakeups.keyed.borrow_mut().signal(&c.key, p.now_ms()) {
                    let _ = tx.send(());
                }
            }
            SessionCall::Purge(c) => {
                let _ = core.purge();
                self.wake();
                let _ = p.delete_alarm().await;
                let _ = p.delete_all().await;
                return Ok(driver::reply(c, ()));
            }
            _ => {}
        }
        let now = p.now_ms();
        let db = p.db().map_err(|e| internal(format!("no D1: {e}")))?;
        let (reply, t) = driver::serve(&core, db.as_ref(), &call, now).await?;
        if let (Some(t), Ok(Some(config))) = (t, core.config()) {
            self.effects(&core, &config, &t, now).await;
        }
        Ok(reply)
    }

    /// One harness step, when the alarm rings. An error leaves the alarm to be retried; the step is re-run
    /// from the state persisted before it, never from half of it.
    pub async fn alarm(&self) -> Result<(), Refusal> {
        let p = &self.platform;
        let core = Core::open(p.sql())?;
        let now = p.now_ms();
        let (env, net) = p.step_env().map_err(internal)?;
        let woke = || {
            p.step_woke(&env);
            self.wake_first()
        };
        let ports = Ports { env: &env, net: net.as_ref(), wake: &woke };
        self.converge(&core, &env.db, now).await;
        let step = core.turn().ok().map(|turn| observe::begin(p.sql(), &env, &turn, now));
        if let Some((config, t)) = driver::step(&core, &ports, now).await? {
            if let Some(step) = step {
                observe::end(p.sql(), &env, net.as_ref(), &config, &t, step).await;
            }
            self.effects(&core, &config, &t, now).await;
            // The search index of a turn that ended comes last: it may take seconds for a long turn, and
            // the D1 index above must not wait for it.
            crate::domain::index::index_turn(&env.db, &core, &config, &t, now).await;
        }
        Ok(())
    }

    /// Waits, up to `wait_ms`, until the page has something or the turn is over, then answers it.
    async fn read(&self, core: &Core<'_, P::Sql>, c: &calls::Read) -> Answer<Page> {
        let p = &self.platform;
        self.rearm(core).await;
        let message_id = c.message_id.as_deref();
        // "From the end" is the end as the call found it, not as each wake finds it.
        let after = if c.after == FROM_END { core.last_seq()? } else { c.after };
        let deadline = p.now_ms() + c.wait_ms;
        loop {
            let page = core.page(after, message_id, c.limit)?;
            let remaining = deadline - p.now_ms();
            if page.answers_wait(message_id.is_some()) || remaining <= 0 {
                return Ok(page);
            }
            let (tx, rx) = oneshot::channel();
            self.wakeups.readers.borrow_mut().push(tx);
            if matches!(select(rx, p.sleep(remaining)).await, Either::Right(_)) {
                // Timed out, its receiver dropped: readers that stopped waiting are forgotten (on an idle
                // session nothing drains them), then one last read answers whatever is there.
                self.wakeups.readers.borrow_mut().retain(|tx| !tx.is_canceled());
                return core.page(after, message_id, c.limit);
            }
        }
    }

    /// Holds a call until its key is signaled (or was, a moment ago) or `wait_ms` passes; whether it was.
    async fn wait(&self, c: &calls::Wait) -> bool {
        let (tx, rx) = oneshot::channel();
        if self.wakeups.keyed.borrow_mut().wait(&c.key, tx, self.platform.now_ms()).is_some() {
            return true;
        }
        let signaled = matches!(select(rx, self.platform.sleep(c.wait_ms.max(0))).await, Either::Left(_));
        if !signaled {
            // This call's receiver is gone now: forget it, and any other that gave up.
            self.wakeups.keyed.borrow_mut().forget(oneshot::Sender::is_canceled);
        }
        signaled
    }

    /// Wakes the waiting readers; whether there were any.
    fn wake(&self) -> bool {
        let mut readers = self.wakeups.readers.borrow_mut();
        let any = !readers.is_empty();
        for tx in readers.drain(..) {
            let _ = tx.send(());
        }
        any
    }

    /// Wakes the waiting readers, then yields to them, so their answers leave before the D1 writes that
    /// follow a transition: started first, those would hold the answers behind them. With no one woken
    /// there is nothing to yield to (a step's effects wake again after the step did).
    fn wake_first(&self) -> LocalBoxFuture<'static, ()> {
        if self.wake() {
            self.platform.yield_now()
        } else {
            Box::pin(std::future::ready(()))
        }
    }

    /// A running turn must have an alarm; after a restart it may not.
    async fn rearm(&self, core: &Core<'_, P::Sql>) {
        let Ok(turn) = core.turn() else { return };
        if turn.state != TurnState::Running {
            return;
        }
        if let Ok(None) = self.platform.get_alarm().await {
            let at = turn.next_at_ms.unwrap_or(0).max(self.platform.now_ms());
            let _ = self.platform.set_alarm(at).await;
        }
    }

    /// Copies a status the D1 index has yet to hear of (left by a crash between the object's write and
    /// the index's) before anything else: every activation makes the index converge.
    async fn converge(&self, core: &Core<'_, P::Sql>, db: &dyn Sql, now: i64) {
        if !matches!(core.index_due(), Ok(Some(_))) {
            return;
        }
        if let Ok(Some(config)) = core.config() {
            if let Err(e) = driver::publish(core, db, &config, now).await {
                crate::error::log_line(&format!("session {}: index write failed: {e}", config.session_id));
            }
        }
    }

    /// Acts on a transition: wake readers, arm or clear the alarm, write the index, move the feed.
    async fn effects(&self, core: &Core<'_, P::Sql>, config: &SessionConfig, t: &Transition, now: i64) {
        let p = &self.platform;
        if t.wake {
            self.wake_first().await;
        }
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
            if let Err(e) = p.set_alarm(at).await {
                crate::error::log_line(&format!("session {}: set_alarm failed: {e}", config.session_id));
            }
        }
        let db = match p.db() {
            Ok(db) => db,
            Err(e) => return crate::error::log_line(&format!("session {}: no D1: {e}", config.session_id)),
        };
        match driver::publish(core, db.as_ref(), config, now).await {
            Ok(()) if t.turn.state != TurnState::Running => {
                let _ = p.delete_alarm().await;
            }
            Ok(()) => {}
            Err(e) => crate::error::log_line(&format!("session {}: index write failed: {e}", config.session_id)),
        }
        if t.index_changed {
            // People watching the workspace (the console, `sky approvals`) see the new status at once.
            if let Ok(feeds) = p.feeds() {
                let _ = feeds.bump(&config.workspace_id).await;
            }
        }
    }
}
