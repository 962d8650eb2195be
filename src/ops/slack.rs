//! A workspace's Slack app: connecting it (bot token and signing secret, sealed; requests are posted to
//! one channel with buttons), disconnecting it, and the one-time code a member sends as
//! `/agentsky link <code>` so their clicks answer as them. The clicks themselves arrive at
//! `receivers::slack`.

use crate::cx::{Cx, Role};
use crate::error::ApiError;
use crate::rules::params::Text;
use crate::store::{self, slack::SlackConnection};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConnectSlack {
    /// The Slack app's bot token (`xoxb-…`), with `chat:write` (and `commands` for `/agentsky`).
    pub bot_token: Text<10, 500>,
    /// The app's signing secret (Basic Information in Slack's app settings): every click is checked with it.
    pub signing_secret: Text<10, 200>,
    /// The channel id requests are posted to (the app must be in it), e.g. `C0123ABCD`.
    pub channel: Text<2, 40>,
    /// A workspace slug; the connection's workspace when left out.
    pub workspace: Option<String>,
}

/// connect_slack — owners and admins.
pub async fn connect(cx: &Cx<'_>, p: ConnectSlack) -> Result<SlackConnection, ApiError> {
    let w = cx.workspace(p.workspace.as_deref())?.clone();
    cx.require_role(&w, Role::Admin)?;
    if !p.channel.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(ApiError::invalid("`channel` is a Slack channel id (letters and digits, e.g. `C0123ABCD`)"));
    }
    let c = crate::domain::slack::connect(cx, &w.workspace_id, &p.bot_token, &p.signing_secret, &p.channel).await?;
    let detail = format!("Slack team {} posting to channel {}", c.team_id, c.channel);
    let entry = store::audit::Entry::change(
        &w.workspace_id,
        &cx.caller()?.account_id,
        "slack_connected",
        None,
        &detail,
        cx.now_ms,
    );
    store::slack::put(cx.db(), &c, &entry).await?;
    Ok(c)
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DisconnectSlack {
    /// A workspace slug; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SlackDisconnected {
    pub disconnected: bool,
}

/// disconnect_slack — owners and admins.
pub async fn disconnect(cx: &Cx<'_>, p: DisconnectSlack) -> Result<SlackDisconnected, ApiError> {
    let w = cx.workspace(p.workspace.as_deref())?.clone();
    cx.require_role(&w, Role::Admin)?;
    let entry = store::audit::Entry::change(
        &w.workspace_id,
        &cx.caller()?.account_id,
        "slack_disconnected",
        None,
        "Slack app disconnected",
        cx.now_ms,
    );
    Ok(SlackDisconnected { disconnected: store::slack::delete(cx.db(), &w.workspace_id, &entry).await? })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkSlack {
    /// A workspace slug; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SlackLinkCode {
    /// Send `/agentsky link <code>` in Slack within 10 minutes; it works once. Shown only now.
    pub code: String,
    pub expires_ms: i64,
}

/// link_slack — any member: a one-time code that links the Slack user who sends it to the caller.
pub async fn link(cx: &Cx<'_>, p: LinkSlack) -> Result<SlackLinkCode, ApiError> {
    let w = cx.workspace(p.workspace.as_deref())?.clone();
    if store::slack::get(cx.db(), &w.workspace_id).await?.is_none() {
        return Err(ApiError::new(
            crate::error::Code::Conflict,
            format!("`{}` has no Slack app connected; an owner or admin connects one first (connect_slack)", w.slug),
        ));
    }
    let code = crate::domain::slack::new_link_code(cx, &w.workspace_id).await?;
    Ok(SlackLinkCode { code, expires_ms: cx.now_ms + crate::domain::slack::LINK_CODE_MS })
}
