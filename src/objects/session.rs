//! The `Session` Durable Object: one per session. Its SQLite holds the event log, the turn and the
//! configuration ([`crate::session::Core`]); what the object does around them (waiting reads and keyed
//! waits, alarm-driven steps, telling the D1 index) is [`super::session_shell`], which this adapter runs
//! on the Worker's types: the object's `State` (its SQLite and alarm), timers, and the D1 and feed
//! bindings.

use super::session_shell::{ObjectPlatform, SessionShell, Wakeups};
use crate::cx::{Feeds, Net};
use crate::edge::{d1::D1, now_ms, DB, FEEDS};
use crate::session::{LocalSql, Refusal, SessionCall};
use crate::store::{Param, Row, Sql};
use futures::future::LocalBoxFuture;
use std::time::Duration;
use worker::{durable_object, DurableObject, Env, Request, Response, Result, SqlStorage, SqlStorageValue, State};

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
    wakeups: Wakeups,
}

impl DurableObject for Session {
    fn new(state: State, env: Env) -> Self {
        Self { state, env, wakeups: Wakeups::default() }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        let call: SessionCall = req.json().await?;
        let traceparent = req.headers().get("traceparent").ok().flatten();
        Response::from_json(&self.shell().call(call, traceparent.as_deref()).await)
    }

    async fn alarm(&self) -> Result<Response> {
        self.shell().alarm().await.map_err(refusal)?;
        Response::ok("")
    }
}

fn refusal(r: Refusal) -> worker::Error {
    worker::Error::RustError(format!("{}: {}", r.code.as_str(), r.message))
}

impl Session {
    fn shell(&self) -> SessionShell<'_, WorkerObject<'_>> {
        let platform = WorkerObject { state: &self.state, env: &self.env, sql: ObjectSql(self.state.storage().sql()) };
        SessionShell { platform, wakeups: &self.wakeups }
    }
}

/// The Worker's side of a session object.
struct WorkerObject<'a> {
    state: &'a State,
    env: &'a Env,
    sql: ObjectSql,
}

fn delay(ms: i64) -> LocalBoxFuture<'static, ()> {
    Box::pin(worker::Delay::from(Duration::from_millis(ms.max(0) as u64)))
}

impl ObjectPlatform for WorkerObject<'_> {
    type Sql = ObjectSql;

    fn sql(&self) -> &ObjectSql {
        &self.sql
    }

    fn now_ms(&self) -> i64 {
        now_ms()
    }

    fn sleep(&self, ms: i64) -> LocalBoxFuture<'static, ()> {
        delay(ms)
    }

    /// A zero timer: the woken readers' tasks run first.
    fn yield_now(&self) -> LocalBoxFuture<'static, ()> {
        delay(0)
    }

    fn get_alarm(&self) -> LocalBoxFuture<'_, std::result::Result<Option<i64>, String>> {
        let storage = self.state.storage();
        Box::pin(async move { storage.get_alarm().await.map_err(|e| e.to_string()) })
    }

    fn set_alarm(&self, at_ms: i64) -> LocalBoxFuture<'_, std::result::Result<(), String>> {
        let storage = self.state.storage();
        let in_ms = (at_ms - now_ms()).max(0);
        Box::pin(async move { storage.set_alarm(in_ms).await.map_err(|e| e.to_string()) })
    }

    fn delete_alarm(&self) -> LocalBoxFuture<'_, std::result::Result<(), String>> {
        let storage = self.state.storage();
        Box::pin(async move { storage.delete_alarm().await.map_err(|e| e.to_string()) })
    }

    fn delete_all(&self) -> LocalBoxFuture<'_, std::result::Result<(), String>> {
        let storage = self.state.storage();
        Box::pin(async move { storage.delete_all().await.map_err(|e| e.to_string()) })
    }

    fn db(&self) -> std::result::Result<Box<dyn Sql>, String> {
        self.env.d1(DB).map(|db| Box::new(D1(db)) as Box<dyn Sql>).map_err(|e| e.to_string())
    }

    fn feeds(&self) -> std::result::Result<Box<dyn Feeds>, String> {
        let ns = self.env.durable_object(FEEDS).map_err(|e| e.to_string())?;
        Ok(Box::new(crate::edge::feeds::Client(ns)))
    }

    fn step_env(&self) -> std::result::Result<(crate::cx::Env, Box<dyn Net>), String> {
        let env = crate::edge::core_env(self.env).map_err(|e| e.to_string())?;
        let net = Box::new(crate::edge::net::observed(env.meter.clone()));
        Ok((env, net))
    }
}
