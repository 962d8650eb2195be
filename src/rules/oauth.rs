//! The pure rules of OAuth 2.1 as this server applies them to MCP clients: PKCE (S256 only), which
//! redirect URIs a client may register and how a presented one must match (exactly; loopback with any
//! port, RFC 8252 §7.3), the scopes (`read`, `write`), and what a client's metadata must say (RFC 7591 and
//! Client ID Metadata Documents). No I/O here; errors name the field they are about.

use base64::Engine;
use serde_json::Value;
use sha2::{Digest, Sha256};
use url::{Host, Url};

/// The scopes a client may ask for. `write` includes `read`, as an API key's scopes do.
pub const SCOPES: [&str; 2] = ["read", "write"];
/// Redirect URIs one client may register.
const MAX_REDIRECT_URIS: usize = 10;
const MAX_URI_LEN: usize = 2_000;
const MAX_NAME_CHARS: usize = 100;

/// A refused request in RFC 6749's shape: `error` is one of its codes, `description` says which field and
/// why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthError {
    pub error: &'static str,
    pub description: String,
}

impl OAuthError {
    pub fn new(error: &'static str, description: impl Into<String>) -> Self {
        Self { error, description: description.into() }
    }
}

/// The S256 challenge of a verifier (RFC 7636 §4.2).
pub fn s256(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// A code challenge as a client sends it: 43 base64url characters (a SHA-256).
pub fn check_challenge(challenge: &str, method: Option<&str>) -> Result<(), OAuthError> {
    if method != Some("S256") {
        return Err(OAuthError::new(
            "invalid_request",
            "`code_challenge_method` must be S256 (plain is not supported; PKCE is required)",
        ));
    }
    if challenge.len() != 43 || !challenge.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        return Err(OAuthError::new("invalid_request", "`code_challenge` must be a base64url SHA-256 (43 characters)"));
    }
    Ok(())
}

/// Whether `verifier` proves `challenge` (compared in constant time).
pub fn verifier_matches(verifier: &str, challenge: &str) -> bool {
    let well_formed = (43..=128).contains(&verifier.len())
        && verifier.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
    well_formed && crate::rules::ids::constant_time_eq(&s256(verifier), challenge)
}

/// A redirect URI a client may register: https, plain http only to a loopback address (a native app's
/// local listener), or a private-use scheme with a dot (`com.example.app:/cb`, RFC 8252 §7.1); never a
/// fragment, never credentials.
pub fn check_redirect_uri(field: &str, raw: &str) -> Result<(), OAuthError> {
    let bad = |why: &str| {
        Err(OAuthError::new("invalid_redirect_uri", format!("`{field}` {}: {why}", crate::rules::params::quoted(raw))))
    };
    if raw.len() > MAX_URI_LEN {
        return bad("is too long");
    }
    // A parse drops a line break that the raw URI, sent back in `Location`, would still carry.
    if let Some(why) = crate::rules::redirect::unsendable(raw) {
        return bad(why);
    }
    let Ok(url) = Url::parse(raw) else { return bad("is not an absolute URI") };
    if url.fragment().is_some() {
        return bad("must not contain a fragment");
    }
    if !url.username().is_empty() || url.password().is_some() {
        return bad("must not contain credentials");
    }
    match url.scheme() {
        "https" if url.host().is_some() => Ok(()),
        "http" if is_loopback(&url) => Ok(()),
        "http" => bad("plain http is allowed only to a loopback address (127.0.0.1, [::1], localhost)"),
        "javascript" | "data" | "file" | "vbscript" | "blob" => bad("this scheme is not allowed"),
        s if s.contains('.') => Ok(()),
        _ => bad("must be https, http to a loopback address, or a private-use scheme such as com.example.app:"),
    }
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => ip.is_loopback(),
        Some(Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

/// Whether `presented` is one of `registered`: exactly, or — for a loopback http URI — equal in everything
/// but the port, since a native app listens on whatever port is free (RFC 8252 §7.3).
pub fn redirect_matches(registered: &[String], presented: &str) -> bool {
    if registered.iter().any(|r| r == presented) {
        return true;
    }
    let Ok(p) = Url::parse(presented) else { return false };
    if p.scheme() != "http" || !is_loopback(&p) {
        return false;
    }
    registered.iter().filter_map(|r| Url::parse(r).ok()).any(|mut r| {
        r.scheme() == "http" && is_loopback(&r) && r.set_port(p.port()).is_ok() && r.as_str() == p.as_str()
    })
}

/// The host a redirect goes to, as the consent page shows it.
pub fn redirect_host(uri: &str) -> String {
    match Url::parse(uri) {
        Ok(u) => match u.host_str() {
            Some(h) => h.to_owned(),
            None => format!("{}:", u.scheme()),
        },
        Err(_) => String::new(),
    }
}

/// A requested `scope` as the stored scopes (`read` or `read write`); no scope means `read write`, the
/// most the person can then narrow on the consent page. An unknown scope is `invalid_scope`.
pub fn parse_scope(raw: Option<&str>) -> Result<&'static str, OAuthError> {
    let words: Vec<&str> = raw.unwrap_or("").split_whitespace().collect();
    if let Some(w) = words.iter().find(|w| !SCOPES.contains(w)) {
        return Err(OAuthError::new(
            "invalid_scope",
            format!("unknown scope `{w}`; the scopes are `read` and `write`"),
        ));
    }
    Ok(if words.is_empty() || words.contains(&"write") { "read write" } else { "read" })
}

/// Whether `asked` (stored form) is within `granted`.
pub fn scope_within(asked: &str, granted: &str) -> bool {
    asked == granted || asked == "read"
}

/// A client's metadata, checked: what a registration (RFC 7591) or a metadata document carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientMetadata {
    pub client_name: String,
    pub redirect_uris: Vec<String>,
}

/// Checks a client's metadata as RFC 7591 §2 asks of a public client. `fallback_name` names a client
/// that gave no `client_name`.
pub fn check_metadata(doc: &Value, fallback_name: &str) -> Result<ClientMetadata, OAuthError> {
    let meta = |why: String| OAuthError::new("invalid_client_metadata", why);
    let Some(obj) = doc.as_object() else { return Err(meta("the client metadata must be a JSON object".into())) };
    let uris = match obj.get("redirect_uris") {
        Some(Value::Array(a)) if !a.is_empty() => a,
        Some(Value::Array(_)) | None => {
            return Err(OAuthError::new("invalid_redirect_uri", "`redirect_uris` must list at least one URI"))
        }
        Some(_) => return Err(OAuthError::new("invalid_redirect_uri", "`redirect_uris` must be an array of strings")),
    };
    if uris.len() > MAX_REDIRECT_URIS {
        return Err(OAuthError::new(
            "invalid_redirect_uri",
            format!("`redirect_uris` may list at most {MAX_REDIRECT_URIS} URIs"),
        ));
    }
    let mut redirect_uris = Vec::with_capacity(uris.len());
    for (i, u) in uris.iter().enumerate() {
        let field = format!("redirect_uris[{i}]");
        let Some(s) = u.as_str() else {
            return Err(OAuthError::new("invalid_redirect_uri", format!("`{field}` must be a string")));
        };
        check_redirect_uri(&field, s)?;
        redirect_uris.push(s.to_owned());
    }
    match obj.get("token_endpoint_auth_method") {
        None => {}
        Some(Value::String(m)) if m == "none" => {}
        Some(other) => {
            return Err(meta(format!(
                "`token_endpoint_auth_method` must be \"none\": only public clients are supported (got {other})"
            )))
        }
    }
    let subset = |field: &str, allowed: &[&str]| -> Result<(), OAuthError> {
        match obj.get(field) {
            None => Ok(()),
            Some(Value::Array(a)) if a.iter().all(|v| v.as_str().is_some_and(|s| allowed.contains(&s))) => Ok(()),
            Some(_) => Err(meta(format!("`{field}` may contain only {}", allowed.join(", ")))),
        }
    };
    subset("grant_types", &["authorization_code", "refresh_token"])?;
    subset("response_types", &["code"])?;
    let client_name = match obj.get("client_name") {
        None | Some(Value::Null) => fallback_name.to_owned(),
        Some(Value::String(n)) if !n.trim().is_empty() && n.chars().count() <= MAX_NAME_CHARS => n.trim().to_owned(),
        Some(_) => {
            return Err(meta(format!(
                "`client_name` must be a non-empty string of at most {MAX_NAME_CHARS} characters"
            )))
        }
    };
    if let Some(scope) = obj.get("scope") {
        parse_scope(scope.as_str()).map_err(|e| meta(format!("`scope`: {}", e.description)))?;
    }
    Ok(ClientMetadata { client_name, redirect_uris })
}

/// A Client ID Metadata Document's `client_id` as the URL it is fetched from: https with a path, no
/// fragment, no credentials. The outbound rule still decides whether the host may be reached.
pub fn metadata_document_url(client_id: &str, loopback_http: bool) -> Option<Url> {
    let url = Url::parse(client_id).ok()?;
    let scheme_ok = url.scheme() == "https" || (loopback_http && url.scheme() == "http");
    let ok = scheme_ok
        && url.path() != "/"
        && url.fragment().is_none()
        && url.username().is_empty()
        && url.password().is_none()
        && client_id.len() <= MAX_URI_LEN;
    ok.then_some(url)
}

/// Checks a fetched metadata document: its `client_id` must be the URL it came from (the document is the
/// client's identity), then as any client's metadata.
pub fn check_metadata_document(url: &str, doc: &Value) -> Result<ClientMetadata, OAuthError> {
    if doc.get("client_id").and_then(Value::as_str) != Some(url) {
        return Err(OAuthError::new(
            "invalid_client",
            "the client metadata document's `client_id` must equal the URL it is served from",
        ));
    }
    let fallback = Url::parse(url).ok().and_then(|u| u.host_str().map(str::to_owned)).unwrap_or_default();
    check_metadata(doc, &fallback).map_err(|e| OAuthError::new("invalid_client", e.description))
}

/// Whether `resource` (RFC 8707) names this server's MCP endpoint, `canonical`; a trailing slash is the
/// same resource.
pub fn resource_matches(resource: &str, canonical: &str) -> bool {
    resource.trim_end_matches('/') == canonical.trim_end_matches('/')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_rfc_7636_example_verifier_proves_its_challenge() {
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        assert_eq!(s256(verifier), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
        assert!(verifier_matches(verifier, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"));
        assert!(!verifier_matches(
            "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXX",
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        ));
        assert!(check_challenge("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", Some("plain")).is_err());
    }

    #[test]
    fn loopback_redirects_match_on_any_port_and_others_exactly() {
        let reg = vec!["http://127.0.0.1/callback".to_owned(), "https://app.example/cb".to_owned()];
        assert!(redirect_matches(&reg, "http://127.0.0.1:53121/callback"));
        assert!(redirect_matches(&reg, "https://app.example/cb"));
        assert!(!redirect_matches(&reg, "https://app.example/cb/"));
        assert!(!redirect_matches(&reg, "https://app.example:444/cb"));
        assert!(!redirect_matches(&reg, "http://127.0.0.1:53121/other"));
        assert!(!redirect_matches(&reg, "http://evil.example:53121/callback"));
    }

    #[test]
    fn redirect_uris_refuse_plain_http_fragments_and_script_schemes() {
        assert!(check_redirect_uri("r", "https://a.example/cb").is_ok());
        assert!(check_redirect_uri("r", "http://localhost:3000/cb").is_ok());
        assert!(check_redirect_uri("r", "com.example.app:/cb").is_ok());
        for bad in
            ["http://a.example/cb", "https://a.example/cb#x", "javascript:alert(1)", "cb", "https://u:p@a.example/"]
        {
            assert!(check_redirect_uri("r", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_redirect_uri_with_a_line_break_is_refused_though_it_parses() {
        for bad in ["https://a.example/cb\r\nX: 1", "http://127.0.0.1/cb\n", "https://a.example/\u{20ac}"] {
            assert!(url::Url::parse(bad).is_ok(), "{bad:?}");
            let e = check_redirect_uri("redirect_uris[0]", bad).unwrap_err();
            assert!(e.description.starts_with("`redirect_uris[0]` "), "{}", e.description);
        }
        let long = format!("https://a.example/{}", "a".repeat(MAX_URI_LEN));
        assert!(check_redirect_uri("r", &long).unwrap_err().description.len() < 200, "the value is not echoed whole");
    }

    #[test]
    fn scopes_are_read_and_write_and_write_includes_read() {
        assert_eq!(parse_scope(None).unwrap(), "read write");
        assert_eq!(parse_scope(Some("read")).unwrap(), "read");
        assert_eq!(parse_scope(Some("read write")).unwrap(), "read write");
        assert_eq!(parse_scope(Some("admin")).unwrap_err().error, "invalid_scope");
        assert!(scope_within("read", "read write"));
        assert!(!scope_within("read write", "read"));
    }

    #[test]
    fn metadata_errors_name_the_field() {
        let e = check_metadata(&json!({"redirect_uris": []}), "x").unwrap_err();
        assert!(e.description.contains("redirect_uris"));
        let e = check_metadata(
            &json!({"redirect_uris": ["https://a.example/cb"], "token_endpoint_auth_method": "client_secret_basic"}),
            "x",
        )
        .unwrap_err();
        assert!(e.description.contains("token_endpoint_auth_method"));
        let ok = check_metadata(&json!({"redirect_uris": ["https://a.example/cb"], "client_name": "A"}), "x").unwrap();
        assert_eq!(ok.client_name, "A");
    }

    #[test]
    fn a_metadata_document_must_name_its_own_url() {
        let url = "https://app.example/client.json";
        let doc =
            json!({"client_id": "https://other.example/client.json", "redirect_uris": ["https://app.example/cb"]});
        assert_eq!(check_metadata_document(url, &doc).unwrap_err().error, "invalid_client");
        assert!(metadata_document_url("https://app.example/", false).is_none());
        assert!(metadata_document_url("http://127.0.0.1:9/c.json", false).is_none());
        assert!(metadata_document_url("http://127.0.0.1:9/c.json", true).is_some());
    }
}
