//! `subscriptions/listen` (2026-07-28), served without server state: the subscriptions travel in the
//! request, and their notifications on that request's own response stream. The stream opens with
//! `notifications/subscriptions/acknowledged` (the honored subset of the filter), carries one
//! `notifications/resources/updated` per change of a subscribed resource, each with the listen's id in
//! `_meta["io.modelcontextprotocol/subscriptionId"]`, and ends when the host's time for one listen is up
//! with the spec's graceful close, an empty `SubscriptionsListenResult` naming the subscription; the
//! client listens again. Closing the stream ends the listen at once. List-changed notifications are
//! never honored: every list here is fixed (`listChanged: false`).

use super::features::{not_found, ReadFailure};
use super::progress::Sse;
use super::rpc::{Request, RpcError};
use super::{Era, ToolHost};
use crate::http::{HttpResponse, StreamOut};
use serde_json::{json, Value};

pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// Most resources one listen may watch.
pub const MAX_SUBSCRIPTIONS: usize = 32;

/// Checks the filter, acknowledges it and holds the stream until the host's watch ends. `complete` turns
/// the closing result into a modern result (`resultType`, server info).
pub async fn serve(
    host: &dyn ToolHost,
    request: &Request,
    out: Option<&StreamOut>,
    complete: impl Fn(Value) -> Value,
) -> Result<HttpResponse, RpcError> {
    let uris = filter(request)?;
    let features = host.features().filter(|f| f.can_watch());
    let mut honored_uris = Vec::new();
    if let Some(features) = features {
        for uri in uris {
            match features.watchable(&uri).await {
                Ok(true) => honored_uris.push(uri),
                Ok(false) => {}
                Err(ReadFailure::NotFound) => return Err(not_found(Era::Modern, &uri)),
                Err(ReadFailure::Refused(error)) => return Err(error),
            }
        }
    }
    let uris = honored_uris;
    let id = request.id.clone();
    let sse = Sse::new(out);
    let mut honored = json!({});
    if !uris.is_empty() {
        honored["resourceSubscriptions"] = json!(uris);
    }
    let ack = json!({
        "jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
        "params": {"notifications": honored, "_meta": {SUBSCRIPTION_ID: id}},
    });
    if sse.event(&ack) {
        if let Some(features) = features.filter(|_| !uris.is_empty()) {
            let updated = |uri: &str| {
                sse.event(&json!({
                    "jsonrpc": "2.0", "method": "notifications/resources/updated",
                    "params": {"uri": uri, "_meta": {SUBSCRIPTION_ID: id}},
                }))
            };
            features.watch(&uris, &updated).await;
        }
    }
    let result = complete(json!({"_meta": {SUBSCRIPTION_ID: id}}));
    Ok(sse.finish(&json!({"jsonrpc": "2.0", "id": id, "result": result})))
}

/// `params.notifications` (required, an object): the resource URIs it subscribes to, each once.
fn filter(request: &Request) -> Result<Vec<String>, RpcError> {
    let Some(notifications) = request.params.get("notifications").and_then(Value::as_object) else {
        return Err(RpcError::invalid_params(
            "Invalid params: subscriptions/listen needs params.notifications, an object",
        ));
    };
    let mut uris: Vec<String> = Vec::new();
    match notifications.get("resourceSubscriptions") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for item in items {
                let Some(uri) = item.as_str() else {
                    return Err(RpcError::invalid_params(
                        "Invalid params: notifications.resourceSubscriptions must be an array of URI strings",
                    ));
                };
                if !uris.iter().any(|u| u == uri) {
                    uris.push(uri.to_owned());
                }
            }
        }
        Some(_) => {
            return Err(RpcError::invalid_params(
                "Invalid params: notifications.resourceSubscriptions must be an array of URI strings",
            ))
        }
    }
    if uris.len() > MAX_SUBSCRIPTIONS {
        return Err(RpcError::invalid_params(format!(
            "Invalid params: notifications.resourceSubscriptions holds {} URIs; one listen watches at most {MAX_SUBSCRIPTIONS}",
            uris.len()
        )));
    }
    Ok(uris)
}
