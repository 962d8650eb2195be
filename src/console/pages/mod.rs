//! The console's pages and actions, one file per area. A page reads through operations and renders; an
//! action is one operation called with a form's fields, then back to the page it came from.

mod access;
mod agents;
mod approvals;
mod board;
mod devices;
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
use serde_json::{json, Value};

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
        ["devices"] => devices::page(p).await,
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

/// What the console does once an action's operation answered.
enum Then {
    /// Back to the page, saying it was done.
    Done,
    /// Back to the page, saying this.
    Said(&'static str),
    /// A secret shown once, with its page's title, instead of going back.
    Shown(&'static str, String),
    /// On to another page: Stripe's checkout, or the session an agent was asked in.
    GoTo(String, Option<&'static str>),
    /// What a command did, on a page of its own.
    Ran(crate::ops::commands::CommandRun),
}

/// Runs one operation with the form's arguments. Those whose answer the console shows or follows are
/// called for their typed answer; the others only say they were done.
async fn run(p: &Ctx<'_>, op: &crate::ops::Op, args: Value) -> Result<Then, ApiError> {
    use crate::ops::{call_json as call, name};
    let cx = p.cx;
    let shown = |title, secret: Option<String>| secret.map_or(Then::Done, |s| Then::Shown(title, s));
    Ok(match op.name {
        name::create_key => shown("Your new API key", Some(call::create_key(cx, args).await?.key)),
        name::register_runner => shown("Your new runner's token", Some(call::register_runner(cx, args).await?.token)),
        name::link_slack => shown(
            "Your Slack link code: send /agentsky link <code> in Slack within 10 minutes",
            Some(call::link_slack(cx, args).await?.code),
        ),
        name::share_session => shown("The session's share link", call::share_session(cx, args).await?.share_url),
        name::share_artifact => shown("The artifact's share link", call::share_artifact(cx, args).await?.share_url),
        name::create_webhook => {
            shown("Your webhook's signing secret", Some(call::create_webhook(cx, args).await?.secret))
        }
        name::rotate_webhook_secret => {
            shown("Your webhook's new signing secret", Some(call::rotate_webhook_secret(cx, args).await?.secret))
        }
        name::create_invitation => {
            let token = call::create_invitation(cx, args).await?.token;
            let link = format!("{}/console/join?t={token}", p.cx.base_url);
            Then::Shown("The invitation's link (pass it on; it works once)", link)
        }
        // Paying and saving a card go on to Stripe's checkout page.
        name::top_up => Then::GoTo(call::top_up(cx, args).await?.url, None),
        name::save_card => Then::GoTo(call::save_card(cx, args).await?.url, None),
        name::run_command => {
            let ran = call::run_command(cx, args).await?;
            match ran.asked_message_id {
                // A deploy asked of the session's agent in a new turn shows its output in the session.
                Some(_) => Then::Said("Asked the agent to deploy in a new turn; its output shows here."),
                None => Then::Ran(ran),
            }
        }
        // The agent asked to work a command out is watched where it works.
        name::ask_command => {
            let sid = call::ask_command(cx, args).await?.asked_session_id;
            let said = "Asked the agent to work the command out and teach it; its answer shows here.";
            Then::GoTo(p.link(&format!("/sessions/{sid}")), Some(said))
        }
        _ => {
            crate::ops::invoke(cx, op, args).await?;
            Then::Done
        }
    })
}

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
    match run(p, op, args).await {
        Ok(Then::Shown(title, secret)) => shown_once(p, title, &secret, &back),
        Ok(Then::GoTo(to, None)) => see_other(&to),
        Ok(Then::GoTo(to, Some(said))) => see_other(&to).with_header("set-cookie", layout::flash_cookie(true, said)),
        Ok(Then::Said(said)) => see_other(&back).with_header("set-cookie", layout::flash_cookie(true, said)),
        Ok(Then::Ran(ran)) => {
            let main = markup! { h1 { "What it did" } (sessions::command_result(&ran)) p { a href=(back) { "Back" } } };
            let shell = Shell { title: "Command", nav: "", open_requests: 0, version: String::new() };
            html(200, layout::page(p, shell, main))
        }
        Ok(Then::Done) => {
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
