//! Device sign-in for the `sky` CLI, in the manner of RFC 8628 (OAuth 2.0 Device Authorization Grant):
//! `sky auth login` asks for a code (`POST /v1/device/code`), shows the person a short code and a link,
//! and polls `POST /v1/device/token`. The person opens `/device`, proves an account (its email and one of
//! its write keys, or by creating the account when sign-up is open) and approves or denies. The next
//! poll mints a new API key named for the device, once.
//!
//! Must never: keep either code or the minted key in clear (only SHA-256 digests are stored, and the key
//! exists only in the poll's response), let approval widen what the proving key may do (a read-only key
//! cannot approve; a workspace-locked key approves a key locked the same way), or serve the page to
//! another site's form or frame.

use crate::cx::Cx;
use crate::error::{ApiError, Code};
use crate::http::{form_value, HttpRequest, HttpResponse};
use crate::rules::html::escape;
use crate::rules::params::{self, Text};
use crate::rules::{ids, limits, slug};
use crate::store::{self, devices};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// How long a code may wait for a person (RFC 8628 suggests minutes, not hours).
const EXPIRES_MS: i64 = 15 * 60_000;
/// How often the CLI may poll.
const INTERVAL_MS: i64 = 5_000;
/// A poll this much early is still on time: network jitter is not impatience.
const POLL_SLACK_MS: i64 = 1_000;
/// Codes issued per caller address per minute.
const CODES_PER_MIN: u32 = 10;
/// Polls per caller address per minute (one CLI polls 12 times a minute).
const POLLS_PER_MIN: u32 = 120;
/// Approval-page submissions per caller address per minute: bounds guessing short codes.
const PAGE_POSTS_PER_MIN: u32 = 30;
/// Sign-ups per address per minute, the same bucket `POST /v1/accounts` uses.
const SIGNUPS_PER_MIN: u32 = 20;

/// RFC 8628 §6.1: consonants only, so no code spells a word and none is mistaken for a digit.
const USER_CODE_ALPHABET: &[u8; 20] = b"BCDFGHJKLMNPQRSTVWXZ";
const USER_CODE_LEN: usize = 8;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestDeviceCode {
    /// What the new key will be called, 1–100 characters; `sky` sends `sky on <host name>`.
    pub device_name: Text<1, 100>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct DeviceCode {
    /// The secret to poll `POST /v1/device/token` with. Never shown to the person.
    pub device_code: String,
    /// The short code the person checks on the approval page, e.g. `BCDF-GHJK`.
    pub user_code: String,
    /// The approval page.
    pub verification_uri: String,
    /// The approval page with the code filled in: the link to show.
    pub verification_uri_complete: String,
    /// Seconds until the code expires.
    pub expires_in: i64,
    /// Seconds to wait between polls.
    pub interval: i64,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PollDeviceToken {
    /// The `device_code` from `POST /v1/device/code`.
    pub device_code: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct DeviceToken {
    /// The new API key, `ast_…`, named for the device. Returned once; only its SHA-256 is kept.
    pub key: String,
    pub key_id: String,
    pub prefix: String,
    pub scopes: Vec<String>,
    /// The slug of the workspace calls use by default: the key's lock, else the personal workspace.
    pub workspace: String,
    /// The account's email.
    pub email: String,
}

/// A fresh short code, e.g. `BCDFGHJK` (shown as `BCDF-GHJK`), drawn without modulo bias.
fn new_user_code() -> String {
    let mut out = String::with_capacity(USER_CODE_LEN);
    while out.len() < USER_CODE_LEN {
        for b in ids::random_bytes::<16>() {
            // 240 is the largest multiple of 20 below 256.
            if b < 240 && out.len() < USER_CODE_LEN {
                out.push(USER_CODE_ALPHABET[(b % 20) as usize] as char);
            }
        }
    }
    out
}

/// `BCDF-GHJK`, `bcdfghjk`, ` bcdf ghjk ` → `BCDFGHJK`; `None` when it cannot be one of ours.
pub fn normalize_user_code(typed: &str) -> Option<String> {
    let code: String =
        typed.chars().filter(|c| !matches!(c, '-' | ' ' | '\t')).map(|c| c.to_ascii_uppercase()).collect();
    (code.len() == USER_CODE_LEN && code.bytes().all(|b| USER_CODE_ALPHABET.contains(&b))).then_some(code)
}

fn display_user_code(code: &str) -> String {
    format!("{}-{}", &code[..4], &code[4..])
}

/// What is stored of a short code. Salted by purpose so it never equals another digest in the database.
fn user_code_hash(code: &str) -> String {
    ids::hash_secret(&format!("device-user-code:{code}"))
}

/// POST /v1/device/code
pub async fn request_code(cx: &Cx<'_>, p: RequestDeviceCode) -> Result<DeviceCode, ApiError> {
    crate::ops::rate_limit(cx, format!("device-code:{}", cx.client_ip), CODES_PER_MIN).await?;
    let page = format!("{}/device", cx.link_base()?);
    let device_code = ids::new_secret("skydc_");
    for _ in 0..5 {
        let user_code = new_user_code();
        let row = devices::NewDeviceCode {
            device_code_id: &ids::new_id("dev"),
            device_hash: &ids::hash_secret(&device_code),
            user_code_hash: &user_code_hash(&user_code),
            device_name: p.device_name.trim(),
            interval_ms: INTERVAL_MS,
            now_ms: cx.now_ms,
            expires_ms: cx.now_ms + EXPIRES_MS,
        };
        match devices::create(cx.db(), &row, cx.now_ms - 86_400_000).await {
            Ok(()) => {
                let shown = display_user_code(&user_code);
                return Ok(DeviceCode {
                    device_code,
                    verification_uri_complete: format!("{page}?code={shown}"),
                    verification_uri: page.clone(),
                    user_code: shown,
                    expires_in: EXPIRES_MS / 1000,
                    interval: INTERVAL_MS / 1000,
                });
            }
            Err(e) if e.is_unique_on("device_code.user_code_hash") => continue,
            Err(e) => return Err(ApiError::cause(e)),
        }
    }
    Err(ApiError::cause("could not draw a free user code"))
}

/// POST /v1/device/token
pub async fn poll(cx: &Cx<'_>, p: PollDeviceToken) -> Result<DeviceToken, ApiError> {
    crate::ops::rate_limit(cx, format!("device-token:{}", cx.client_ip), POLLS_PER_MIN).await?;
    let expired = || ApiError::new(Code::ExpiredToken, "this sign-in code expired or was already used; sign in again");
    if !p.device_code.starts_with("skydc_") || p.device_code.len() > 100 {
        return Err(expired());
    }
    let device_hash = ids::hash_secret(&p.device_code);
    let Some(code) = devices::poll(cx.db(), &device_hash, cx.now_ms).await? else {
        return Err(expired());
    };
    match code.status.as_str() {
        // An approval just before expiry is still collected by the next poll.
        "approved" if code.expires_ms + 2 * code.interval_ms <= cx.now_ms => return Err(expired()),
        "approved" => {}
        "denied" => return Err(ApiError::new(Code::AccessDenied, "the sign-in was denied in the browser")),
        "pending" if code.expires_ms <= cx.now_ms => return Err(expired()),
        "pending" if code.prev_poll_ms.is_some_and(|prev| cx.now_ms - prev < code.interval_ms - POLL_SLACK_MS) => {
            return Err(ApiError::new(
                Code::SlowDown,
                format!("polling too fast: wait {} s between polls", code.interval_ms / 1000 + 5),
            ))
        }
        "pending" => {
            return Err(ApiError::new(
                Code::AuthorizationPending,
                format!("waiting for the code to be approved at {}/device", cx.base_url),
            ))
        }
        _ => return Err(expired()),
    }
    for _ in 0..3 {
        let key = ids::new_secret("ast_");
        let minted = devices::NewDeviceKey {
            key_id: &ids::new_id("key"),
            key_hash: &ids::hash_secret(&key),
            prefix: &ids::key_prefix(&key),
            now_ms: cx.now_ms,
        };
        match devices::deliver(cx.db(), &device_hash, &minted, limits::MAX_ACTIVE_KEYS).await {
            Ok(devices::Delivery::Delivered(d)) => {
                return Ok(DeviceToken {
                    key_id: minted.key_id.to_owned(),
                    prefix: minted.prefix.to_owned(),
                    key,
                    scopes: d.scopes.split(' ').map(str::to_owned).collect(),
                    workspace: d.workspace,
                    email: d.email,
                })
            }
            // A racing poll collected it first.
            Ok(devices::Delivery::Gone) => return Err(expired()),
            // The approval stands: once a key is revoked, the next poll collects this one.
            Ok(devices::Delivery::TooManyKeys) => return Err(limits::too_many_keys()),
            Err(e) if store::keys::is_hash_collision(&e) => continue,
            Err(e) => return Err(ApiError::cause(e)),
        }
    }
    Err(ApiError::cause("could not mint a unique key"))
}

// ── The approval page ──

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
        return html(403, "Refused", "<p>This form can only be sent from this server's own page.</p>");
    }
    if let Err(e) = crate::ops::rate_limit(cx, format!("device-page:{}", cx.client_ip), PAGE_POSTS_PER_MIN).await {
        return html(429, "Slow down", &format!("<p>{}</p>", escape(&e.message)));
    }
    let form = Form(String::from_utf8_lossy(&req.body).into_owned());
    let Some(code) = normalize_user_code(&form.get("user_code")) else {
        return code_form(404, Notice::Error("That is not a sign-in code. Check it against your terminal."));
    };
    let hash = user_code_hash(&code);
    let outcome = match form.get("action").as_str() {
        "deny" => match devices::deny(cx.db(), &hash, cx.now_ms).await {
            Ok(Some(device)) => Ok(format!(
                "<p>Denied. <b>{}</b> gets no key; your terminal says so too. You can close this page.</p>",
                escape(&device)
            )),
            Ok(None) => Err(expired_page()),
            Err(e) => Err(internal_page(cx, e)),
        },
        "approve" => approve_with_key(cx, &hash, &form).await,
        "create" => create_and_approve(cx, &hash, &form).await,
        _ => return approval_form(cx, &code, Notice::Error("Choose Approve or Deny."), 400).await,
    };
    match outcome {
        Ok(body) => html(200, "Done", &body),
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
    Refusal::Page(html(500, "Something went wrong", &format!("<p>{}</p>", escape(&e.message))))
}

fn approved_page(device: &str, email: &str) -> String {
    format!(
        "<p>Approved. <b>{}</b> is signed in as {}; go back to your terminal. You can close this page.</p>",
        escape(device),
        escape(email)
    )
}

/// Approval by an existing account: its email and one of its keys with the write scope.
async fn approve_with_key(cx: &Cx<'_>, hash: &str, form: &Form) -> Result<String, Refusal> {
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
async fn create_and_approve(cx: &Cx<'_>, hash: &str, form: &Form) -> Result<String, Refusal> {
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
        Err(e) => return html(500, "Something went wrong", &format!("<p>{}</p>", escape(&cx.internal(e).message))),
    };
    let shown = display_user_code(code);
    let minutes = ((pending.expires_ms - cx.now_ms) / 60_000).max(1);
    let hidden = format!("<input type=\"hidden\" name=\"user_code\" value=\"{}\">", escape(&shown));
    let signup = if cx.env.config.open_signup {
        format!(
            "<form method=\"post\" action=\"/device\"><h2>New to agentsky?</h2>{hidden}\
<label>Your name <input name=\"name\" required maxlength=\"100\" autocomplete=\"name\"></label>\
<label>Email <input name=\"email\" type=\"email\" required autocomplete=\"email\"></label>\
<button name=\"action\" value=\"create\">Create my account and approve</button></form>"
        )
    } else {
        String::new()
    };
    let body = format!(
        "{notice}<p><b>{device}</b> asks for an agentsky API key. Approve only if your terminal shows \
<span class=\"code\">{shown}</span>. This code expires in about {minutes} min.</p>\
<form method=\"post\" action=\"/device\"><h2>Sign in</h2>{hidden}\
<label>Email <input name=\"email\" type=\"email\" required autocomplete=\"username\"></label>\
<label>An API key of your account <input name=\"key\" type=\"password\" required placeholder=\"ast_…\" \
autocomplete=\"current-password\"></label>\
<button name=\"action\" value=\"approve\">Approve</button></form>\
{signup}\
<form method=\"post\" action=\"/device\">{hidden}<p>Not you, or not now? \
<button name=\"action\" value=\"deny\" class=\"deny\">Deny</button></p></form>",
        notice = notice_html(&notice),
        device = escape(&pending.device_name),
    );
    html(status, "Approve a device", &body)
}

fn code_form(status: u16, notice: Notice<'_>) -> HttpResponse {
    let body = format!(
        "{}<form method=\"get\" action=\"/device\"><label>The code your terminal shows \
<input name=\"code\" required placeholder=\"BCDF-GHJK\" autocomplete=\"off\" autocapitalize=\"characters\"></label>\
<button>Continue</button></form>",
        notice_html(&notice)
    );
    html(status, "Sign in a device", &body)
}

fn notice_html(notice: &Notice<'_>) -> String {
    match notice {
        Notice::None => String::new(),
        Notice::Error(why) => format!("<p class=\"error\">{}</p>", escape(why)),
    }
}

/// The page shell. `body` is already escaped HTML. No scripts, no third-party anything, never framed,
/// never cached, and the code in the URL is not sent on as a referrer.
fn html(status: u16, title: &str, body: &str) -> HttpResponse {
    let page = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title} · agentsky</title>\
<meta name=\"viewport\" content=\"width=device-width\"><style>body{{font:16px system-ui;max-width:34rem;margin:3rem auto;\
padding:0 1rem}}label{{display:block;margin:.6rem 0}}input{{display:block;width:100%;font:inherit;padding:.3rem;\
box-sizing:border-box}}button{{font:inherit;padding:.3rem 1rem;margin-top:.4rem}}form{{margin:1.5rem 0}}\
.code{{font:700 1.2rem ui-monospace,monospace;letter-spacing:.1em}}.error{{color:#b00}}.deny{{margin-left:.3rem}}</style>\
</head><body><h1>{title}</h1>{body}</body></html>",
        title = escape(title),
    );
    HttpResponse::page(
        status,
        "text/html; charset=utf-8",
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
        page,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_codes_use_the_consonant_alphabet_and_read_back_however_typed() {
        for _ in 0..50 {
            let code = new_user_code();
            assert_eq!(code.len(), 8);
            assert_eq!(normalize_user_code(&code).as_deref(), Some(code.as_str()));
            let shown = display_user_code(&code);
            assert_eq!(normalize_user_code(&shown.to_lowercase()).as_deref(), Some(code.as_str()));
        }
        assert_eq!(normalize_user_code(" bcdf-ghjk ").as_deref(), Some("BCDFGHJK"));
        for bad in ["", "BCDF", "BCDF-GHJKL", "ABCD-EFGH", "BCDF-GHJ1", "BCDF-GHJ<"] {
            assert_eq!(normalize_user_code(bad), None, "{bad}");
        }
    }
}
