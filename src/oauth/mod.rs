//! OAuth 2.1 authorization for MCP clients that cannot send a bearer header (MCP authorization spec,
//! 2025-06-18 and later): discovery (RFC 9728 protected-resource metadata, RFC 8414 server metadata),
//! clients (Client ID Metadata Documents fetched through [`crate::egress`], guarded because anyone may name
//! one before signing in ([`resolve_client`]); RFC 7591 registration of public clients), the token
//! endpoint (authorization code with PKCE, rotating refresh tokens) and revocation (RFC 7009). The consent
//! page is the console's ([`crate::console::authorize`]).
//!
//! An access token is an `ast_…` API key row linked to its grant, so every face serves it exactly as a key
//! with the granted scope and workspace lock. Nothing here logs or echoes a code or token.

use crate::cx::Cx;
use crate::http::{HttpRequest, HttpResponse};
use crate::rules::oauth::{self as rules, OAuthError};
use crate::rules::{ids, outbound};
use crate::store::{self, oauth::Used};
use serde_json::{json, Value};
use url::Url;

/// The MCP endpoint this server protects, below the issuer.
pub const RESOURCE_PATH: &str = "/v1/mcp";
/// How long a code may wait to be exchanged.
pub const CODE_MS: i64 = 2 * 60_000;
const ACCESS_MS: i64 = 3_600_000;
const REFRESH_MS: i64 = 30 * 86_400_000;
/// A metadata document is fetched again after this.
const DOCUMENT_CACHE_MS: i64 = 3_600_000;
/// A metadata document that could not be used is not fetched again, by anyone, for this long.
const DOCUMENT_FAILURE_MS: i64 = 5 * 60_000;
const DOCUMENT_MAX_BYTES: usize = 5 * 1024;
const DOCUMENT_TIMEOUT_MS: i64 = 5_000;
/// Metadata-document fetches one address may cause a minute before signing in.
const DOCUMENTS_PER_MIN: u32 = 10;
/// What the caller hears for every way a metadata document fails: telling a 404 from a timeout or a body
/// that is not JSON would let anyone probe what this server can reach. The request's log line says which
/// (its `error_code`, `client_document_…`).
const UNUSABLE: &str =
    "the client metadata document at `client_id` could not be used; it is not fetched again for 5 minutes";
const REGISTRATIONS_PER_MIN: u32 = 20;
const TOKEN_CALLS_PER_MIN: u32 = 120;

/// The issuer and resource; `None` where the deployment cannot name itself (no `PUBLIC_BASE_URL`).
pub struct Names {
    pub issuer: String,
    pub resource: String,
}

pub fn names(cx: &Cx<'_>) -> Option<Names> {
    let base = cx.link_base().ok()?;
    Some(Names { issuer: base.to_owned(), resource: format!("{base}{RESOURCE_PATH}") })
}

/// Where a client finds the protected-resource metadata of `/v1/mcp` (RFC 9728 §3.1: the resource's path
/// after the well-known name).
pub fn resource_metadata_url(cx: &Cx<'_>) -> Option<String> {
    names(cx).map(|n| format!("{}/.well-known/oauth-protected-resource{RESOURCE_PATH}", n.issuer))
}

/// Answers the well-known and `/oauth/` paths; `None` for any other path.
pub async fn serve(cx: &Cx<'_>, req: &HttpRequest) -> Option<HttpResponse> {
    let path = req.path.as_str();
    let known = matches!(
        path,
        "/.well-known/oauth-protected-resource"
            | "/.well-known/oauth-protected-resource/v1/mcp"
            | "/.well-known/oauth-authorization-server"
            | "/oauth/register"
            | "/oauth/token"
            | "/oauth/revoke"
    );
    if !known {
        return None;
    }
    // None of these use cookies, so any origin may call them (browser-based MCP clients do).
    if req.method == "OPTIONS" {
        return Some(cors(HttpResponse::new(204)));
    }
    let Some(names) = names(cx) else {
        return Some(error(
            404,
            &OAuthError::new(
                "invalid_request",
                "this deployment cannot name itself (PUBLIC_BASE_URL is not set), so it offers no OAuth",
            ),
        ));
    };
    let resp = match (req.method.as_str(), path) {
        ("GET", "/.well-known/oauth-protected-resource" | "/.well-known/oauth-protected-resource/v1/mcp") => {
            HttpResponse::json(200, &protected_resource(&names))
        }
        ("GET", "/.well-known/oauth-authorization-server") => HttpResponse::json(200, &server_metadata(&names)),
        ("POST", "/oauth/register") => register(cx, req).await,
        ("POST", "/oauth/token") => token(cx, req, &names).await,
        ("POST", "/oauth/revoke") => revoke(cx, req).await,
        _ => error(405, &OAuthError::new("invalid_request", format!("{} is not served on {path}", req.method))),
    };
    Some(cors(resp))
}

fn cors(resp: HttpResponse) -> HttpResponse {
    resp.with_header("access-control-allow-origin", "*")
        .with_header("access-control-allow-methods", "GET, POST, OPTIONS")
        .with_header("access-control-allow-headers", "content-type, authorization, mcp-protocol-version")
}

/// RFC 9728 §2.
pub fn protected_resource(n: &Names) -> Value {
    json!({
        "resource": n.resource,
        "authorization_servers": [n.issuer],
        "scopes_supported": rules::SCOPES,
        "bearer_methods_supported": ["header"],
        "resource_name": "agentsky",
        "resource_documentation": format!("{}/help", n.issuer),
    })
}

/// RFC 8414 §2, with the MCP specification's Client ID Metadata Document flag.
pub fn server_metadata(n: &Names) -> Value {
    let i = &n.issuer;
    json!({
        "issuer": i,
        "authorization_endpoint": format!("{i}/oauth/authorize"),
        "token_endpoint": format!("{i}/oauth/token"),
        "registration_endpoint": format!("{i}/oauth/register"),
        "revocation_endpoint": format!("{i}/oauth/revoke"),
        "scopes_supported": rules::SCOPES,
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "code_challenge_methods_supported": ["S256"],
        "client_id_metadata_document_supported": true,
        "authorization_response_iss_parameter_supported": true,
    })
}

/// An RFC 6749 §5.2 error body. `invalid_client` is a 401, as the RFC asks.
pub fn error(status: u16, e: &OAuthError) -> HttpResponse {
    let status = if e.error == "invalid_client" && status == 400 { 401 } else { status };
    HttpResponse::json(status, &json!({ "error": e.error, "error_description": e.description }))
        .with_header("cache-control", "no-store")
}

/// A storage failure: the cause goes to the log with the request id, the client sees only that id.
fn unavailable(cx: &Cx<'_>, cause: impl std::fmt::Display) -> HttpResponse {
    let e = cx.internal(cause);
    error(503, &OAuthError::new("temporarily_unavailable", e.message))
}

fn form(req: &HttpRequest) -> Vec<(String, String)> {
    form_urlencoded::parse(&req.body).into_owned().collect()
}

fn field<'f>(form: &'f [(String, String)], name: &str) -> Option<&'f str> {
    form.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str()).filter(|v| !v.is_empty())
}

/// A client that cannot be used, and the status its page answers with.
#[derive(Debug)]
pub struct Unresolved {
    pub status: u16,
    pub error: OAuthError,
}

impl From<OAuthError> for Unresolved {
    fn from(error: OAuthError) -> Self {
        Self { status: 400, error }
    }
}

/// The client behind `client_id`: a registered one, or a metadata document (from the cache while it is
/// fresh, else fetched under the outbound rule, at most 5 KB, within 5 seconds). Anyone can name any URL
/// before signing in, so a fetch is guarded: never this server itself (a `client_id` nesting this page's
/// own URL would make it call itself), a failed document is not fetched again for 5 minutes, for anyone,
/// and an address that is not `signed_in` may cause 10 fetches a minute.
pub async fn resolve_client(
    cx: &Cx<'_>,
    req: &HttpRequest,
    client_id: &str,
    signed_in: bool,
) -> Result<store::oauth::ClientRow, Unresolved> {
    let unknown = || OAuthError::new("invalid_client", "unknown `client_id`");
    let db_err =
        |e| Unresolved { status: 503, error: OAuthError::new("temporarily_unavailable", cx.internal(e).message) };
    if ids::is_id(client_id, "oac") {
        return store::oauth::client(cx.db(), client_id).await.map_err(db_err)?.ok_or_else(|| unknown().into());
    }
    let loopback = cx.env.config.allow_loopback_http;
    let Some(url) = rules::metadata_document_url(client_id, loopback) else {
        return Err(OAuthError::new(
            "invalid_client",
            "`client_id` is neither a registered client nor an https URL of a client metadata document",
        )
        .into());
    };
    outbound::check("client_id", client_id, loopback).map_err(|why| OAuthError::new("invalid_client", why))?;
    if outbound::same_server(&url, &own_origins(cx, req)) {
        return Err(OAuthError::new(
            "invalid_client",
            "`client_id` names this server itself; a client's metadata document is served by the client",
        )
        .into());
    }
    if let Some(row) = store::oauth::client(cx.db(), client_id).await.map_err(db_err)? {
        if row.kind == "metadata_document" && cx.now_ms - row.fetched_ms < DOCUMENT_CACHE_MS {
            return Ok(row);
        }
    }
    let failed = store::oauth::document_failed_ms(cx.db(), client_id).await.map_err(db_err)?;
    if failed.is_some_and(|at| cx.now_ms - at < DOCUMENT_FAILURE_MS) {
        return Err(unusable(cx, "client_document_failed_recently"));
    }
    if !signed_in
        && crate::domain::rate::rate_limit(cx, format!("oauth-document:{}", cx.client_ip), DOCUMENTS_PER_MIN)
            .await
            .is_err()
    {
        cx.env.meter.label(|l| l.error_code = "rate_limited".into());
        return Err(Unresolved {
            status: 429,
            error: OAuthError::new(
                "temporarily_unavailable",
                "this address named too many clients by their metadata documents this minute; sign in to the console first, or wait a minute",
            ),
        });
    }
    let meta = match fetch_document(cx, client_id).await {
        Ok(meta) => meta,
        Err(why) => {
            let forget_before = cx.now_ms - DOCUMENT_FAILURE_MS;
            store::oauth::document_failed(cx.db(), client_id, cx.now_ms, forget_before).await.map_err(db_err)?;
            return Err(unusable(cx, &why));
        }
    };
    store::oauth::put_client(
        cx.db(),
        client_id,
        "metadata_document",
        &meta.client_name,
        &meta.redirect_uris,
        cx.now_ms,
    )
    .await
    .map_err(db_err)?;
    Ok(store::oauth::ClientRow {
        client_id: client_id.to_owned(),
        kind: "metadata_document".into(),
        client_name: meta.client_name,
        redirect_uris: meta.redirect_uris,
        fetched_ms: cx.now_ms,
    })
}

/// The origins this server answers on, never fetched: its public one (`PUBLIC_BASE_URL`) and the one this
/// request came to, over either scheme.
fn own_origins(cx: &Cx<'_>, req: &HttpRequest) -> Vec<Url> {
    let host = req.header("host").unwrap_or_default();
    [cx.env.config.public_base_url.clone(), format!("http://{host}/"), format!("https://{host}/")]
        .iter()
        .filter_map(|u| Url::parse(u).ok())
        .collect()
}

/// The one answer for a document that could not be used; `why` goes to the request's log line.
fn unusable(cx: &Cx<'_>, why: &str) -> Unresolved {
    cx.env.meter.label(|l| l.error_code = why.to_owned());
    OAuthError::new("invalid_client", UNUSABLE).into()
}

/// Fetches and checks a metadata document; `Err` says why it cannot be used, as an error code for the log.
async fn fetch_document(cx: &Cx<'_>, url: &str) -> Result<rules::ClientMetadata, String> {
    use futures::future::{select, Either};
    let egress = crate::egress::Egress::new(&*cx.env.net, &cx.env.config);
    let fetch = Box::pin(egress.get("client_id", url, DOCUMENT_MAX_BYTES));
    let resp = match select(fetch, cx.env.clock.sleep(DOCUMENT_TIMEOUT_MS)).await {
        Either::Left((Ok(r), _)) => r,
        Either::Left((Err(_), _)) => return Err("client_document_unreachable".into()),
        Either::Right(_) => return Err("client_document_timeout".into()),
    };
    if resp.status != 200 {
        return Err(format!("client_document_http_{}", resp.status));
    }
    if resp.body.len() > DOCUMENT_MAX_BYTES {
        return Err("client_document_too_large".into());
    }
    let doc: Value = serde_json::from_slice(&resp.body).map_err(|_| "client_document_not_json".to_owned())?;
    rules::check_metadata_document(url, &doc).map_err(|_| "client_document_invalid".to_owned())
}

/// `POST /oauth/register` (RFC 7591): a public client's metadata becomes a `client_id`.
async fn register(cx: &Cx<'_>, req: &HttpRequest) -> HttpResponse {
    if crate::domain::rate::rate_limit(cx, format!("oauth-register:{}", cx.client_ip), REGISTRATIONS_PER_MIN)
        .await
        .is_err()
    {
        return error(
            429,
            &OAuthError::new("invalid_request", "too many registrations from this address; wait a minute"),
        );
    }
    let Ok(doc) = serde_json::from_slice::<Value>(&req.body) else {
        return error(
            400,
            &OAuthError::new("invalid_client_metadata", "the body must be a JSON object of client metadata"),
        );
    };
    let meta = match rules::check_metadata(&doc, "MCP client") {
        Ok(m) => m,
        Err(e) => return error(400, &e),
    };
    let client_id = ids::new_id("oac");
    if let Err(e) =
        store::oauth::put_client(cx.db(), &client_id, "registered", &meta.client_name, &meta.redirect_uris, cx.now_ms)
            .await
    {
        return unavailable(cx, e);
    }
    HttpResponse::json(
        201,
        &json!({
            "client_id": client_id,
            "client_id_issued_at": cx.now_ms / 1000,
            "client_name": meta.client_name,
            "redirect_uris": meta.redirect_uris,
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
        }),
    )
    .with_header("cache-control", "no-store")
}

/// `POST /oauth/token` (OAuth 2.1 §3.2): the authorization-code and refresh-token grants.
async fn token(cx: &Cx<'_>, req: &HttpRequest, names: &Names) -> HttpResponse {
    if crate::domain::rate::rate_limit(cx, format!("oauth-token:{}", cx.client_ip), TOKEN_CALLS_PER_MIN).await.is_err()
    {
        return error(
            429,
            &OAuthError::new("invalid_request", "too many token requests from this address; wait a minute"),
        );
    }
    let f = form(req);
    let result = match field(&f, "grant_type") {
        Some("authorization_code") => exchange_code(cx, &f).await,
        Some("refresh_token") => refresh(cx, &f, names).await,
        Some(other) => Err(OAuthError::new(
            "unsupported_grant_type",
            format!(
                "`grant_type` {} is not supported; use authorization_code or refresh_token",
                crate::rules::params::quoted(other)
            ),
        )),
        None => Err(OAuthError::new("invalid_request", "`grant_type` is required")),
    };
    match result {
        Ok(body) => {
            HttpResponse::json(200, &body).with_header("cache-control", "no-store").with_header("pragma", "no-cache")
        }
        Err(e) if e.error == "temporarily_unavailable" => error(503, &e),
        Err(e) => error(400, &e),
    }
}

fn check_resource(f: &[(String, String)], expected: &str) -> Result<(), OAuthError> {
    match field(f, "resource") {
        Some(r) if !rules::resource_matches(r, expected) => {
            Err(OAuthError::new("invalid_target", format!("`resource` must be this server's MCP endpoint, {expected}")))
        }
        _ => Ok(()),
    }
}

async fn exchange_code(cx: &Cx<'_>, f: &[(String, String)]) -> Result<Value, OAuthError> {
    let db_err = |e| OAuthError::new("temporarily_unavailable", cx.internal(e).message);
    let code = field(f, "code").ok_or_else(|| OAuthError::new("invalid_request", "`code` is required"))?;
    let client_id =
        field(f, "client_id").ok_or_else(|| OAuthError::new("invalid_request", "`client_id` is required"))?;
    let verifier = field(f, "code_verifier")
        .ok_or_else(|| OAuthError::new("invalid_request", "`code_verifier` is required (PKCE)"))?;
    let invalid = |why: &str| OAuthError::new("invalid_grant", why.to_owned());
    // Used up before it is checked: a code fails once and is gone, whatever was wrong with the attempt.
    let row = match store::oauth::use_code(cx.db(), &ids::hash_secret(code), cx.now_ms).await.map_err(db_err)? {
        Used::Fresh(row) => row,
        Used::Replayed(grant_id) => {
            // A code used twice was stolen or replayed: what it issued is revoked (OAuth 2.1 §4.1.3).
            store::oauth::revoke_grant(cx.db(), &grant_id, cx.now_ms).await.map_err(db_err)?;
            crate::keycache::forget_all();
            return Err(invalid("this authorization code was already used; the tokens it issued are revoked"));
        }
        Used::Unknown => return Err(invalid("unknown authorization code")),
    };
    if row.expires_ms <= cx.now_ms {
        return Err(invalid("this authorization code has expired; sign in again"));
    }
    if !ids::constant_time_eq(&row.client_id, client_id) {
        return Err(invalid("this authorization code was issued to another client"));
    }
    if field(f, "redirect_uri") != Some(row.redirect_uri.as_str()) {
        return Err(invalid("`redirect_uri` must be the one of the authorization request"));
    }
    if !rules::verifier_matches(verifier, &row.code_challenge) {
        return Err(invalid("`code_verifier` does not match the code challenge (PKCE)"));
    }
    let grant =
        store::oauth::grant(cx.db(), &row.grant_id).await.map_err(db_err)?.ok_or_else(|| invalid("unknown grant"))?;
    check_resource(f, &grant.resource)?;
    issue(cx, &grant, &grant.scopes).await
}

async fn refresh(cx: &Cx<'_>, f: &[(String, String)], names: &Names) -> Result<Value, OAuthError> {
    let db_err = |e| OAuthError::new("temporarily_unavailable", cx.internal(e).message);
    let invalid = |why: &str| OAuthError::new("invalid_grant", why.to_owned());
    let token =
        field(f, "refresh_token").ok_or_else(|| OAuthError::new("invalid_request", "`refresh_token` is required"))?;
    let client_id =
        field(f, "client_id").ok_or_else(|| OAuthError::new("invalid_request", "`client_id` is required"))?;
    let row = match store::oauth::use_refresh(cx.db(), &ids::hash_secret(token), cx.now_ms).await.map_err(db_err)? {
        Used::Fresh(row) => row,
        Used::Replayed(grant_id) => {
            // Rotation's point: a refresh token used twice means two holders; the family ends (OAuth 2.1 §4.3.1).
            store::oauth::revoke_grant(cx.db(), &grant_id, cx.now_ms).await.map_err(db_err)?;
            crate::keycache::forget_all();
            return Err(invalid("this refresh token was already used; every token of this sign-in is revoked"));
        }
        Used::Unknown => return Err(invalid("unknown refresh token")),
    };
    let grant =
        store::oauth::grant(cx.db(), &row.grant_id).await.map_err(db_err)?.ok_or_else(|| invalid("unknown grant"))?;
    if grant.revoked_ms.is_some() {
        return Err(invalid("this sign-in was disconnected"));
    }
    if row.expires_ms <= cx.now_ms {
        return Err(invalid("this refresh token has expired; sign in again"));
    }
    if !ids::constant_time_eq(&grant.client_id, client_id) {
        return Err(invalid("this refresh token was issued to another client"));
    }
    check_resource(f, &names.resource)?;
    let scopes = match field(f, "scope") {
        None => grant.scopes.as_str(),
        Some(s) => {
            let asked = rules::parse_scope(Some(s))?;
            if !rules::scope_within(asked, &grant.scopes) {
                return Err(OAuthError::new(
                    "invalid_scope",
                    format!("`scope` may not exceed what was granted ({})", grant.scopes),
                ));
            }
            asked
        }
    };
    issue(cx, &grant, scopes).await
}

async fn issue(cx: &Cx<'_>, grant: &store::oauth::GrantRow, scopes: &str) -> Result<Value, OAuthError> {
    let access = ids::new_secret("ast_");
    let refresh = ids::new_secret("asr_");
    let key_id = ids::new_id("key");
    let t = store::oauth::NewTokens {
        grant_id: &grant.grant_id,
        key_id: &key_id,
        access_hash: &ids::hash_secret(&access),
        access_prefix: &ids::key_prefix(&access),
        scopes,
        access_expires_ms: cx.now_ms + ACCESS_MS,
        refresh_hash: &ids::hash_secret(&refresh),
        refresh_expires_ms: cx.now_ms + REFRESH_MS,
        now_ms: cx.now_ms,
    };
    let issued = store::oauth::issue(cx.db(), &t)
        .await
        .map_err(|e| OAuthError::new("temporarily_unavailable", cx.internal(e).message))?;
    if !issued {
        return Err(OAuthError::new("invalid_grant", "this sign-in was disconnected"));
    }
    Ok(json!({
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": ACCESS_MS / 1000,
        "refresh_token": refresh,
        "scope": scopes,
    }))
}

/// `POST /oauth/revoke` (RFC 7009): 200 whether or not the token was known, so it cannot be probed.
async fn revoke(cx: &Cx<'_>, req: &HttpRequest) -> HttpResponse {
    let f = form(req);
    let Some(token) = field(&f, "token") else {
        return error(400, &OAuthError::new("invalid_request", "`token` is required"));
    };
    let Some(client_id) = field(&f, "client_id") else {
        return error(
            400,
            &OAuthError::new("invalid_client", "`client_id` is required: the client revokes its own tokens"),
        );
    };
    match store::oauth::revoke_token(cx.db(), &ids::hash_secret(token), client_id, cx.now_ms).await {
        Ok(()) => {
            crate::keycache::forget_all();
            HttpResponse::new(200).with_header("cache-control", "no-store")
        }
        Err(e) => unavailable(cx, e),
    }
}
