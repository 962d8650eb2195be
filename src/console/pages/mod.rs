//! The console's pages and actions, one file per area. A page reads through operations and renders; an
//! action is one operation called with a form's fields, then back to the page it came from.

mod access;
mod agents;
mod approvals;
mod board;
mod health;
mod keys;
mod members;
mod routines;
mod runners;
mod sessions;
mod skills;
mod usage;
mod webhooks;

use super::layout::{self, Shell};
use super::{forms, html, see_other, Ctx};
use crate::error::ApiError;
use crate::http::HttpResponse;
use crate::rules::redirect;
use maud::{html as markup, Markup};
use serde_json::json;

/// What a page handler gives back: its title, its navigation entry and its content.
pub struct Page {
    pub title: String,
    pub nav: &'static str,
    pub main: Markup,
}

/// How long the live channel holds a request before the script asks again.
const LIVE_WAIT_MS: i64 = 25_000;

/// `GET /console/w/<ws>/<sub>`
pub async fn get(p: &Ctx<'_>, sub: &str) -> HttpResponse {
    if sub == "live" {
        return live(p).await;
    }
    if let Some(sid) = sub.strip_prefix("sessions/").and_then(|r| r.strip_suffix("/stream")) {
        return sessions::stream(p, sid).await;
    }
    // The feed's version is read before the page's data, so a change made while it renders still wakes
    // the script afterwards.
    let version = p.cx.env.feeds.wait(&p.ws.workspace_id, "", 0).await.unwrap_or_default();
    let parts: Vec<&str> = sub.split('/').filter(|s| !s.is_empty()).collect();
    let page = match parts.as_slice() {
        [] => approvals::page(p).await,
        ["board"] => board::page(p).await,
        ["tasks", task_id] => board::task(p, task_id).await,
        ["sessions", sid] => sessions::page(p, sid).await,
        ["usage"] => usage::page(p).await,
        ["health"] => health::page(p).await,
        ["agents"] => agents::page(p, None).await,
        ["agents", agent_id] => agents::page(p, Some(agent_id)).await,
        ["routines"] => routines::page(p).await,
        ["access"] => access::page(p).await,
        ["runners"] => runners::page(p).await,
        ["members"] => members::page(p).await,
        ["keys"] => keys::page(p, None).await,
        ["webhooks"] => webhooks::page(p).await,
        ["skills"] => skills::page(p, None).await,
        ["skills", name] => skills::page(p, Some(name)).await,
        _ => Err(ApiError::not_found("page")),
    };
    let open = open_requests(p).await;
    let (status, page) = match page.map_err(|e| e.finish(&p.cx.request_id)) {
        Ok(page) => (200, page),
        Err(e) => (
            e.code.http(),
            Page { title: "Not here".into(), nav: "", main: markup! { p.error role="alert" { (e.message) } } },
        ),
    };
    let shell = Shell { title: &page.title, nav: page.nav, open_requests: open, version };
    let resp = html(status, layout::page(p, shell, page.main));
    match p.flash {
        Some(_) => resp.with_header("set-cookie", layout::clear_flash()),
        None => resp,
    }
}

/// How many requests wait in the workspace (for the title and the badge); 0 when it cannot tell.
async fn open_requests(p: &Ctx<'_>) -> usize {
    crate::ops::call::list_requests(p.cx, requests_of(p)).await.map_or(0, |listed| listed.requests.len())
}

/// `list_requests` of the page's workspace: every open request, at once.
fn requests_of(p: &Ctx<'_>) -> crate::ops::requests::ListRequests {
    crate::ops::requests::ListRequests { workspace: Some(p.ws.slug.clone()), cursor: None, wait_seconds: None }
}

/// `GET /console/w/<ws>/live?v=…`: held until the workspace's feed moves past `v` (or 25 s), then its
/// version and open-request count. The script refreshes the page's live regions when the version moved.
async fn live(p: &Ctx<'_>) -> HttpResponse {
    let seen = p.query("v").unwrap_or_default();
    let v = match p.cx.env.feeds.wait(&p.ws.workspace_id, &seen, LIVE_WAIT_MS).await {
        Ok(v) => v,
        Err(e) => return HttpResponse::json(500, &p.cx.internal(e).body()),
    };
    HttpResponse::json(200, &json!({ "v": v, "open": open_requests(p).await })).with_header("cache-control", "no-store")
}

/// Operations whose answer holds a secret shown once: the page shows it instead of going back.
const SHOWN_ONCE: &[(&str, &str, &str)] = &[
    ("create_key", "key", "Your new API key"),
    ("register_runner", "token", "Your new runner's token"),
    ("share_session", "share_url", "The session's share link"),
    ("share_artifact", "share_url", "The artifact's share link"),
    ("create_webhook", "secret", "Your webhook's signing secret"),
    ("rotate_webhook_secret", "secret", "Your webhook's new signing secret"),
];

/// Operations whose answer is a checkout page to go to.
const CHECKOUT: &[&str] = &["top_up", "save_card"];

/// `POST /console/w/<ws>/op/<operation>`: one operation with the form's fields, as the signed-in key.
pub async fn act(p: &Ctx<'_>, sub: &str, form: Vec<(String, String)>) -> HttpResponse {
    // Where to return is checked before anything is done: an action never runs for an answer that
    // cannot be sent. A page of another workspace returns to this one's.
    let back = match form.iter().find(|(k, _)| k == "back") {
        None => p.link(""),
        Some((_, raw)) => match redirect::local_path("back", raw) {
            Ok(b) if b.starts_with(&p.link("")) && !b.contains("//") => b.to_owned(),
            Ok(_) => p.link(""),
            Err(why) => return super::error_page(400, &format!("{why}; nothing was done.")),
        },
    };
    let Some(op) = sub.strip_prefix("op/").and_then(crate::ops::find) else {
        return see_other(&back).with_header("set-cookie", layout::flash_cookie(false, "No such action."));
    };
    let args = forms::arguments(op.params_schema(), &form);
    match crate::ops::invoke(p.cx, op, args).await {
        Ok(result) => {
            if let Some((_, field, title)) = SHOWN_ONCE.iter().find(|(name, _, _)| *name == op.name) {
                if let Some(secret) = result[*field].as_str() {
                    return shown_once(p, title, secret, &back);
                }
            }
            if let (true, Some(token)) = (op.name == "create_invitation", result["token"].as_str()) {
                let link = format!("{}/console/join?t={token}", p.cx.base_url);
                return shown_once(p, "The invitation's link (pass it on; it works once)", &link, &back);
            }
            // Paying and saving a card go on to Stripe's checkout page.
            if let (true, Some(url)) = (CHECKOUT.contains(&op.name), result["url"].as_str()) {
                return see_other(url);
            }
            // A deploy asked of the session's agent in a new turn shows its output in the session.
            if let (true, Some(_)) = (op.name == "run_command", result["asked_message_id"].as_str()) {
                let said = "Asked the agent to deploy in a new turn; its output shows here.";
                return see_other(&back).with_header("set-cookie", layout::flash_cookie(true, said));
            }
            if op.name == "run_command" {
                let main =
                    markup! { h1 { "What it did" } (sessions::command_result(&result)) p { a href=(back) { "Back" } } };
                let shell = Shell { title: "Command", nav: "", open_requests: 0, version: String::new() };
                return html(200, layout::page(p, shell, main));
            }
            // The agent asked to work a command out is watched where it works.
            if let (true, Some(sid)) = (op.name == "ask_command", result["asked_session_id"].as_str()) {
                let said = "Asked the agent to work the command out and teach it; its answer shows here.";
                return see_other(&p.link(&format!("/sessions/{sid}")))
                    .with_header("set-cookie", layout::flash_cookie(true, said));
            }
            let said = format!("{}: done.", op.title);
            see_other(&back).with_header("set-cookie", layout::flash_cookie(true, &said))
        }
        Err(e) => see_other(&back).with_header("set-cookie", layout::flash_cookie(false, &e.message)),
    }
}

/// A secret the server will never show again (a key, a token, a link), on a page of its own (never
/// cached).
fn shown_once(p: &Ctx<'_>, title: &str, secret: &str, back: &str) -> HttpResponse {
    let main = markup! {
        h1 { (title) }
        p { "Copy it now: it is shown once, and nobody can read it back later." }
        pre.secret data-secret { (secret) }
        p { a href=(back) { "Done" } }
    };
    let shell = Shell { title, nav: "", open_requests: 0, version: String::new() };
    html(200, layout::page(p, shell, main))
}

/// A list's empty state.
pub fn empty(text: &str) -> Markup {
    markup! { p.empty { (text) } }
}
