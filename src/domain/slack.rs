//! Slack with buttons: a workspace connects its Slack app (bot token and signing secret, sealed) and a
//! channel; each new request is posted there as a Block Kit message whose buttons answer it; a click comes
//! back signed to `/v1/slack/interactions`, is mapped to the member who linked that Slack user (with a
//! one-time code from the console, sent as `/agentsky link <code>`), and answers through `answer_request`
//! with that member's roles. A decision made anywhere updates the message with who decided. What needs
//! more trust (`always`, a production deploy or delete) gets "Open in agentsky" instead of a button, so it
//! is decided after signing in.

use crate::cx::Cx;
use crate::egress::Egress;
use crate::error::{log_line, ApiError, Code};
use crate::rules::{approvals, ids, outbound, seal, slack};
use crate::store::{self, slack::SlackConnection};
use serde_json::{json, Value};

const SLACK_API: &str = "https://slack.com/api";

/// How long a link code lives.
pub const LINK_CODE_MS: i64 = 10 * 60_000;

fn api(cx: &Cx<'_>, method: &str) -> String {
    let base = cx.env.config.slack_api_url.as_deref().unwrap_or(SLACK_API).trim_end_matches('/').to_owned();
    format!("{base}/{method}")
}

fn master<'a>(cx: &Cx<'a>) -> Result<&'a str, ApiError> {
    cx.env.config.secrets_key.as_deref().ok_or_else(|| {
        ApiError::new(
            Code::NotImplemented,
            "this deployment has no SECRETS_KEY configured, so it cannot keep a Slack app's secrets",
        )
    })
}

/// The connection's bot token and signing secret.
struct Secrets {
    bot_token: String,
    signing_secret: String,
}

fn secrets(cx: &Cx<'_>, c: &SlackConnection) -> Result<Secrets, ApiError> {
    let plain = seal::open(master(cx)?, &seal::slack_aad(&c.workspace_id), &c.sealed)
        .ok_or_else(|| ApiError::cause("the Slack connection's secrets do not open with this deployment's key"))?;
    let v: Value = serde_json::from_str(&plain).map_err(ApiError::cause)?;
    let field = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
    Ok(Secrets { bot_token: field("bot_token"), signing_secret: field("signing_secret") })
}

/// One Web API call with the bot token; Slack's answer when it says `ok`, else what it said.
async fn call(cx: &Cx<'_>, bot_token: &str, method: &str, body: &Value) -> Result<Value, String> {
    let headers = vec![
        ("authorization".to_owned(), format!("Bearer {bot_token}")),
        ("content-type".to_owned(), "application/json; charset=utf-8".to_owned()),
    ];
    let out = crate::cx::Outbound { url: api(cx, method), headers, body: body.to_string().into_bytes() };
    let resp = Egress::new(&*cx.env.net, &cx.env.config).post("Slack's API", out).await?;
    let answer = resp.json_body();
    match (resp.status, answer["ok"].as_bool()) {
        (200, Some(true)) => Ok(answer),
        (200, _) => Err(format!("Slack said {}", outbound::snippet(answer["error"].as_str().unwrap_or("no")))),
        (status, _) => Err(outbound::summary(status, &resp.body)),
    }
}

/// Connects (or reconnects) a workspace's Slack app: the token must be a bot token Slack accepts
/// (`auth.test` names its team), then both secrets are sealed.
pub async fn connect(
    cx: &Cx<'_>,
    workspace_id: &str,
    bot_token: &str,
    signing_secret: &str,
    channel: &str,
) -> Result<SlackConnection, ApiError> {
    let master = master(cx)?;
    let who = call(cx, bot_token, "auth.test", &json!({}))
        .await
        .map_err(|e| ApiError::invalid(format!("`bot_token`: Slack did not accept it ({e})")))?;
    let team_id = who["team_id"].as_str().filter(|t| !t.is_empty()).ok_or_else(|| {
        ApiError::invalid("`bot_token`: Slack's auth.test named no team; use the app's bot token (xoxb-…)")
    })?;
    let plain = json!({"bot_token": bot_token, "signing_secret": signing_secret}).to_string();
    Ok(SlackConnection {
        workspace_id: workspace_id.to_owned(),
        team_id: team_id.to_owned(),
        channel: channel.to_owned(),
        sealed: seal::seal(master, &seal::slack_aad(workspace_id), &plain),
        created_ms: cx.now_ms,
    })
}

/// A new link code for the caller in a workspace: shown once, kept hashed, used once within 10 minutes.
pub async fn new_link_code(cx: &Cx<'_>, workspace_id: &str) -> Result<String, ApiError> {
    let code = ids::new_secret("slk");
    let account = &cx.caller()?.account_id;
    store::slack::put_code(cx.db(), &ids::hash_secret(&code), workspace_id, account, cx.now_ms + LINK_CODE_MS).await?;
    Ok(code)
}

/// Whether a request needs a signed-in person: an access request for a production deploy or delete.
pub fn needs_sign_in(kind: &str, payload: &Value) -> bool {
    let scopes: Vec<&str> = payload["scope"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    kind == "access" && approvals::guarded(payload["env"].as_str().unwrap_or_default(), &scopes)
}

/// Posts a new request to the workspace's channel, if it connected Slack. Best effort: a failure is
/// logged, never the agent's.
pub async fn request_opened(
    cx: &Cx<'_>,
    me: &store::sessions::SessionRow,
    request_id: &str,
    kind: &str,
    payload: &Value,
) {
    if let Err(e) = try_post(cx, me, request_id, kind, payload).await {
        log_line(&format!("slack: posting request {request_id} failed: {}", e.message));
    }
}

async fn try_post(
    cx: &Cx<'_>,
    me: &store::sessions::SessionRow,
    request_id: &str,
    kind: &str,
    payload: &Value,
) -> Result<(), ApiError> {
    let Some(c) = store::slack::get(cx.db(), &me.workspace_id).await? else { return Ok(()) };
    let s = secrets(cx, &c)?;
    let slug = store::workspaces::as_owner(cx.db(), &me.workspace_id).await?.map(|m| m.slug).unwrap_or_default();
    let answer_url = format!("{}/console/w/{slug}#request-{request_id}", cx.link_base()?);
    let posted = slack::Posted {
        task_id: &me.task_id,
        request_id,
        kind,
        payload,
        agent_name: &me.agent_name,
        answer_url: &answer_url,
        needs_sign_in: needs_sign_in(kind, payload),
    };
    let (text, blocks) = slack::message(&posted);
    let body = json!({"channel": c.channel, "text": text, "blocks": blocks, "unfurl_links": false});
    let sent = call(cx, &s.bot_token, "chat.postMessage", &body).await.map_err(ApiError::cause)?;
    let (Some(channel), Some(ts)) = (sent["channel"].as_str(), sent["ts"].as_str()) else {
        return Err(ApiError::cause("chat.postMessage answered no channel or ts"));
    };
    let kept = store::slack::Posted { channel: channel.to_owned(), ts: ts.to_owned(), asked: text };
    store::slack::put_posted(cx.db(), request_id, &me.workspace_id, &kept).await?;
    Ok(())
}

/// Updates a request's message once it is decided (here or anywhere), with who decided what, buttons
/// gone. Best effort.
pub async fn request_decided(cx: &Cx<'_>, req: &store::requests::RequestRow, outcome: &str) {
    let update = async {
        let Some(posted) = store::slack::posted(cx.db(), &req.request_id).await? else { return Ok(()) };
        let Some(c) = store::slack::get(cx.db(), &req.workspace_id).await? else { return Ok(()) };
        let s = secrets(cx, &c)?;
        let body = json!({"channel": posted.channel, "ts": posted.ts, "text": format!("{} — {outcome}", posted.asked),
            "blocks": slack::decided(&posted.asked, outcome)});
        call(cx, &s.bot_token, "chat.update", &body).await.map(drop).map_err(ApiError::cause)
    };
    if let Err(e) = update.await {
        log_line(&format!("slack: updating request {} failed: {}", req.request_id, e.message));
    }
}

/// Finds the connection whose signing secret signed this call (`team_id` says which to try), or refuses:
/// stale (more than five minutes off) or forged. `team_id` comes from the unverified body only to pick
/// the secret; nothing in it is trusted until one verifies.
pub async fn verify(
    cx: &Cx<'_>,
    team_id: &str,
    timestamp: &str,
    signature: &str,
    raw: &[u8],
) -> Result<SlackConnection, ApiError> {
    let mut stale = false;
    for c in store::slack::of_team(cx.db(), team_id).await? {
        let s = secrets(cx, &c)?;
        match slack::verify(&s.signing_secret, timestamp, signature, raw, cx.now_ms.div_euclid(1000)) {
            Ok(()) => return Ok(c),
            Err(slack::Refused::Stale) => stale = true,
            Err(slack::Refused::Forged) => {}
        }
    }
    Err(ApiError::new(
        Code::Unauthorized,
        match stale {
            true => "the request's timestamp is more than five minutes from now (a replay?)",
            false => "the request is not signed by a Slack app connected here",
        },
    ))
}

/// Tells one Slack user something in a channel, visible to them only (`chat.postEphemeral`). Best effort.
pub async fn tell(cx: &Cx<'_>, c: &SlackConnection, channel: &str, user: &str, text: &str) {
    let said = async {
        let s = secrets(cx, c)?;
        let body = json!({"channel": channel, "user": user, "text": slack::escape(text)});
        call(cx, &s.bot_token, "chat.postEphemeral", &body).await.map(drop).map_err(ApiError::cause)
    };
    if let Err(e) = said.await {
        log_line(&format!("slack: telling {user} failed: {}", e.message));
    }
}
