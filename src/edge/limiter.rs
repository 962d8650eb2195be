//! The `Limiter` Durable Object: one object per rate bucket (a key, an address, a session's bucket), so
//! counting is serialised without a database, and its client behind the core's [`Limiter`] trait.
//!
//! The object keeps the bucket's sliding-window log ([`Window`]) in memory and every passed call's time
//! in its SQLite, written before the answer leaves (the platform's output gate), so an evicted object
//! reads back exactly what it decided. It counts on its own clock: every Worker's calls land on one
//! timeline, whatever their clocks say.

use crate::cx::Limiter as LimiterPort;
use crate::rules::rate::{Decision, Window};
use futures::future::LocalBoxFuture;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use worker::{
    durable_object, DurableObject, Env, Method, ObjectNamespace, Request, RequestInit, Response, Result, SqlStorage,
    SqlStorageValue, State,
};

#[derive(Serialize, Deserialize)]
struct Hit {
    limit: u32,
    period_ms: i64,
}

#[derive(Deserialize)]
struct Passed {
    at_ms: i64,
}

#[durable_object]
pub struct Limiter {
    state: State,
    /// The log once read from storage; storage stays the truth across evictions.
    window: RefCell<Option<Window>>,
}

impl DurableObject for Limiter {
    fn new(state: State, _env: Env) -> Self {
        Self { state, window: RefCell::new(None) }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        let hit: Hit = req.json().await?;
        let sql = self.state.storage().sql();
        let now = crate::edge::now_ms();
        let mut window = match self.window.borrow_mut().take() {
            Some(w) => w,
            None => load(&sql, now - hit.period_ms)?,
        };
        let outcome = window.hit(now, hit.limit, hit.period_ms);
        if outcome.forgotten > 0 {
            sql.exec("DELETE FROM hit WHERE at_ms <= ?", vec![(now - hit.period_ms).into()])?;
        }
        if let (Decision::Allowed { .. }, Some(at)) = (outcome.decision, window.times().last()) {
            sql.exec("INSERT INTO hit (at_ms) VALUES (?)", vec![at.into()])?;
        }
        *self.window.borrow_mut() = Some(window);
        Response::from_json(&outcome.decision)
    }
}

/// Reads the log back, dropping what fell out of the window.
fn load(sql: &SqlStorage, expired_ms: i64) -> Result<Window> {
    let none = Vec::<SqlStorageValue>::new;
    sql.exec("CREATE TABLE IF NOT EXISTS hit (at_ms INTEGER NOT NULL)", none())?;
    sql.exec("CREATE INDEX IF NOT EXISTS hit_at ON hit(at_ms)", none())?;
    sql.exec("DELETE FROM hit WHERE at_ms <= ?", vec![expired_ms.into()])?;
    let rows: Vec<Passed> = sql.exec("SELECT at_ms FROM hit", none())?.to_array()?;
    Ok(Window::from_times(rows.into_iter().map(|p| p.at_ms).collect()))
}

/// The core's view of the limiter: one request to the bucket's object per hit.
pub struct Client(pub ObjectNamespace);

impl LimiterPort for Client {
    fn hit(
        &self,
        bucket: String,
        limit: u32,
        period_ms: i64,
        _now_ms: i64,
    ) -> LocalBoxFuture<'_, std::result::Result<Decision, String>> {
        Box::pin(async move {
            let run = async {
                let stub = self.0.id_from_name(&bucket)?.get_stub()?;
                let body = serde_json::to_string(&Hit { limit, period_ms })?;
                let mut init = RequestInit::new();
                init.with_method(Method::Post).with_body(Some(body.into()));
                let req = Request::new_with_init("https://limiter/hit", &init)?;
                stub.fetch_with_request(req).await?.json::<Decision>().await
            };
            run.await.map_err(|e: worker::Error| format!("limiter: {e}"))
        })
    }
}
