//! The core's view of the `Feed` objects ([`crate::objects::feed`]): one small JSON call each.

use crate::cx::Feeds;
use futures::future::LocalBoxFuture;
use serde::{Deserialize, Serialize};
use worker::{Method, ObjectNamespace, Request, RequestInit};

/// A call to a `Feed` object, as it is sent (the object, above the Worker's adapters, reads it from here).
#[derive(Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum FeedCall {
    Bump,
    Wait { seen: String, wait_ms: i64 },
}

pub struct Client(pub ObjectNamespace);

impl Client {
    async fn call(&self, workspace_id: &str, call: FeedCall) -> Result<String, String> {
        let run = async {
            let stub = self.0.id_from_name(workspace_id)?.get_stub()?;
            let mut init = RequestInit::new();
            init.with_method(Method::Post).with_body(Some(serde_json::to_string(&call)?.into()));
            let req = Request::new_with_init("https://feed/call", &init)?;
            stub.fetch_with_request(req).await?.json::<String>().await
        };
        run.await.map_err(|e: worker::Error| format!("feed {workspace_id}: {e}"))
    }
}

impl Feeds for Client {
    fn bump(&self, workspace_id: &str) -> LocalBoxFuture<'_, Result<(), String>> {
        let workspace_id = workspace_id.to_owned();
        Box::pin(async move { self.call(&workspace_id, FeedCall::Bump).await.map(drop) })
    }

    fn wait(&self, workspace_id: &str, seen: &str, wait_ms: i64) -> LocalBoxFuture<'_, Result<String, String>> {
        let (workspace_id, seen) = (workspace_id.to_owned(), seen.to_owned());
        Box::pin(async move { self.call(&workspace_id, FeedCall::Wait { seen, wait_ms }).await })
    }
}
