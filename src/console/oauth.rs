//! `/oauth/authorize`: the consent page of OAuth sign-in for MCP clients ([`crate::oauth`]). The person
//! signs in through the console's own session (or is sent to sign in first and returned here), sees the
//! client's name and where it will redirect, and picks the workspace and `read` or `read write`, never
//! more than the key their console was opened with. The decision is a CSRF-protected form; approving
//! records a grant and answers the client with a single-use code and `iss` (RFC 9207).
//!
//! Errors in `client_id` or `redirect_uri` are shown here and never redirected (OAuth 2.1 §4.1.2.1), so
//! this page cannot be used to bounce a browser to an unregistered address.

use super::{auth, error_page, forms, layout, see_other};
use crate::cx::Cx;
use crate::http::{HttpRequest, HttpResponse};
use crate::oauth;
use crate::rules::ids;
use crate::rules::oauth::{self as rules, OAuthError};
use crate::store;
use maud::html as markup;

/// The parameters of an authorization request, checked far enough to answer at the redirect URI.
struct Request {
    client: store::oauth::ClientRow,
    redirect_uri: String,
    state: Option<String>,
    /// Everything the form must carry back, as received.
    params: Vec<(String, String)>,
}

fn get<'p>(params: &'p [(String, String)], name: &str) -> Option<&'p str> {
    params.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str()).filter(|v| !v.is_empty())
}

/// The fields an authorization request is made of; the form carries back only these.
const FIELDS: [&str; 8] = [
    "response_type",
    "client_id",
    "redirect_uri",
    "state",
    "scope",
    "code_challenge",
    "code_challenge_method",
    "resource",
];

/// Resolves the client and redirect URI; an `Err` is a page shown here, never a redirect. A client named
/// by its metadata document is fetched at most 10 times a minute per address unless `signed_in`.
async fn client_and_redirect(
    cx: &Cx<'_>,
    req: &HttpRequest,
    params: Vec<(String, String)>,
    signed_in: bool,
) -> Result<Request, HttpResponse> {
    let params: Vec<(String, String)> = params.into_iter().filter(|(k, _)| FIELDS.contains(&k.as_str())).collect();
    let page = |e: OAuthError| error_page(400, &format!("This sign-in request is not valid: {}", e.description));
    let Some(client_id) = get(&params, "client_id") else {
        return Err(page(OAuthError::new("invalid_request", "`client_id` is missing")));
    };
    let client = oauth::resolve_client(cx, req, client_id, signed_in).await.map_err(|e| match e.status {
        400 => page(e.error),
        status => error_page(status, &e.error.description),
    })?;
    let redirect_uri = match get(&params, "redirect_uri") {
        Some(r) if rules::redirect_matches(&client.redirect_uris, r) => r.to_owned(),
        Some(_) => {
            return Err(page(OAuthError::new("invalid_request", "`redirect_uri` is not one this client registered")))
        }
        None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
        None => return Err(page(OAuthError::new("invalid_request", "`redirect_uri` is required"))),
    };
    // Its answer goes into a `Location` header: refused here, before consent, when one cannot carry it
    // (a loopback URI matches on its parsed form, which drops a line break the raw one still has).
    if let Some(why) = crate::rules::redirect::unsendable(&redirect_uri) {
        return Err(page(OAuthError::new("invalid_request", format!("`redirect_uri` {why}"))));
    }
    let state = get(&params, "state").map(str::to_owned);
    Ok(Request { client, redirect_uri, state, params })
}

/// The redirect back to the client with `pairs`, `state` and `iss`.
fn back(r: &Request, issuer: &str, pairs: &[(&str, &str)]) -> HttpResponse {
    let mut url = r.redirect_uri.clone();
    url.push(if url.contains('?') { '&' } else { '?' });
    let mut q = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        q.append_pair(k, v);
    }
    if let Some(s) = &r.state {
        q.append_pair("state", s);
    }
    q.append_pair("iss", issuer);
    url.push_str(&q.finish());
    see_other(&url)
}

fn refuse(r: &Request, issuer: &str, e: &OAuthError) -> HttpResponse {
    back(r, issuer, &[("error", e.error), ("error_description", &e.description)])
}

/// Checks what is answered at the redirect URI: the response type, PKCE, scope and resource. Returns the
/// scopes asked for.
fn check_request(r: &Request, resource: &str) -> Result<&'static str, OAuthError> {
    if get(&r.params, "response_type") != Some("code") {
        return Err(OAuthError::new("unsupported_response_type", "`response_type` must be code"));
    }
    rules::check_challenge(
        get(&r.params, "code_challenge").unwrap_or_default(),
        get(&r.params, "code_challenge_method"),
    )?;
    if let Some(res) = get(&r.params, "resource") {
        if !rules::resource_matches(res, resource) {
            return Err(OAuthError::new(
                "invalid_target",
                format!("`resource` must be this server's MCP endpoint, {resource}"),
            ));
        }
    }
    rules::parse_scope(get(&r.params, "scope"))
}

/// The consent page's policy: the console's, except that the form may lead on to the client's redirect
/// URI (browsers apply `form-action` to the redirect a form's answer makes).
fn page(cx: &Cx<'_>, r: &Request, body: maud::Markup) -> HttpResponse {
    let target = match url::Url::parse(&r.redirect_uri) {
        Ok(u) if u.scheme() == "http" || u.scheme() == "https" => u.origin().ascii_serialization(),
        Ok(u) => format!("{}:", u.scheme()),
        Err(_) => String::new(),
    };
    let _ = cx;
    let csp = super::CSP.replace("form-action 'self'", &format!("form-action 'self' {target}"));
    HttpResponse::page(
        200,
        "text/html; charset=utf-8",
        &csp,
        layout::bare("Connect an app · agentsky", &body).into_string(),
    )
    .set_header("referrer-policy", "same-origin")
    .set_header("x-frame-options", "DENY")
    .set_header("cache-control", "no-store")
}

/// `GET` and `POST /oauth/authorize`.
pub async fn authorize(cx: Cx<'_>, req: &HttpRequest) -> HttpResponse {
    let Some(names) = oauth::names(&cx) else {
        return error_page(
            404,
            "This deployment cannot name itself (PUBLIC_BASE_URL is not set), so it offers no OAuth sign-in.",
        );
    };
    let posted = req.method == "POST";
    if !posted && req.method != "GET" {
        return error_page(405, "Use GET or POST.");
    }
    let params = if posted { forms::pairs(&String::from_utf8_lossy(&req.body)) } else { forms::pairs(&req.query) };
    let signed_in = auth::signed_in(&cx, req).await;
    let r = match client_and_redirect(&cx, req, params.clone(), signed_in.is_some()).await {
        Ok(r) => r,
        Err(page) => return page,
    };
    let asked = match check_request(&r, &names.resource) {
        Ok(s) => s,
        Err(e) => return refuse(&r, &names.issuer, &e),
    };
    let mut cx = cx;
    let Some((who, token)) = signed_in else {
        if posted {
            return error_page(401, "Your console sign-in ended; start connecting the app again.");
        }
        return see_other(&format!("/console/login?next={}", forms::encode(&forms::path_and_query(req))));
    };
    cx.caller = Some(who.caller.clone());
    let caller = &who.caller;
    // The most this console may hand on: its key's scope and workspace lock.
    let most = if caller.can_write { asked } else { "read" };
    let workspaces: Vec<_> = caller
        .memberships
        .iter()
        .filter(|m| caller.locked_workspace_id.as_ref().is_none_or(|l| *l == m.workspace_id))
        .collect();
    if !posted {
        let host = rules::redirect_host(&r.redirect_uri);
        let body = markup! {
            form.card method="post" action="/oauth/authorize" {
                h2 { "Connect " (r.client.client_name) "?" }
                p { strong { (r.client.client_name) } " wants to use agentsky as " (who.name) " (" (who.email) ")." }
                p.muted { "After you decide, your browser returns to " code { (host) } "." }
                @if r.client.kind == "metadata_document" { p.muted.small { "Client: " code { (r.client.client_id) } } }
                input type="hidden" name="csrf" value=(auth::csrf_token(&token));
                @for (k, v) in &r.params { input type="hidden" name=(k) value=(v); }
                label { "Workspace" select name="workspace" required {
                    @for m in &workspaces { option value=(m.slug) { (m.name) " (" (m.slug) ")" } }
                } }
                label { "Access" select name="access" {
                    option value="read" selected[most == "read"] { "read — list and read" }
                    @if most == "read write" { option value="read write" selected { "read and write — also start sessions and change things" } }
                } }
                div.row {
                    button.primary type="submit" name="decision" value="approve" { "Allow" }
                    button type="submit" name="decision" value="deny" { "Deny" }
                }
            }
        };
        return page(&cx, &r, body);
    }
    if !auth::same_origin(&cx, req) {
        return error_page(403, "This form was sent from another site, so it was not acted on.");
    }
    if !auth::csrf_ok(&token, &params) {
        return error_page(403, "This form has expired; reload the page and try again.");
    }
    let field = |name: &str| params.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str()).unwrap_or_default();
    if field("decision") != "approve" {
        return refuse(&r, &names.issuer, &OAuthError::new("access_denied", "the person denied access"));
    }
    let Some(ws) = workspaces.iter().find(|m| m.slug == field("workspace")) else {
        return error_page(403, "Choose one of your workspaces this console may use.");
    };
    let scopes = match field("access") {
        "read" => "read",
        "read write" if most == "read write" => "read write",
        _ => return error_page(403, "That access is more than this request or this console's key allows."),
    };
    let code = ids::new_secret("asc_");
    let grant = store::oauth::NewGrant {
        grant_id: &ids::new_id("oag"),
        account_id: &caller.account_id,
        client_id: &r.client.client_id,
        client_name: &r.client.client_name,
        redirect_uri: &r.redirect_uri,
        redirect_host: &rules::redirect_host(&r.redirect_uri),
        workspace_id: &ws.workspace_id,
        scopes,
        resource: &names.resource,
        code_hash: &ids::hash_secret(&code),
        code_challenge: get(&r.params, "code_challenge").unwrap_or_default(),
        now_ms: cx.now_ms,
        code_expires_ms: cx.now_ms + oauth::CODE_MS,
    };
    if let Err(e) = store::oauth::consent(cx.db(), &grant).await {
        return error_page(503, &cx.internal(e).message);
    }
    back(&r, &names.issuer, &[("code", &code)])
}
