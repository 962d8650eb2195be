//! The core's view of the `Session` objects: one JSON [`SessionCall`] per request to the session's
//! object, answered with the JSON of its [`crate::session::Answer`], and the Worker's clock.

use crate::cx::{Clock, Sessions};
use crate::session::SessionCall;
use futures::future::LocalBoxFuture;
use std::time::Duration;
use worker::{Method, ObjectNamespace, Request, RequestInit};

/// The namespace, and the meter of the work calling it (each call is counted and carries its trace).
pub struct Client(pub ObjectNamespace, pub std::rc::Rc<crate::cx::Meter>);

impl Sessions for Client {
    fn call(&self, session_id: &str, call: SessionCall) -> LocalBoxFuture<'_, Result<serde_json::Value, String>> {
        let session_id = session_id.to_owned();
        Box::pin(async move {
            let run = async {
                let stub = self.0.id_from_name(&session_id)?.get_stub()?;
                let mut init = RequestInit::new();
                init.with_method(Method::Post).with_body(Some(serde_json::to_string(&call)?.into()));
                self.1.count_object_call();
                if let Some(tp) = self.1.child_traceparent() {
                    let headers = worker::Headers::new();
                    headers.set("traceparent", &tp)?;
                    init.with_headers(headers);
                }
                let req = Request::new_with_init("https://session/call", &init)?;
                stub.fetch_with_request(req).await?.json::<serde_json::Value>().await
            };
            run.await.map_err(|e: worker::Error| format!("session {session_id}: {e}"))
        })
    }
}

pub struct WorkerClock;

impl Clock for WorkerClock {
    fn now_ms(&self) -> i64 {
        super::now_ms()
    }
    fn sleep(&self, ms: i64) -> LocalBoxFuture<'_, ()> {
        Box::pin(worker::Delay::from(Duration::from_millis(ms.max(0) as u64)))
    }
}
