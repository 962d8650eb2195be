//! The `Limiter` Durable Object: one object per rate bucket (a key, an address, a session's bucket), so
//! counting is serialised without a database, and its client behind the core's [`Limiter`] trait.

use crate::cx::Limiter as LimiterPort;
use crate::rules::rate::{Bucket, Decision};
use futures::future::LocalBoxFuture;
use serde::{Deserialize, Serialize};
use std::cell::Cell;
use worker::{
    durable_object, DurableObject, Env, Method, ObjectNamespace, Request, RequestInit, Response, Result, State,
};

#[derive(Serialize, Deserialize)]
struct Hit {
    limit: u32,
    period_ms: i64,
    now_ms: i64,
    want: u32,
}

#[durable_object]
pub struct Limiter {
    state: State,
    /// The bucket once read from storage; storage stays the truth across evictions.
    bucket: Cell<Option<Bucket>>,
}

impl DurableObject for Limiter {
    fn new(state: State, _env: Env) -> Self {
        Self { state, bucket: Cell::new(None) }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        let hit: Hit = req.json().await?;
        let mut bucket = match self.bucket.get() {
            Some(b) => b,
            None => Bucket { tat_ms: self.state.storage().get::<i64>("tat").await?.unwrap_or(0) },
        };
        let decision = bucket.take(hit.now_ms, hit.limit, hit.period_ms, hit.want);
        self.bucket.set(Some(bucket));
        if matches!(decision, Decision::Allowed { .. }) {
            self.state.storage().put("tat", bucket.tat_ms).await?;
        }
        Response::from_json(&decision)
    }
}

/// The core's view of the limiter: one request to the bucket's object per hit.
pub struct Client(pub ObjectNamespace);

impl LimiterPort for Client {
    fn take(
        &self,
        bucket: String,
        limit: u32,
        period_ms: i64,
        now_ms: i64,
        want: u32,
    ) -> LocalBoxFuture<'_, std::result::Result<Decision, String>> {
        Box::pin(async move {
            let run = async {
                let stub = self.0.id_from_name(&bucket)?.get_stub()?;
                let body = serde_json::to_string(&Hit { limit, period_ms, now_ms, want })?;
                let mut init = RequestInit::new();
                init.with_method(Method::Post).with_body(Some(body.into()));
                let req = Request::new_with_init("https://limiter/hit", &init)?;
                stub.fetch_with_request(req).await?.json::<Decision>().await
            };
            run.await.map_err(|e: worker::Error| format!("limiter: {e}"))
        })
    }
}
