//! The device sign-in page (`/device`) that `sky auth login` sends a person to: they prove an account (its
//! email and one of its write keys, or by creating the account when sign-up is open) and approve or deny
//! the code their terminal shows. The codes and the two operations the CLI calls are
//! [`crate::ops::device`].
//!
//! Must never: let approval widen what the proving key may do (a read-only key cannot approve; a
//! workspace-locked key approves a key locked the same way), or serve the page to another site's form or
//! frame.

use crate::cx::Cx;
use crate::http::{form_value, HttpRequest, HttpResponse};
use crate::ops::device::{display_user_code, normalize_user_code, user_code_hash};
use crate::rules::params;
use crate::rules::{ids, limits, slug};
use crate::store::{self, devices};
use maud::{Markup, PreEscaped, Render, DOCTYPE};
use serde_json::json;

/// Approval-page submissions per caller address per minute: bounds guessing short codes.
const PAGE_POSTS_PER_MIN: u32 = 30;
/// Sign-ups per address per minute, the same bucket `POST /v1/accounts` uses.
const SIGNUPS_PER_MIN: u32 = 20;

/// What the page shows around its forms.
enum Notice<'a> {
    None,
    Error(&'a str),
}

/// `GET /device[?code=BCDF-GHJK]`: asks for the code if there is none, else shows the device and the
/// forms to approve or deny it.
pub async fn page(cx: &Cx<'_>, req: &HttpRequest) -> HttpResponse {
    let typed = req.query_param("code").unwrap_or_default();
    if typed.trim().is_empty() {
        return code_form(200, Notice::None);
    }
    let Some(code) = normalize_user_code(&typed) else {
        return code_form(404, Notice::Error("That is not a sign-in code. Check it against your terminal."));
    };
    approval_form(cx, &code, Notice::None, 200).await
}

/// `POST /device`: a form from the page above (`user_code`, `action` = approve | deny | create, and the
/// account's fields).
pub async fn submit(cx: &Cx<'_>, req: &HttpRequest) -> HttpResponse {
    if !same_origin(req) {
        return html(403, "Refused", maud::html! { p { "This form can only be sent from this server's own page." } });
    }
    if let Err(e) = crate::ops::rate_limit(cx, format!("device-page:{}", cx.client_ip), PAGE_POSTS_PER_MIN).await {
        return html(429, "Slow down", maud::html! { p { (e.message) } });
    }
    let form = Form(String::from_utf8_lossy(&req.body).into_owned());
    let Some(code) = normalize_user_code(&form.get("user_code")) else {
        return code_form(404, Notice::Error("That is not a sign-in code. Check it against your terminal."));
    };
    let hash = user_code_hash(&code);
    let outcome = match form.get("action").as_str() {
        "deny" => match devices::deny(cx.db(), &hash, cx.now_ms).await {
            Ok(Some(device)) => Ok(maud::html! {
                p { "Denied. " b { (device) } " gets no key; your terminal says so too. You can close this page." }
            }),
            Ok(None) => Err(expired_page()),
            Err(e) => Err(internal_page(cx, e)),
        },
        "approve" => approve_with_key(cx, &hash, &form).await,
        "create" => create_and_approve(cx, &hash, &form).await,
        _ => return approval_form(cx, &code, Notice::Error("Choose Approve or Deny."), 400).await,
    };
    match outcome {
        Ok(body) => html(200, "Done", body),
        Err(Refusal::Retry(status, why)) => approval_form(cx, &code, Notice::Error(&why), status).await,
        Err(Refusal::Page(resp)) => resp,
    }
}

/// Why a submission did not go through: show the form again with a reason, or a final page.
enum Refusal {
    Retry(u16, String),
    Page(HttpResponse),
}

fn expired_page() -> Refusal {
    Refusal::Page(code_form(404, Notice::Error("This code expired or was already used. Run `sky auth login` again.")))
}

fn internal_page(cx: &Cx<'_>, cause: impl std::fmt::Display) -> Refusal {
    let e = cx.internal(cause);
    Refusal::Page(html(500, "Something went wrong", maud::html! { p { (e.message) } }))
}

fn approved_page(device: &str, email: &str) -> Markup {
    maud::html! {
        p { "Approved. " b { (device) } " is signed in as " (email) "; go back to your terminal. You can close this page." }
    }
}

/// Approval by an existing account: its email and one of its keys with the write scope.
async fn approve_with_key(cx: &Cx<'_>, hash: &str, form: &Form) -> Result<Markup, Refusal> {
    let email = form.get("email").trim().to_owned();
    let key = form.get("key").trim().to_owned();
    let mismatch = || Refusal::Retry(403, "That email and API key do not belong to the same account.".into());
    if !key.starts_with("ast_") || key.len() > 200 || email.is_empty() {
        return Err(mismatch());
    }
    let caller = match store::keys::authenticate(cx.db(), &ids::hash_secret(&key), cx.now_ms).await {
        // An app's OAuth token mints nothing: the device's key would outlive the app's disconnection.
        Ok(Some(c)) if c.app.is_some() => return Err(mismatch()),
        Ok(Some(c)) => c,
        Ok(None) => return Err(mismatch()),
        Err(e) => return Err(internal_page(cx, e)),
    };
    match store::accounts::id_by_email(cx.db(), &email).await {
        Ok(Some(id)) if id == caller.account_id => {}
        Ok(_) => return Err(mismatch()),
        Err(e) => return Err(internal_page(cx, e)),
    }
    if !caller.can_write {
        return Err(Refusal::Retry(
            403,
            "That key is read-only. Use a key with the write scope (an account's first key has it).".into(),
        ));
    }
    // Told here, where the person can act on it; delivery enforces the cap again.
    match store::keys::active(cx.db(), &caller.account_id).await {
        Ok(n) if n >= limits::MAX_ACTIVE_KEYS => return Err(Refusal::Retry(409, limits::too_many_keys().message)),
        Ok(_) => {}
        Err(e) => return Err(internal_page(cx, e)),
    }
    let lock = caller.locked_workspace_id.as_deref();
    match devices::approve(cx.db(), hash, &caller.account_id, "read write", lock, cx.now_ms).await {
        Ok(Some(device)) => Ok(approved_page(&device, &email)),
        Ok(None) => Err(expired_page()),
        Err(e) => Err(internal_page(cx, e)),
    }
}

/// Approval by a new account, made here (only while sign-up is open): the device's key is its first.
async fn create_and_approve(cx: &Cx<'_>, hash: &str, form: &Form) -> Result<Markup, Refusal> {
    if !cx.env.config.open_signup {
        return Err(Refusal::Retry(403, "Sign-up is closed on this server: sign in with an existing account.".into()));
    }
    if let Err(e) = crate::ops::rate_limit(cx, format!("signup:{}", cx.client_ip), SIGNUPS_PER_MIN).await {
        return Err(Refusal::Retry(429, e.message));
    }
    // The sign-up form's fields keep `create_account`'s rules.
    let asked = json!({ "name": form.get("name").trim(), "email": form.get("email") });
    let p: crate::ops::accounts::CreateAccount = params::decode(asked).map_err(|e| Refusal::Retry(400, e))?;
    let (name, email) = (p.name.into_string(), p.email.as_str().to_owned());
    let account_id = ids::new_id("acct");
    let workspace_id = ids::new_id("ws");
    let base = slug::slugify(&name);
    for attempt in 0..6 {
        let slug = slug::attempt(&base, attempt);
        let account = store::accounts::NewAccount {
            account_id: &account_id,
            name: &name,
            email: &email,
            workspace_id: &workspace_id,
            slug: &slug,
            now_ms: cx.now_ms,
        };
        match devices::create_account_and_approve(cx.db(), &account, hash).await {
            Ok(device) => return Ok(approved_page(&device, &email)),
            Err(e) if e.is_unique_on("account.email") => {
                return Err(Refusal::Retry(
                    409,
                    "An account with this email already exists: sign in with it and one of its keys instead.".into(),
                ))
            }
            Err(e) if e.is_unique_on("workspace.slug") => continue,
            Err(e) => {
                // The batch rolls back when the code stopped being pending (see the store); tell that apart
                // from a real failure.
                return match devices::pending(cx.db(), hash, cx.now_ms).await {
                    Ok(None) => Err(expired_page()),
                    _ => Err(internal_page(cx, e)),
                };
            }
        }
    }
    Err(internal_page(cx, "could not find a free workspace slug"))
}

/// The page's form fields (`application/x-www-form-urlencoded`).
struct Form(String);

impl Form {
    fn get(&self, name: &str) -> String {
        form_value(&self.0, name).unwrap_or_default()
    }
}

/// A browser posting from another site says so in `Origin` (or `Sec-Fetch-Site`); refuse those. Clients
/// that send neither (curl, old browsers) are let through: the form proves the account anyway.
fn same_origin(req: &HttpRequest) -> bool {
    if req.header("sec-fetch-site").is_some_and(|s| s == "cross-site") {
        return false;
    }
    match req.header("origin") {
        None => true,
        Some(origin) => {
            let host = origin.strip_prefix("https://").or_else(|| origin.strip_prefix("http://"));
            host.is_some() && host == req.header("host")
        }
    }
}

async fn approval_form(cx: &Cx<'_>, code: &str, notice: Notice<'_>, status: u16) -> HttpResponse {
    let pending = match devices::pending(cx.db(), &user_code_hash(code), cx.now_ms).await {
        Ok(Some(p)) => p,
        Ok(None) => {
            return code_form(404, Notice::Error("This code expired or was already used. Run `sky auth login` again."))
        }
        Err(e) => return html(500, "Something went wrong", maud::html! { p { (cx.internal(e).message) } }),
    };
    let shown = display_user_code(code);
    let minutes = ((pending.expires_ms - cx.now_ms) / 60_000).max(1);
    let hidden = maud::html! { input type="hidden" name="user_code" value=(shown); };
    let body = maud::html! {
        (notice)
        p {
            b { (pending.device_name) } " asks for an agentsky API key. Approve only if your terminal shows "
            span.code { (shown) } ". This code expires in about " (minutes) " min."
        }
        form method="post" action="/device" {
            h2 { "Sign in" }
            (hidden)
            label { "Email " input name="email" type="email" required autocomplete="username"; }
            label {
                "An API key of your account "
                input name="key" type="password" required placeholder="ast_…" autocomplete="current-password";
            }
            button name="action" value="approve" { "Approve" }
        }
        @if cx.env.config.open_signup {
            form method="post" action="/device" {
                h2 { "New to agentsky?" }
                (hidden)
                label { "Your name " input name="name" required maxlength="100" autocomplete="name"; }
                label { "Email " input name="email" type="email" required autocomplete="email"; }
                button name="action" value="create" { "Create my account and approve" }
            }
        }
        form method="post" action="/device" {
            (hidden)
            p { "Not you, or not now? " button.deny name="action" value="deny" { "Deny" } }
        }
    };
    html(status, "Approve a device", body)
}

fn code_form(status: u16, notice: Notice<'_>) -> HttpResponse {
    let body = maud::html! {
        (notice)
        form method="get" action="/device" {
            label {
                "The code your terminal shows "
                input name="code" required placeholder="BCDF-GHJK" autocomplete="off" autocapitalize="characters";
            }
            button { "Continue" }
        }
    };
    html(status, "Sign in a device", body)
}

impl Render for Notice<'_> {
    fn render(&self) -> Markup {
        match self {
            Notice::None => maud::html! {},
            Notice::Error(why) => maud::html! { p.error { (why) } },
        }
    }
}

/// Its own style, inline: the page stands alone, outside the console's assets.
const STYLE: &str = "body{font:16px system-ui;max-width:34rem;margin:3rem auto;padding:0 1rem}\
label{display:block;margin:.6rem 0}input{display:block;width:100%;font:inherit;padding:.3rem;box-sizing:border-box}\
button{font:inherit;padding:.3rem 1rem;margin-top:.4rem}form{margin:1.5rem 0}\
.code{font:700 1.2rem ui-monospace,monospace;letter-spacing:.1em}.error{color:#b00}.deny{margin-left:.3rem}";

/// The page shell. No scripts, no third-party anything, never framed, never cached, and the code in the
/// URL is not sent on as a referrer.
fn html(status: u16, title: &str, body: Markup) -> HttpResponse {
    let page = maud::html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { (title) " · agentsky" }
                meta name="viewport" content="width=device-width";
                style { (PreEscaped(STYLE)) }
            }
            body { h1 { (title) } (body) }
        }
    };
    HttpResponse::page(
        status,
        "text/html; charset=utf-8",
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
        page.into_string(),
    )
}
