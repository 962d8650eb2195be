//! Signing in to the console and staying safe while signed in: a sign-in with an API key (or a one-time
//! link `sky console` opens) becomes a console session, a random token in an HttpOnly cookie whose hash
//! is kept; every form carries a CSRF token derived from it; every POST must come from this origin.

use super::{forms, html, layout, see_other};
use crate::cx::Cx;
use crate::http::{HttpRequest, HttpResponse};
use crate::rules::{hmac, ids, redirect};
use crate::store::{self, console::LinkOwner, console::SignedIn};
use maud::html as markup;

const COOKIE: &str = "agentsky_console";
/// How long a console sign-in lasts.
const SESSION_MS: i64 = 12 * 3_600_000;
/// Sign-in attempts an address may make a minute.
const LOGINS_PER_MIN: u32 = 10;

/// The CSRF token of a console session: derived from its secret cookie, so nothing more is stored and
/// another site can neither read nor guess it.
pub fn csrf_token(session_token: &str) -> String {
    hex::encode(hmac::hmac_sha256(session_token.as_bytes(), b"agentsky console csrf"))
}

pub fn csrf_ok(session_token: &str, form: &[(String, String)]) -> bool {
    let sent = form.iter().find(|(k, _)| k == "csrf").map_or("", |(_, v)| v.as_str());
    ids::constant_time_eq(sent, &csrf_token(session_token))
}

/// A POST must come from a page of this origin: the browser says where from (`Origin`, else
/// `Sec-Fetch-Site`); a request that says neither comes from no browser page and is let through to the
/// CSRF check.
pub fn same_origin(cx: &Cx<'_>, req: &HttpRequest) -> bool {
    if let Some(origin) = req.header("origin") {
        let own = if cx.base_url.is_empty() { None } else { Some(cx.base_url.as_str()) };
        return own.is_some_and(|o| o.eq_ignore_ascii_case(origin));
    }
    !matches!(req.header("sec-fetch-site"), Some("cross-site" | "same-site"))
}

fn cookie_token(req: &HttpRequest) -> Option<String> {
    let header = req.header("cookie")?;
    header
        .split(';')
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v.to_owned())
        .filter(|v| !v.is_empty() && v.len() < 200)
}

/// The signed-in person and their cookie's token; `None` when the cookie is missing, ended, expired or
/// its key was revoked.
pub async fn signed_in(cx: &Cx<'_>, req: &HttpRequest) -> Option<(SignedIn, String)> {
    let token = cookie_token(req)?;
    match store::console::signed_in(cx.db(), &ids::hash_secret(&token), cx.now_ms).await {
        Ok(Some(who)) => Some((who, token)),
        Ok(None) => None,
        Err(e) => {
            cx.internal(e);
            None
        }
    }
}

/// `Set-Cookie` for a session token (empty and expired to sign out). Secure except on plain-http
/// loopback, where browsers would drop a Secure cookie.
fn set_cookie(cx: &Cx<'_>, token: &str, max_age_s: i64) -> String {
    let secure = if cx.base_url.starts_with("http://") { "" } else { "; Secure" };
    format!("{COOKIE}={token}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age_s}{secure}")
}

/// Where to go after signing in: a console page, or an MCP client's consent page; another path of this
/// site goes to the console. A target the redirect rule refuses is an error naming `next`.
fn next_path(raw: Option<&str>) -> Result<String, String> {
    let Some(raw) = raw.filter(|r| !r.is_empty()) else { return Ok("/console".to_owned()) };
    let path = redirect::local_path("next", raw)?;
    // An MCP client's sign-in returns to its consent page.
    let followed = path.starts_with("/console") || path.starts_with("/oauth/authorize?");
    Ok(if followed { path } else { "/console" }.to_owned())
}

/// Opens a console session for a key and sends the browser on.
async fn open_session(cx: &Cx<'_>, key_id: &str, next: &str) -> HttpResponse {
    let token = ids::new_secret("");
    let id = ids::new_id("csn");
    let expires = cx.now_ms + SESSION_MS;
    if let Err(e) =
        store::console::create_session(cx.db(), &id, &ids::hash_secret(&token), key_id, cx.now_ms, expires).await
    {
        let e = cx.internal(e);
        return super::error_page(500, &e.message);
    }
    see_other(next).with_header("set-cookie", set_cookie(cx, &token, SESSION_MS / 1000))
}

/// `GET /console/login`
pub fn login_page(req: &HttpRequest) -> HttpResponse {
    let next = forms::pairs(&req.query).into_iter().find(|(k, _)| k == "next").map(|(_, v)| v);
    match next_path(next.as_deref()) {
        Ok(next) => login_form(&next, None),
        // Still a way to sign in: to the console.
        Err(why) => login_form("/console", Some((400, &why))),
    }
}

/// The sign-in form, returning to `next` (already checked), with what went wrong and its status.
fn login_form(next: &str, error: Option<(u16, &str)>) -> HttpResponse {
    let body = markup! {
        @if let Some((_, e)) = error { p.error role="alert" { (e) } }
        form.card method="post" action="/console/login" {
            input type="hidden" name="next" value=(next);
            label { "API key" input type="password" name="key" autocomplete="current-password" required placeholder="ast_…"; }
            button.primary type="submit" { "Sign in" }
        }
        p.muted { "A console opened with a read-only key can look but not change anything. From a terminal, "
            code { "sky console" } " opens it already signed in." }
    };
    html(error.map_or(200, |(status, _)| status), layout::bare("Sign in · agentsky", &body))
}

/// `POST /console/login`: a key from the form becomes a console session. Where it returns to is checked
/// first: a session is never opened for an answer that cannot be sent.
pub async fn login(cx: &Cx<'_>, req: &HttpRequest) -> HttpResponse {
    if !same_origin(cx, req) {
        return super::error_page(403, "This form was sent from another site, so it was not acted on.");
    }
    let form = forms::pairs(&String::from_utf8_lossy(&req.body));
    let field = |name: &str| form.iter().find(|(k, _)| k == name).map(|(_, v)| v.trim().to_owned());
    // Not trimmed: a line break at its end is refused like any other.
    let next = form.iter().find(|(k, _)| k == "next").map(|(_, v)| v.as_str());
    let next = match next_path(next) {
        Ok(next) => next,
        Err(why) => return login_form("/console", Some((400, &format!("{why}; you were not signed in.")))),
    };
    if let Err(e) = crate::domain::rate::rate_limit(cx, format!("console-login:{}", cx.client_ip), LOGINS_PER_MIN).await
    {
        return login_form(&next, Some((401, &e.message)));
    }
    let key = field("key").unwrap_or_default();
    let bad = || login_form(&next, Some((401, "That key is not a live agentsky API key.")));
    if !key.starts_with("ast_") || key.len() > 200 {
        return bad();
    }
    match store::keys::authenticate(cx.db(), &ids::hash_secret(&key), cx.now_ms).await {
        // An app's token is bound to `/v1/mcp`; a console session opened with it would outlive nothing
        // and do everything the console does.
        Ok(Some(caller)) if caller.app.is_some() => login_form(
            &next,
            Some((
                401,
                "That is an app's OAuth access token: it works only for MCP at /v1/mcp. Sign in with an API key.",
            )),
        ),
        Ok(Some(caller)) => open_session(cx, &caller.key_id, &next).await,
        Ok(None) => bad(),
        Err(e) => super::error_page(500, &cx.internal(e).message),
    }
}

/// `GET /console/enter?t=…`: a one-time link from `sky console`, used once within a minute. In a browser
/// signed in as another account it asks first, so a link someone else made cannot quietly swap whose
/// console this is (login CSRF); the answer is [`enter_confirmed`]. Every answer sends no referrer, so the
/// token in the address goes nowhere.
pub async fn enter(cx: &Cx<'_>, req: &HttpRequest) -> HttpResponse {
    let token = match link_token(&forms::pairs(&req.query)) {
        Ok(token) => token,
        Err(refused) => return no_referrer(refused),
    };
    if let Some((who, session)) = signed_in(cx, req).await {
        match store::console::link_owner(cx.db(), &ids::hash_secret(&token), cx.now_ms).await {
            Ok(Some(owner)) if owner.account_id != who.caller.account_id => {
                return no_referrer(confirm_page(&who, &owner, &session, &token))
            }
            Ok(Some(_)) => {}
            Ok(None) => return no_referrer(link_gone()),
            Err(e) => return no_referrer(super::error_page(500, &cx.internal(e).message)),
        }
    }
    no_referrer(match use_link(cx, &token).await {
        // The redirect drops the token from the address bar.
        Ok(key_id) => open_session(cx, &key_id, "/console").await,
        Err(refused) => refused,
    })
}

/// `POST /console/enter`: continue as the link's account, from [`confirm_page`]'s form. The sign-in it
/// replaces ends (its cookie is overwritten anyway).
pub async fn enter_confirmed(cx: &Cx<'_>, req: &HttpRequest) -> HttpResponse {
    no_referrer(switch(cx, req).await)
}

async fn switch(cx: &Cx<'_>, req: &HttpRequest) -> HttpResponse {
    if !same_origin_without_referrer(cx, req) {
        return super::error_page(403, "This form was sent from another site, so it was not acted on.");
    }
    let form = forms::pairs(&String::from_utf8_lossy(&req.body));
    let expired = || super::error_page(403, "This form has expired; open the sign-in link again.");
    let Some((_, session)) = signed_in(cx, req).await else { return expired() };
    if !csrf_ok(&session, &form) {
        return expired();
    }
    let token = match link_token(&form) {
        Ok(token) => token,
        Err(refused) => return refused,
    };
    let key_id = match use_link(cx, &token).await {
        Ok(key_id) => key_id,
        Err(refused) => return refused,
    };
    if let Err(e) = store::console::end_session(cx.db(), &ids::hash_secret(&session), cx.now_ms).await {
        cx.internal(e);
    }
    open_session(cx, &key_id, "/console").await
}

/// [`same_origin`] for a form on a page that sends no referrer: its browser says `Origin: null` then
/// (Fetch, "serializing a request origin"), so `Sec-Fetch-Site` decides. Another site's sandboxed frame
/// says null too, but never same-origin; the CSRF token is checked either way.
fn same_origin_without_referrer(cx: &Cx<'_>, req: &HttpRequest) -> bool {
    match req.header("origin") {
        Some("null") => req.header("sec-fetch-site") == Some("same-origin"),
        _ => same_origin(cx, req),
    }
}

/// The `t` of a one-time link, or the page that says it is incomplete.
fn link_token(pairs: &[(String, String)]) -> Result<String, HttpResponse> {
    let token = pairs.iter().find(|(k, _)| k == "t").map(|(_, v)| v.clone()).unwrap_or_default();
    if token.is_empty() || token.len() > 200 {
        return Err(super::error_page(400, "This sign-in link is incomplete."));
    }
    Ok(token)
}

fn link_gone() -> HttpResponse {
    super::error_page(
        410,
        "This sign-in link was already used or has expired. Run `sky console` again, or sign in with a key.",
    )
}

/// Uses a one-time link up: the key it signs in with.
async fn use_link(cx: &Cx<'_>, token: &str) -> Result<String, HttpResponse> {
    match store::console::use_link(cx.db(), &ids::hash_secret(token), cx.now_ms).await {
        Ok(Some(key_id)) => Ok(key_id),
        Ok(None) => Err(link_gone()),
        Err(e) => Err(super::error_page(500, &cx.internal(e).message)),
    }
}

/// "Continue as …?": another account's link in a browser signed in already. The form uses the link up and
/// switches; "Stay as …" is a plain link to the console, and the sign-in link expires unused.
fn confirm_page(who: &SignedIn, owner: &LinkOwner, session: &str, token: &str) -> HttpResponse {
    let body = markup! {
        p { "This sign-in link is for " strong { (owner.name) } " (" (owner.email) "), but this browser is signed in as "
            strong { (who.name) } " (" (who.email) ")." }
        form.card method="post" action="/console/enter" {
            input type="hidden" name="csrf" value=(csrf_token(session));
            input type="hidden" name="t" value=(token);
            button.primary type="submit" { "Continue as " (owner.name) }
        }
        p { a href="/console" { "Stay as " (who.name) } }
    };
    html(200, layout::bare(&format!("Continue as {}? · agentsky", owner.name), &body))
}

/// The answer with no referrer: the token in `/console/enter`'s address goes nowhere, nor through the
/// redirect (a redirect's own policy applies to where it leads).
fn no_referrer(resp: HttpResponse) -> HttpResponse {
    resp.set_header("referrer-policy", "no-referrer")
}

/// `POST /console/logout`
pub async fn logout(cx: &Cx<'_>, req: &HttpRequest, token: &str) -> HttpResponse {
    let form = forms::pairs(&String::from_utf8_lossy(&req.body));
    if !csrf_ok(token, &form) {
        return super::error_page(403, "This form has expired; reload the page and try again.");
    }
    if let Err(e) = store::console::end_session(cx.db(), &ids::hash_secret(token), cx.now_ms).await {
        return super::error_page(500, &cx.internal(e).message);
    }
    see_other("/console/login").with_header("set-cookie", set_cookie(cx, "", 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn after_sign_in_only_console_paths_are_followed() {
        assert_eq!(next_path(Some("/console/w/ada/board")).unwrap(), "/console/w/ada/board");
        assert_eq!(next_path(Some("/oauth/authorize?client_id=a")).unwrap(), "/oauth/authorize?client_id=a");
        for elsewhere in [None, Some(""), Some("/v1/keys")] {
            assert_eq!(next_path(elsewhere).unwrap(), "/console", "{elsewhere:?}");
        }
        for bad in ["https://evil.example/", "//evil.example/console", "/console\\@evil", "/console\r\nX: 1"] {
            assert!(next_path(Some(bad)).unwrap_err().starts_with("`next` "), "{bad:?}");
        }
    }

    #[test]
    fn a_csrf_token_is_bound_to_its_session() {
        let form = |t: &str| vec![("csrf".to_owned(), t.to_owned())];
        assert!(csrf_ok("session-a", &form(&csrf_token("session-a"))));
        assert!(!csrf_ok("session-b", &form(&csrf_token("session-a"))));
        assert!(!csrf_ok("session-a", &[]));
    }
}
