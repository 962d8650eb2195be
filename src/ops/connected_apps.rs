//! Connected apps: the MCP clients a person let in through OAuth sign-in ([`crate::oauth`]), listed and
//! disconnected like keys. Disconnecting revokes the grant and every token it issued at once.

use crate::cx::Cx;
use crate::error::ApiError;
use crate::rules::ids::AppGrantId;
use crate::store;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListConnectedApps {}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ConnectedApps {
    pub apps: Vec<store::oauth::ConnectedApp>,
}

/// GET /v1/connected-apps
pub async fn list(cx: &Cx<'_>, _: ListConnectedApps) -> Result<ConnectedApps, ApiError> {
    let caller = cx.caller()?;
    let apps = store::oauth::list(cx.db(), &caller.account_id, caller.locked_workspace_id.as_deref()).await?;
    Ok(ConnectedApps { apps })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DisconnectApp {
    /// The connection's id (`oag_…`), from `GET /v1/connected-apps`.
    pub grant_id: AppGrantId,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct AppDisconnected {
    pub grant_id: String,
    pub disconnected: bool,
}

/// DELETE /v1/connected-apps/{grant_id}
pub async fn disconnect(cx: &Cx<'_>, p: DisconnectApp) -> Result<AppDisconnected, ApiError> {
    let caller = cx.caller()?;
    let found = store::oauth::disconnect(
        cx.db(),
        &caller.account_id,
        &p.grant_id,
        caller.locked_workspace_id.as_deref(),
        cx.now_ms,
    )
    .await?;
    if !found {
        return Err(ApiError::not_found("connected app"));
    }
    crate::keycache::forget_all();
    Ok(AppDisconnected { grant_id: p.grant_id.into(), disconnected: true })
}
