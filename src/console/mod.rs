//! The console: a person sees, approves and steers everything from a browser, at `/console`. It is one
//! more face over the operation table, not a second backend: every read and every change is an
//! operation called as the signed-in key, so scopes, roles, workspace locks and rate limits are exactly
//! the API's. Pages call the table's typed calls ([`crate::ops::call`]), so an operation's name, its
//! arguments and its answer's fields are the compiler's to check; a form's action names its operation in
//! its URL and goes through [`crate::ops::invoke`] with the form's fields. Pages are rendered on the server ([`maud`] escapes everything
//! interpolated); a small script ([`assets`]) keeps them live through the workspace's feed and a
//! session's own wait. Forms work without it.
//!
//! Safety, once for every page: a sign-in is a random cookie token stored hashed (HttpOnly, SameSite=Lax,
//! Secure except on loopback) carrying its key's scopes and lock, never more; every POST carries a CSRF
//! token derived from that cookie and must come from this origin; every page is [`HttpResponse::page`]
//! with a Content-Security-Policy that allows no inline script or style.
//!
//! Beside it, the pages anyone reaches without signing in here, each with its own policy: OAuth consent
//! ([`authorize`]), device sign-in for `sky` ([`device`]), the pages behind share links ([`shared`]) and
//! the Help Center ([`help`]). The last three carry their style inline (`style-src 'unsafe-inline'`, no
//! script), so they stand alone.

mod assets;
mod auth;
pub mod device;
mod forms;
pub mod help;
mod layout;
mod oauth;
mod pages;
mod render;
pub mod shared;

use crate::cx::{Cx, Membership};
use crate::error::{ApiError, Code};
use crate::http::{HttpRequest, HttpResponse};
use crate::ops::members::AcceptInvitation;
use crate::store::console::SignedIn;
use maud::Markup;

pub use oauth::authorize;

/// The console's own Content-Security-Policy: scripts, styles and fetches from this origin only.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
connect-src 'self'; form-action 'self'; base-uri 'none'; manifest-src 'self'; worker-src 'self'";

/// A signed-in request inside one workspace: what every page and action works with.
pub struct Ctx<'a> {
    pub cx: &'a Cx<'a>,
    pub who: &'a SignedIn,
    /// The workspace of the URL, as the caller's membership.
    pub ws: Membership,
    /// The token every form sends back.
    pub csrf: String,
    /// The page's path and query, where actions return.
    pub here: String,
    pub req: &'a HttpRequest,
    /// What the last action said (`ok`, and the message), shown once.
    pub flash: Option<(bool, String)>,
}

impl Ctx<'_> {
    /// A query parameter of the page's URL.
    pub fn query(&self, name: &str) -> Option<String> {
        forms::pairs(&self.req.query).into_iter().find(|(k, _)| k == name).map(|(_, v)| v).filter(|v| !v.is_empty())
    }

    /// The path of a page of this workspace.
    pub fn link(&self, rest: &str) -> String {
        format!("/console/w/{}{rest}", self.ws.slug)
    }

    /// Where a form posts to run an operation ([`crate::ops::name`] names it).
    pub fn action_url(&self, op: &str) -> String {
        self.link(&format!("/op/{op}"))
    }

    pub fn can_write(&self) -> bool {
        self.who.caller.can_write
    }
}

/// Serves everything under `/console`.
pub async fn serve(cx: Cx<'_>, req: &HttpRequest) -> HttpResponse {
    let path = req.path.as_str();
    match (req.method.as_str(), path) {
        ("GET", "/console/login") => return auth::login_page(req),
        ("POST", "/console/login") => return auth::login(&cx, req).await,
        ("GET", "/console/enter") => return auth::enter(&cx, req).await,
        ("POST", "/console/enter") => return auth::enter_confirmed(&cx, req).await,
        ("GET", _) if path.starts_with("/console/assets/") => {
            return assets::serve(&*cx.env.assets, &path["/console/assets/".len()..]).await
        }
        ("GET", "/console/sw.js") => return assets::serve(&*cx.env.assets, "sw.js").await,
        ("GET", "/console/manifest.webmanifest") => {
            return assets::serve(&*cx.env.assets, "manifest.webmanifest").await
        }
        // A notification's button: its one-time token is the credential (no cookie, no form).
        ("POST", "/console/push/answer") => return push_answer(&cx, req).await,
        _ => {}
    }
    let mut cx = cx;
    let Some((who, token)) = auth::signed_in(&cx, req).await else {
        return match req.method.as_str() {
            "GET" if !path.ends_with("/live") && !path.ends_with("/stream") => {
                see_other(&format!("/console/login?next={}", forms::encode(&forms::path_and_query(req))))
            }
            _ => HttpResponse::json(401, &ApiError::new(Code::Unauthorized, "sign in again").body()),
        };
    };
    cx.caller = Some(who.caller.clone());
    cx.channel = crate::cx::Channel::Console { signed_in_ms: who.signed_in_ms };
    if req.method == "POST" && !auth::same_origin(&cx, req) {
        return error_page(403, "This form was sent from another site, so it was not acted on.");
    }
    match (req.method.as_str(), path) {
        ("POST", "/console/logout") => return auth::logout(&cx, req, &token).await,
        ("GET", "/console/join") => return join_page(req, &token),
        ("POST", "/console/join") => return join(&cx, req, &token).await,
        ("GET", "/console") | ("GET", "/console/") => {
            return match cx.workspace(None) {
                Ok(m) => see_other(&format!("/console/w/{}", m.slug)),
                Err(e) => error_page(e.code.http(), &e.message),
            }
        }
        _ => {}
    }
    let Some(rest) = path.strip_prefix("/console/w/") else { return error_page(404, "No such page.") };
    let (slug, sub) = rest.split_once('/').map_or((rest, ""), |(s, r)| (s, r));
    let ws = match cx.workspace(Some(slug)) {
        Ok(m) => m.clone(),
        Err(e) => return error_page(e.code.http(), &e.message),
    };
    let flash = layout::read_flash(req);
    let p =
        Ctx { cx: &cx, who: &who, ws, csrf: auth::csrf_token(&token), here: forms::path_and_query(req), req, flash };
    if req.method == "POST" {
        let form = forms::pairs(&String::from_utf8_lossy(&req.body));
        if !auth::csrf_ok(&token, &form) {
            return error_page(403, "This form has expired; reload the page and try again.");
        }
        return pages::act(&p, sub, form).await;
    }
    pages::get(&p, sub).await
}

/// 303 to `to`: the answer to every form, so a reload never sends it twice.
pub fn see_other(to: &str) -> HttpResponse {
    HttpResponse::new(303).with_header("location", to).with_header("cache-control", "no-store")
}

/// A page with the console's policy. Its referrer policy is `same-origin`, not the other pages'
/// `no-referrer`: with that, browsers send `Origin: null` on the console's own form posts, and the origin
/// check could not tell them from another site's.
fn html(status: u16, markup: Markup) -> HttpResponse {
    HttpResponse::page(status, "text/html; charset=utf-8", CSP, markup.into_string())
        .set_header("referrer-policy", "same-origin")
}

/// A page that says what went wrong, for requests that never reached a workspace.
fn error_page(status: u16, message: &str) -> HttpResponse {
    html(
        status,
        layout::bare(
            "agentsky console",
            &maud::html! { p.error { (message) } p { a href="/console" { "Back to the console" } } },
        ),
    )
}

/// `GET /console/join?t=…`: an invitation's link, opened signed in; accepting is a form (a GET never joins).
fn join_page(req: &HttpRequest, token: &str) -> HttpResponse {
    let invitation = forms::pairs(&req.query).into_iter().find(|(k, _)| k == "t").map(|(_, v)| v).unwrap_or_default();
    let body = maud::html! {
        p { "You were invited to a workspace. Join it with the account you are signed in as?" }
        form.card method="post" action="/console/join" {
            input type="hidden" name="csrf" value=(auth::csrf_token(token));
            input type="hidden" name="token" value=(invitation);
            button.primary type="submit" { "Join the workspace" }
        }
    };
    html(200, layout::bare("Join a workspace · agentsky", &body))
}

/// `POST /console/join`: accepts the invitation as the signed-in key (`accept_invitation`).
async fn join(cx: &Cx<'_>, req: &HttpRequest, token: &str) -> HttpResponse {
    let form = forms::pairs(&String::from_utf8_lossy(&req.body));
    if !auth::csrf_ok(token, &form) {
        return error_page(403, "This form has expired; reload the page and try again.");
    }
    let token = form.into_iter().find(|(k, _)| k == "token").map(|(_, v)| v).filter(|v| !v.is_empty());
    let joined = match token {
        Some(token) => crate::ops::call::accept_invitation(cx, AcceptInvitation { token }).await,
        None => Err(ApiError::invalid("`token` is required")),
    };
    match joined {
        Ok(joined) => see_other(&format!("/console/w/{}", joined.slug)),
        Err(e) => error_page(e.code.http(), &e.message),
    }
}

/// `POST /console/push/answer` `{"token": …}`: a notification's button answers its request
/// ([`crate::ops::push::answer_from_push`]).
async fn push_answer(cx: &Cx<'_>, req: &HttpRequest) -> HttpResponse {
    let body: serde_json::Value = serde_json::from_slice(&req.body).unwrap_or_default();
    let token = body["token"].as_str().unwrap_or_default();
    match crate::ops::push::answer_from_push(cx, token).await {
        Ok(done) => HttpResponse::json(200, &done),
        Err(e) => {
            let e = e.finish(&cx.request_id);
            HttpResponse::json(e.code.http(), &e.body())
        }
    }
}
