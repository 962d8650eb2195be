//! The records webhook of a workspace (`POST /v1/webhooks/records/<workspace_id>`): tools report outcomes
//! (or decisions) about a session, signed like GitHub's webhooks or with the secret as a bearer. What a
//! record is and how it is stored is [`crate::ops::records`]'s.

use crate::cx::Cx;
use crate::error::{ApiError, Code};
use crate::http::{HttpRequest, HttpResponse};
use crate::ops::records::{check, store_record, By, WEBHOOK_CALLS_PER_MIN, WEBHOOK_SECRET};
use crate::rules::{hmac, ids, limits, seal};
use crate::store;
use serde_json::{json, Value};

/// What a webhook payload asks to record.
#[derive(Debug, PartialEq)]
enum Hook {
    Record {
        session_id: String,
        name: String,
        value: Option<String>,
        note: Option<String>,
        url: Option<String>,
        by: String,
        dedupe: Option<String>,
    },
    /// Understood, but nothing to record (a ping, an unmerged close, no session id): why.
    Ignored(String),
}

/// The first session id (`ses_` and 26 id characters) in some texts.
fn session_id_in(texts: &[&str]) -> Option<String> {
    texts.iter().find_map(|t| {
        t.match_indices("ses_").find_map(|(at, _)| {
            let candidate = t.get(at..at + 30)?;
            ids::is_id(candidate, "ses").then(|| candidate.to_owned())
        })
    })
}

/// Reads a webhook payload: GitHub's (by its `X-GitHub-Event` header) or the generic JSON.
fn interpret(event: Option<&str>, delivery: Option<&str>, body: &Value) -> Result<Hook, ApiError> {
    let dedupe = delivery.map(|d| format!("delivery:{d}"));
    let sender = format!("github:{}", body["sender"]["login"].as_str().unwrap_or("unknown"));
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let (name, texts, url, note) = match event {
        None => {
            let field = |k: &str| body[k].as_str().map(str::to_owned);
            let session_id = field("session_id").ok_or_else(|| ApiError::invalid("`session_id` is required"))?;
            let name = field("name").ok_or_else(|| ApiError::invalid("`name` is required"))?;
            let by = field("by").unwrap_or_else(|| "webhook".into());
            limits::text("by", &by, 1, 100)?;
            let dedupe = field("idempotency_key").map(|k| format!("key:{k}")).or(dedupe);
            return Ok(Hook::Record {
                session_id,
                name,
                value: field("value"),
                note: field("note"),
                url: field("url"),
                by,
                dedupe,
            });
        }
        Some("ping") => return Ok(Hook::Ignored("ping received; the webhook is set up".into())),
        Some("pull_request") => {
            let pr = &body["pull_request"];
            let name = match (body["action"].as_str(), pr["merged"].as_bool()) {
                (Some("closed"), Some(true)) => "pr_merged",
                (Some("reopened"), _) => "reopened",
                (action, _) => {
                    return Ok(Hook::Ignored(format!(
                        "pull_request `{}` records nothing (merged pull requests and reopened ones do)",
                        action.unwrap_or("?")
                    )))
                }
            };
            (
                name,
                vec![text(&pr["title"]), text(&pr["body"]), text(&pr["head"]["ref"])],
                text(&pr["html_url"]),
                text(&pr["title"]),
            )
        }
        Some("deployment_status") => {
            let status = &body["deployment_status"];
            let name = match status["state"].as_str() {
                Some("success") => "deployed",
                Some("failure" | "error") => "later_failure",
                other => {
                    return Ok(Hook::Ignored(format!("deployment_status `{}` records nothing", other.unwrap_or("?"))))
                }
            };
            let d = &body["deployment"];
            let url =
                status["target_url"].as_str().or(status["environment_url"].as_str()).unwrap_or_default().to_owned();
            let env = text(&d["environment"]);
            (
                name,
                vec![text(&d["description"]), text(&d["ref"]), d["payload"].to_string()],
                url,
                format!("environment {env}"),
            )
        }
        Some(other) => return Ok(Hook::Ignored(format!("GitHub event `{other}` records nothing"))),
    };
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let Some(session_id) = session_id_in(&refs) else {
        return Ok(Hook::Ignored(
            "no session id (`ses_…`) in the pull request's title, body or branch, or the deployment's description, \
             ref or payload"
                .into(),
        ));
    };
    let url = Some(url).filter(|u| u.starts_with("http"));
    Ok(Hook::Record {
        session_id,
        name: name.into(),
        value: None,
        note: Some(note.chars().take(2_000).collect()),
        url,
        by: sender,
        dedupe,
    })
}

/// `POST /v1/webhooks/records/{workspace_id}`: a tool reports an outcome (or a decision) about a session.
/// Verified with the workspace's webhook secret: GitHub's `X-Hub-Signature-256`, or the secret as a bearer.
pub async fn receive(cx: &Cx<'_>, workspace_id: &str, req: &HttpRequest) -> HttpResponse {
    match receive_inner(cx, workspace_id, req).await {
        Ok((status, body)) => HttpResponse::json(status, &body),
        Err(e) => crate::error::error_response(&e.finish(&cx.request_id)),
    }
}

async fn receive_inner(cx: &Cx<'_>, workspace_id: &str, req: &HttpRequest) -> Result<(u16, Value), ApiError> {
    if req.method != "POST" {
        return Err(ApiError::invalid("webhooks are POSTed"));
    }
    let no_hook = || {
        ApiError::new(
            Code::NotFound,
            "no records webhook here; create one with POST /v1/workspaces/{workspace}/records-webhook",
        )
    };
    if !ids::is_id(workspace_id, "ws") {
        return Err(no_hook());
    }
    let sealed = store::secrets::sealed(cx.db(), workspace_id, WEBHOOK_SECRET).await?;
    let master = cx.env.config.secrets_key.as_deref();
    let secret = sealed
        .zip(master)
        .and_then(|(sealed, master)| seal::open(master, &seal::secret_aad(workspace_id, WEBHOOK_SECRET), &sealed))
        .ok_or_else(no_hook)?;
    let bearer =
        req.header("authorization").and_then(|h| h.split_once(' ')).filter(|(s, _)| s.eq_ignore_ascii_case("bearer"));
    let verified = match (req.header("x-hub-signature-256"), bearer) {
        (Some(signature), _) => hmac::signature_matches(&secret, &req.body, signature),
        (None, Some((_, token))) => ids::constant_time_eq(token.trim(), &secret),
        (None, None) => false,
    };
    if !verified {
        return Err(ApiError::new(
            Code::Unauthorized,
            "the webhook's signature (X-Hub-Signature-256) or bearer secret does not match this workspace's",
        ));
    }
    // Counted only once verified: unsigned posts from anyone must never spend the workspace's own calls.
    crate::ops::rate_limit(cx, format!("webhook:{workspace_id}"), WEBHOOK_CALLS_PER_MIN).await?;
    let body: Value = serde_json::from_slice(&req.body)
        .map_err(|e| ApiError::invalid(format!("the webhook body is not JSON: {e}")))?;
    let hook = interpret(req.header("x-github-event"), req.header("x-github-delivery"), &body)?;
    let (session_id, name, value, note, url, by, dedupe) = match hook {
        Hook::Record { session_id, name, value, note, url, by, dedupe } => {
            (session_id, name, value, note, url, by, dedupe)
        }
        Hook::Ignored(why) => return Ok((202, json!({ "recorded": false, "reason": why }))),
    };
    let asked = check(&name, value.as_deref(), note.as_deref(), url.as_deref())?;
    let session = store::sessions::get(cx.db(), &session_id)
        .await?
        .filter(|s| s.workspace_id == workspace_id)
        .ok_or_else(|| ApiError::new(Code::NotFound, format!("session `{session_id}` not found in this workspace")))?;
    let by = By { kind: "webhook", id: &by, name: &by, key_id: None };
    let record = store_record(cx, &session, &asked, &by, dedupe.as_deref()).await?;
    Ok((200, json!({ "recorded": true, "session_id": session.session_id, "record": record })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_merged_pull_request_naming_a_session_is_pr_merged() {
        let ses = ids::new_id("ses");
        let body = json!({
            "action": "closed", "sender": {"login": "octocat"},
            "pull_request": {"merged": true, "title": "Fix login", "body": format!("Made by {ses}."),
                "head": {"ref": "fix"}, "html_url": "https://github.com/o/r/pull/7"},
        });
        match interpret(Some("pull_request"), Some("d-1"), &body).unwrap() {
            Hook::Record { session_id, name, by, url, dedupe, .. } => {
                assert_eq!((session_id, name.as_str(), by.as_str()), (ses, "pr_merged", "github:octocat"));
                assert_eq!(url.as_deref(), Some("https://github.com/o/r/pull/7"));
                assert_eq!(dedupe.as_deref(), Some("delivery:d-1"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn unmerged_closes_pings_and_prs_without_a_session_record_nothing() {
        let closed = json!({"action": "closed", "pull_request": {"merged": false, "title": "x"}});
        assert!(matches!(interpret(Some("pull_request"), None, &closed).unwrap(), Hook::Ignored(_)));
        assert!(matches!(interpret(Some("ping"), None, &json!({})).unwrap(), Hook::Ignored(_)));
        let anonymous = json!({"action": "closed", "pull_request": {"merged": true, "title": "ses_short"}});
        assert!(matches!(interpret(Some("pull_request"), None, &anonymous).unwrap(), Hook::Ignored(_)));
    }
}
