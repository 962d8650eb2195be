//! The session object's logic on a platform whose timers really wait, as the Worker's do (the host
//! stand-in's run out at once): a held call is answered by the signal it waits for, not by its timeout.

use crate::support::{ObjectDb, Sqlite};
use agentsky::cx::{Env, Feeds, Net};
use agentsky::objects::session_shell::{ObjectPlatform, SessionShell, Wakeups};
use agentsky::session::calls;
use agentsky::store::Sql;
use futures::future::{self, FutureExt, LocalBoxFuture};
use serde_json::json;
use std::rc::Rc;

/// An object whose timers never ring and that runs no steps.
struct Patient {
    sql: ObjectDb,
    db: Sqlite,
}

fn ready<T: 'static>(v: T) -> LocalBoxFuture<'static, T> {
    Box::pin(future::ready(v))
}

impl ObjectPlatform for Patient {
    type Sql = ObjectDb;
    fn sql(&self) -> &ObjectDb {
        &self.sql
    }
    fn now_ms(&self) -> i64 {
        1_000
    }
    fn sleep(&self, _ms: i64) -> LocalBoxFuture<'static, ()> {
        Box::pin(future::pending())
    }
    fn yield_now(&self) -> LocalBoxFuture<'static, ()> {
        ready(())
    }
    fn get_alarm(&self) -> LocalBoxFuture<'_, Result<Option<i64>, String>> {
        ready(Ok(None))
    }
    fn set_alarm(&self, _at_ms: i64) -> LocalBoxFuture<'_, Result<(), String>> {
        ready(Ok(()))
    }
    fn delete_alarm(&self) -> LocalBoxFuture<'_, Result<(), String>> {
        ready(Ok(()))
    }
    fn delete_all(&self) -> LocalBoxFuture<'_, Result<(), String>> {
        ready(Ok(()))
    }
    fn db(&self) -> Result<Box<dyn Sql>, String> {
        Ok(Box::new(self.db.clone()))
    }
    fn feeds(&self) -> Result<Box<dyn Feeds>, String> {
        Err("no feeds here".into())
    }
    fn step_env(&self) -> Result<(Env, Box<dyn Net>), String> {
        Err("no steps here".into())
    }
}

fn patient() -> Patient {
    let open = || rusqlite::Connection::open_in_memory().unwrap();
    Patient { sql: ObjectDb(open()), db: Sqlite(Rc::new(open())) }
}

#[test]
fn a_held_wait_is_answered_by_its_signal() {
    let wakeups = Wakeups::default();
    let shell = SessionShell { platform: patient(), wakeups: &wakeups };
    let wait = shell.call(calls::Wait { key: "req_1".into(), wait_ms: 60_000 }.into(), None);
    let signal = shell.call(calls::Signal { key: "req_1".into() }.into(), None);
    let mut both = Box::pin(future::join(wait, signal));
    // The first poll holds the wait and sends the signal; the next finds the wait woken.
    assert!(both.as_mut().now_or_never().is_none());
    let (waited, signaled) = both.as_mut().now_or_never().expect("the signal ends the wait");
    assert_eq!(waited, Ok(json!(true)));
    assert_eq!(signaled, Ok(json!(null)));
}

#[test]
fn a_signal_before_its_wait_answers_the_wait_at_once_and_only_that_key() {
    let wakeups = Wakeups::default();
    let shell = SessionShell { platform: patient(), wakeups: &wakeups };
    shell.call(calls::Signal { key: "req_1".into() }.into(), None).now_or_never().unwrap().unwrap();
    let wait = |key: &str| shell.call(calls::Wait { key: key.into(), wait_ms: 60_000 }.into(), None).now_or_never();
    assert_eq!(wait("req_1"), Some(Ok(json!(true))));
    assert_eq!(wait("req_2"), None, "nothing signaled `req_2`: it waits");
    assert_eq!(wait("req_1"), None, "a signal answers one wait");
}

#[test]
fn a_waiting_read_holds_until_its_time_and_a_read_past_the_end_is_refused() {
    let wakeups = Wakeups::default();
    let shell = SessionShell { platform: patient(), wakeups: &wakeups };
    let read = |after: i64, wait_ms: i64| {
        shell.call(calls::Read { after, message_id: None, limit: 10, wait_ms }.into(), None).now_or_never()
    };
    assert_eq!(read(0, 30_000), None, "nothing in the log: the read waits");
    let page = read(0, 0).unwrap().unwrap();
    assert_eq!((page["events"].as_array().map(Vec::len), page["status"].as_str()), (Some(0), Some("provisioning")));
    assert_eq!(read(5, 0).unwrap().unwrap_err().code.as_str(), "invalid_params");
}
