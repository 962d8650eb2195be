//! Slack's calls to a workspace's Slack app: a button clicked on a posted request
//! (`POST /v1/slack/interactions`) and the `/agentsky` slash command (`POST /v1/slack/commands`), which
//! links the sender's Slack user to a member with a one-time code from the console. Each is verified with
//! the signing secret of a connection of the sending team before anything in it is taken as true; a click
//! then answers through `answer_request`, as the linked member, with their roles.

use crate::cx::{Channel, Cx};
use crate::domain::slack as app;
use crate::error::{ApiError, Code};
use crate::http::{HttpRequest, HttpResponse};
use crate::rules::{ids, slack};
use crate::store;
use serde_json::{json, Value};

/// The fields of a form body (Slack posts `application/x-www-form-urlencoded`).
fn field(body: &[u8], name: &str) -> String {
    form_urlencoded::parse(body).find(|(k, _)| k == name).map(|(_, v)| v.into_owned()).unwrap_or_default()
}

/// The connection that signed `req`, for the team `team_id` claims.
async fn signed(cx: &Cx<'_>, req: &HttpRequest, team_id: &str) -> Result<store::slack::SlackConnection, ApiError> {
    if req.method != "POST" {
        return Err(ApiError::invalid("Slack POSTs its calls"));
    }
    let timestamp = req.header("x-slack-request-timestamp").unwrap_or_default();
    let signature = req.header("x-slack-signature").unwrap_or_default();
    app::verify(cx, team_id, timestamp, signature, &req.body).await
}

fn reply(result: Result<Value, ApiError>) -> HttpResponse {
    match result {
        Ok(body) => HttpResponse::json(200, &body),
        Err(e) => crate::error::error_response(&e),
    }
}

/// `POST /v1/slack/interactions`: a button of a posted request. Answers 200 with what was done (Slack
/// shows the updated message; the clicker gets the words as an ephemeral message).
pub async fn interactions(cx: &Cx<'_>, req: &HttpRequest) -> HttpResponse {
    reply(interaction(cx, req).await)
}

async fn interaction(cx: &Cx<'_>, req: &HttpRequest) -> Result<Value, ApiError> {
    let payload: Value = serde_json::from_str(&field(&req.body, "payload"))
        .map_err(|_| ApiError::invalid("an interaction is a form with a JSON `payload`"))?;
    let c = signed(cx, req, payload["team"]["id"].as_str().unwrap_or_default()).await?;
    let user = payload["user"]["id"].as_str().unwrap_or_default();
    let action = &payload["actions"][0];
    if payload["type"] != "block_actions" || action["value"].as_str().is_none() {
        // "Open in agentsky" is a link; Slack still tells us it was clicked.
        return Ok(json!({"ok": true, "said": ""}));
    }
    let said = match clicked(cx, &c, user, action["value"].as_str().unwrap_or_default()).await {
        Ok(words) => words,
        Err(e) => format!("Not answered: {}", e.message),
    };
    let channel = payload["channel"]["id"].as_str().unwrap_or(&c.channel);
    app::tell(cx, &c, channel, user, &said).await;
    Ok(json!({"ok": true, "said": said}))
}

/// Answers the request a button names as the member who linked `slack_user`; the words to show them.
async fn clicked(
    cx: &Cx<'_>,
    c: &store::slack::SlackConnection,
    slack_user: &str,
    value: &str,
) -> Result<String, ApiError> {
    let choice = slack::Choice::read(value).ok_or_else(|| ApiError::invalid("that button is not one of agentsky's"))?;
    let account = store::slack::linked(cx.db(), &c.team_id, slack_user).await?.ok_or_else(|| {
        ApiError::new(
            Code::Forbidden,
            "your Slack user is not linked to agentsky yet: in the console's Members page make a Slack code, then send `/agentsky link <code>` here",
        )
    })?;
    let req = store::requests::get_request(cx.db(), &choice.request_id).await?;
    let req = req.filter(|r| r.workspace_id == c.workspace_id).ok_or_else(|| ApiError::not_found("request"))?;
    // No button is offered for these; a click that says otherwise (a forged value) is refused the same way.
    if choice.answer == "approve" && app::needs_sign_in(&req.kind, &req.payload) {
        return Err(ApiError::new(
            Code::Forbidden,
            "a production deploy or delete is approved after signing in: use Open in agentsky",
        ));
    }
    let acting_as = format!("slack:{}:{slack_user}", c.team_id);
    let caller = store::keys::linked_caller(cx.db(), &account, &c.workspace_id, &acting_as).await?;
    if !caller.memberships.iter().any(|m| m.workspace_id == c.workspace_id) {
        return Err(ApiError::new(
            Code::Forbidden,
            "the account your Slack user is linked to is not a member of this workspace",
        ));
    }
    let acting = cx.acting_as(caller, Channel::Slack);
    let args = json!({"task_id": choice.task_id, "request_id": choice.request_id, "answer": choice.answer});
    let answered = crate::ops::call_json::answer_request(&acting, args).await?;
    Ok(match answered.approvals {
        Some(progress) => format!("Approval recorded ({} of {}).", progress.approved_by.len(), progress.needed),
        None => format!("Answered: {}.", choice.answer),
    })
}

/// `POST /v1/slack/commands`: `/agentsky link <code>` links the sender's Slack user to the member who made
/// the code (in this workspace, within its 10 minutes, once). Slack shows the answer to the sender only.
pub async fn commands(cx: &Cx<'_>, req: &HttpRequest) -> HttpResponse {
    reply(command(cx, req).await)
}

async fn command(cx: &Cx<'_>, req: &HttpRequest) -> Result<Value, ApiError> {
    let c = signed(cx, req, &field(&req.body, "team_id")).await?;
    let text = field(&req.body, "text");
    let said = match text.split_whitespace().collect::<Vec<_>>().as_slice() {
        ["link", code] => match store::slack::take_code(cx.db(), &ids::hash_secret(code), cx.now_ms).await? {
            Some((workspace_id, account_id)) if workspace_id == c.workspace_id => {
                store::slack::link(cx.db(), &c.team_id, &field(&req.body, "user_id"), &account_id, cx.now_ms).await?;
                "Linked: agentsky's buttons in this Slack now answer as you, with your role.".to_owned()
            }
            _ => "That code is not valid here (each works once, for 10 minutes, in the workspace that made it)."
                .to_owned(),
        },
        _ => "Use `/agentsky link <code>` with a code from the console's Members page.".to_owned(),
    };
    Ok(json!({"response_type": "ephemeral", "text": said}))
}
