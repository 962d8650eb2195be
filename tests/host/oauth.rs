//! OAuth 2.1 sign-in for MCP clients: discovery, registration (DCR and metadata documents), consent in
//! the console, the code and refresh grants with every rule they enforce, revocation, and the token
//! acting as an API key with the granted scope and workspace lock.

use crate::support::{browser_request, form_body as form, Account, TestApp};
use agentsky::cx::Config;
use agentsky::http::{HttpRequest, HttpResponse};
use agentsky::rules::oauth::s256;
use serde_json::{json, Value};

const ORIGIN: &str = "http://127.0.0.1:8787";
const RESOURCE: &str = "http://127.0.0.1:8787/v1/mcp";
const REDIRECT: &str = "http://127.0.0.1/callback";
const VERIFIER: &str = "a-verifier-long-enough-to-be-valid-0123456789abcdef";

/// A browser's request; with a cookie it comes from the console's own origin.
fn request(method: &str, path: &str, cookie: Option<&str>, body: &str) -> HttpRequest {
    browser_request(method, path, cookie, body, cookie.map(|_| ORIGIN))
}

fn body(r: &HttpResponse) -> Value {
    serde_json::from_slice(&r.body).unwrap_or(Value::Null)
}

fn sign_in(app: &TestApp, key: &str) -> String {
    let r = app.send(request("POST", "/console/login", Some(""), &form(&[("key", key)])));
    assert_eq!(r.status, 303);
    r.header("set-cookie").unwrap().split(';').next().unwrap().to_owned()
}

fn register(app: &TestApp, meta: Value) -> HttpResponse {
    let mut req = request("POST", "/oauth/register", None, &meta.to_string());
    req.headers.push(("content-type".into(), "application/json".into()));
    app.send(req)
}

fn client(app: &TestApp) -> String {
    let r = register(app, json!({"client_name": "Test client", "redirect_uris": [REDIRECT]}));
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    body(&r)["client_id"].as_str().unwrap().to_owned()
}

fn authorize_query(client_id: &str, redirect: &str, scope: &str) -> String {
    form(&[
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", redirect),
        ("state", "st4te"),
        ("scope", scope),
        ("code_challenge", &s256(VERIFIER)),
        ("code_challenge_method", "S256"),
        ("resource", RESOURCE),
    ])
}

fn query_of(location: &str) -> Vec<(String, String)> {
    let q = location.split_once('?').map_or("", |(_, q)| q);
    form_urlencoded::parse(q.as_bytes()).into_owned().collect()
}

fn param(pairs: &[(String, String)], name: &str) -> Option<String> {
    pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
}

/// Consents as `ada` in her personal workspace with `access`; the code.
fn consent(app: &TestApp, ada: &Account, client_id: &str, redirect: &str, access: &str) -> String {
    let cookie = sign_in(app, &ada.key);
    let q = authorize_query(client_id, redirect, "read write");
    let page = app.send(request("GET", &format!("/oauth/authorize?{q}"), Some(&cookie), ""));
    assert_eq!(page.status, 200, "{}", String::from_utf8_lossy(&page.body));
    let html = String::from_utf8_lossy(&page.body).into_owned();
    assert!(html.contains("Test client") && html.contains("127.0.0.1"), "{html}");
    let at = html.find("name=\"csrf\" value=\"").unwrap() + 19;
    let csrf = html[at..at + 64].to_owned();
    let mut fields: Vec<(String, String)> = form_urlencoded::parse(q.as_bytes()).into_owned().collect();
    fields.extend([
        ("csrf".to_owned(), csrf),
        ("workspace".into(), ada.slug.clone()),
        ("access".into(), access.into()),
        ("decision".into(), "approve".into()),
    ]);
    let body = form_urlencoded::Serializer::new(String::new()).extend_pairs(fields).finish();
    let r = app.send(request("POST", "/oauth/authorize", Some(&cookie), &body));
    assert_eq!(r.status, 303, "{}", String::from_utf8_lossy(&r.body));
    let loc = r.header("location").unwrap().to_owned();
    let q = query_of(&loc);
    assert_eq!(param(&q, "state").as_deref(), Some("st4te"));
    assert_eq!(param(&q, "iss").as_deref(), Some(ORIGIN), "RFC 9207");
    param(&q, "code").unwrap_or_else(|| panic!("no code in {loc}"))
}

fn token(app: &TestApp, fields: &[(&str, &str)]) -> HttpResponse {
    app.send(request("POST", "/oauth/token", None, &form(fields)))
}

fn exchange(app: &TestApp, client_id: &str, code: &str, redirect: &str, verifier: &str) -> HttpResponse {
    token(
        app,
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("client_id", client_id),
            ("redirect_uri", redirect),
            ("code_verifier", verifier),
            ("resource", RESOURCE),
        ],
    )
}

fn refresh(app: &TestApp, client_id: &str, refresh_token: &str) -> HttpResponse {
    token(app, &[("grant_type", "refresh_token"), ("refresh_token", refresh_token), ("client_id", client_id)])
}

fn error_of(r: &HttpResponse) -> String {
    body(r)["error"].as_str().unwrap_or_default().to_owned()
}

/// A client consented and exchanged: (client_id, tokens).
fn connected(app: &TestApp, ada: &Account, access: &str) -> (String, Value) {
    let client_id = client(app);
    let code = consent(app, ada, &client_id, REDIRECT, access);
    let r = exchange(app, &client_id, &code, REDIRECT, VERIFIER);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    (client_id, body(&r))
}

fn tools_list_status(app: &TestApp, bearer: &str) -> u16 {
    app.mcp_post("/v1/mcp", Some(bearer), "203.0.113.7", "tools/list", json!({})).status
}

#[test]
fn metadata_documents_have_the_shapes_clients_discover() {
    let app = TestApp::new();
    for path in ["/.well-known/oauth-protected-resource/v1/mcp", "/.well-known/oauth-protected-resource"] {
        let r = app.send(request("GET", path, None, ""));
        assert_eq!(r.status, 200, "{path}");
        let prm = body(&r);
        assert_eq!(prm["resource"], RESOURCE);
        assert_eq!(prm["authorization_servers"], json!([ORIGIN]));
        assert_eq!(prm["scopes_supported"], json!(["read", "write"]));
    }
    let asm = body(&app.send(request("GET", "/.well-known/oauth-authorization-server", None, "")));
    assert_eq!(asm["issuer"], ORIGIN);
    assert_eq!(asm["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(asm["grant_types_supported"], json!(["authorization_code", "refresh_token"]));
    assert_eq!(asm["client_id_metadata_document_supported"], true);
    assert_eq!(asm["token_endpoint_auth_methods_supported"], json!(["none"]));
    assert_eq!(asm["registration_endpoint"], format!("{ORIGIN}/oauth/register"));
    assert_eq!(asm["revocation_endpoint"], format!("{ORIGIN}/oauth/revoke"));
    assert_eq!(asm["authorization_endpoint"], format!("{ORIGIN}/oauth/authorize"));
}

#[test]
fn a_401_from_mcp_names_the_resource_metadata() {
    let app = TestApp::new();
    let r = app.mcp_post("/v1/mcp", None, "203.0.113.7", "tools/list", json!({}));
    assert_eq!(r.status, 401);
    let challenge = r.header("www-authenticate").unwrap();
    assert!(challenge.starts_with("Bearer "), "{challenge}");
    assert!(
        challenge.contains(&format!("resource_metadata=\"{ORIGIN}/.well-known/oauth-protected-resource/v1/mcp\"")),
        "{challenge}"
    );
    assert!(challenge.contains("scope=\"read write\""), "{challenge}");
    let bad = app.mcp_post("/v1/mcp", Some("ast_nope"), "203.0.113.7", "tools/list", json!({}));
    assert!(bad.header("www-authenticate").unwrap().contains("invalid_token"));
}

#[test]
fn registration_errors_name_the_field() {
    let app = TestApp::new();
    let cases = [
        (json!({"client_name": "x"}), "invalid_redirect_uri", "redirect_uris"),
        (json!({"redirect_uris": ["http://evil.example/cb"]}), "invalid_redirect_uri", "redirect_uris[0]"),
        (json!({"redirect_uris": ["https://a.example/cb#frag"]}), "invalid_redirect_uri", "redirect_uris[0]"),
        (
            json!({"redirect_uris": ["https://a.example/cb"], "token_endpoint_auth_method": "client_secret_post"}),
            "invalid_client_metadata",
            "token_endpoint_auth_method",
        ),
        (
            json!({"redirect_uris": ["https://a.example/cb"], "grant_types": ["password"]}),
            "invalid_client_metadata",
            "grant_types",
        ),
        (
            json!({"redirect_uris": ["https://a.example/cb"], "client_name": ""}),
            "invalid_client_metadata",
            "client_name",
        ),
    ];
    for (meta, error, field) in cases {
        let r = register(&app, meta.clone());
        assert_eq!(r.status, 400, "{meta}");
        assert_eq!(error_of(&r), error, "{meta}");
        assert!(body(&r)["error_description"].as_str().unwrap().contains(field), "{meta}: {}", body(&r));
    }
    let r = app.send(request("POST", "/oauth/register", None, "not json"));
    assert_eq!(error_of(&r), "invalid_client_metadata");
}

#[test]
fn the_whole_flow_gives_a_token_that_acts_as_a_key_with_its_scope_and_lock() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let (_, t) = connected(&app, &ada, "read");
    assert_eq!(t["token_type"], "Bearer");
    assert_eq!(t["scope"], "read");
    let access = t["access_token"].as_str().unwrap();
    assert_eq!(tools_list_status(&app, access), 200);
    // Read only: a write is insufficient_scope, exactly as for a read key.
    assert_eq!(
        app.err_code(access, "start_session", json!({"agent_id": "@nobody", "message": "hi", "idempotency_key": "k"})),
        "insufficient_scope"
    );
    // Locked to the workspace chosen on the consent page.
    let other = app.request("POST", "/v1/workspaces", Some(&ada.key), Some(json!({"name": "Other"}))).json_body();
    let slug = other["slug"].as_str().unwrap();
    assert_eq!(app.err_code(access, "list_agents", json!({"workspace": slug})), "universe_mismatch");
    // It is not an API key the Keys list shows, and does not count against the key cap.
    let keys = app.request("GET", "/v1/keys", Some(&ada.key), None).json_body();
    assert_eq!(keys["keys"].as_array().unwrap().len(), 1);
    // Bearer API keys keep working.
    assert_eq!(tools_list_status(&app, &ada.key), 200);
}

#[test]
fn a_wrong_verifier_is_refused_and_burns_the_code() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let client_id = client(&app);
    let code = consent(&app, &ada, &client_id, REDIRECT, "read write");
    let r = exchange(&app, &client_id, &code, REDIRECT, "another-verifier-long-enough-to-be-valid-0123456789");
    assert_eq!((r.status, error_of(&r)), (400, "invalid_grant".to_owned()));
    assert!(body(&r)["error_description"].as_str().unwrap().contains("PKCE"));
    assert_eq!(error_of(&exchange(&app, &client_id, &code, REDIRECT, VERIFIER)), "invalid_grant");
}

#[test]
fn a_code_used_twice_revokes_what_it_issued() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let client_id = client(&app);
    let code = consent(&app, &ada, &client_id, REDIRECT, "read write");
    let first = body(&exchange(&app, &client_id, &code, REDIRECT, VERIFIER));
    let access = first["access_token"].as_str().unwrap();
    assert_eq!(tools_list_status(&app, access), 200);
    let again = exchange(&app, &client_id, &code, REDIRECT, VERIFIER);
    assert_eq!(error_of(&again), "invalid_grant");
    assert_eq!(tools_list_status(&app, access), 401);
}

#[test]
fn the_redirect_uri_must_match_at_consent_and_at_exchange() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let client_id = client(&app);
    let cookie = sign_in(&app, &ada.key);
    // Not registered: shown on the page, never redirected.
    let q = authorize_query(&client_id, "https://evil.example/cb", "read");
    let r = app.send(request("GET", &format!("/oauth/authorize?{q}"), Some(&cookie), ""));
    assert_eq!(r.status, 400);
    assert!(r.header("location").is_none());
    // A loopback redirect on any port matches (RFC 8252), and must be sent again unchanged.
    let on_port = "http://127.0.0.1:49152/callback";
    let code = consent(&app, &ada, &client_id, on_port, "read");
    let r = exchange(&app, &client_id, &code, "http://127.0.0.1:49153/callback", VERIFIER);
    assert_eq!(error_of(&r), "invalid_grant");
    assert!(body(&r)["error_description"].as_str().unwrap().contains("redirect_uri"));
}

#[test]
fn an_expired_code_is_refused() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let client_id = client(&app);
    let code = consent(&app, &ada, &client_id, REDIRECT, "read");
    app.advance(agentsky::oauth::CODE_MS + 1);
    let r = exchange(&app, &client_id, &code, REDIRECT, VERIFIER);
    assert_eq!(error_of(&r), "invalid_grant");
    assert!(body(&r)["error_description"].as_str().unwrap().contains("expired"));
}

#[test]
fn a_code_of_another_client_is_refused() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let client_id = client(&app);
    let other = client(&app);
    let code = consent(&app, &ada, &client_id, REDIRECT, "read");
    assert_eq!(error_of(&exchange(&app, &other, &code, REDIRECT, VERIFIER)), "invalid_grant");
}

#[test]
fn refresh_tokens_rotate_and_a_reused_one_revokes_the_family() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let (client_id, t) = connected(&app, &ada, "read write");
    let r1 = t["refresh_token"].as_str().unwrap().to_owned();
    let next = refresh(&app, &client_id, &r1);
    assert_eq!(next.status, 200, "{}", String::from_utf8_lossy(&next.body));
    let t2 = body(&next);
    let r2 = t2["refresh_token"].as_str().unwrap().to_owned();
    assert_ne!(r1, r2);
    let access2 = t2["access_token"].as_str().unwrap().to_owned();
    assert_eq!(tools_list_status(&app, &access2), 200);
    // The old one again: someone else holds it. Everything of this sign-in ends.
    assert_eq!(error_of(&refresh(&app, &client_id, &r1)), "invalid_grant");
    assert_eq!(tools_list_status(&app, &access2), 401);
    assert_eq!(error_of(&refresh(&app, &client_id, &r2)), "invalid_grant");
}

#[test]
fn an_access_token_expires() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let (_, t) = connected(&app, &ada, "read");
    let access = t["access_token"].as_str().unwrap();
    app.advance(t["expires_in"].as_i64().unwrap() * 1000 + 1);
    assert_eq!(tools_list_status(&app, access), 401);
}

/// An access token is bound to `/v1/mcp` (RFC 8707): the console's sign-in refuses it, as REST does.
#[test]
fn a_console_sign_in_with_an_apps_access_token_is_refused() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let (_, t) = connected(&app, &ada, "read write");
    let r =
        app.send(request("POST", "/console/login", Some(""), &form(&[("key", t["access_token"].as_str().unwrap())])));
    assert_eq!(r.status, 401, "the sign-in page again, not a session");
    assert!(r.header("set-cookie").is_none());
    assert!(String::from_utf8_lossy(&r.body).contains("works only for MCP at /v1/mcp"));
}

/// The second attack's first finding: with its hour-long token an app minted a key, a runner token and an
/// admin's invitation that all outlived its disconnection. The rule chosen (as GitHub's OAuth apps cannot
/// create personal access tokens or manage an organisation's members without the owner): an app's token
/// is accepted only at `/v1/mcp`, and no operation that mints a credential or changes members runs for it,
/// on any face.
#[test]
fn an_app_mints_no_credential_and_changes_no_member_so_its_disconnection_ends_everything() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let (_, t) = connected(&app, &ada, "read write");
    let access = t["access_token"].as_str().unwrap().to_owned();
    // REST refuses the token outright: it was issued for /v1/mcp.
    for (method, path, body) in [
        ("POST", "/v1/keys".to_owned(), json!({"name": "forever", "scopes": ["read", "write"]})),
        ("POST", "/v1/runners".to_owned(), json!({"name": "box"})),
        ("POST", format!("/v1/workspaces/{}/invitations", ada.slug), json!({"role": "admin"})),
        ("GET", "/v1/agents".to_owned(), Value::Null),
    ] {
        let r = app.request(method, &path, Some(&access), (!body.is_null()).then_some(body));
        assert_eq!(r.status, 401, "{method} {path}: {}", String::from_utf8_lossy(&r.body));
        assert!(String::from_utf8_lossy(&r.body).contains("accepted only there"), "{method} {path}");
        assert!(r.header("www-authenticate").unwrap().contains("invalid_token"));
    }
    // Every operation of the table that mints a credential or changes members refuses an app, whatever
    // face reaches it and before its arguments are read.
    let flagged: Vec<&str> = agentsky::ops::OPS.iter().filter(|op| op.credentials).map(|op| op.name).collect();
    for name in ["create_key", "register_runner", "create_invitation", "issue_session_token", "open_console"] {
        assert!(flagged.contains(&name), "`{name}` mints a credential");
    }
    let hash = agentsky::rules::ids::hash_secret(&access);
    app.system(move |cx| {
        Box::pin(async move {
            let mut as_app = agentsky::cx::Cx::system(cx.env, cx.now_ms, "req_app".into());
            as_app.caller = agentsky::store::keys::authenticate(cx.db(), &hash, cx.now_ms).await.unwrap();
            assert!(as_app.caller.as_ref().unwrap().app.is_some());
            for op in agentsky::ops::OPS.iter().filter(|op| op.credentials) {
                let e = agentsky::ops::invoke(&as_app, op, json!({})).await.unwrap_err();
                assert_eq!(e.code.as_str(), "forbidden", "`{}`: {}", op.name, e.message);
                assert!(
                    e.message.contains("an app connected through OAuth cannot create credentials"),
                    "{}",
                    e.message
                );
            }
        })
    });
    // Through `manage` as well: the grouped tool runs the same rows.
    let through = json!({"operation": "create_key", "arguments": {"name": "forever", "scopes": ["read"]}});
    assert_eq!(app.err_code(&access, "manage", through), "forbidden");
    // Its MCP tools work until it is disconnected, then nothing does. It may share a session to be read,
    // not a link that sends messages, which would act in the workspace after it is gone.
    assert_eq!(tools_list_status(&app, &access), 200);
    let agent = app.create_agent(&ada.key, json!({"name": "Echo", "harness": "echo", "model": "echo-1"}));
    let started =
        app.ok(&access, "start_session", json!({"agent_id": agent, "message": "hi", "idempotency_key": "app-1"}));
    let session = started["session"]["session_id"].as_str().unwrap().to_owned();
    assert_eq!(app.err_code(&access, "share_session", json!({"session_id": session})), "forbidden");
    let shared = app.ok(&access, "share_session", json!({"session_id": session, "view_only": true}));
    assert!(shared["share_url"].as_str().unwrap().contains("/s/"));
    let apps = app.request("GET", "/v1/connected-apps", Some(&ada.key), None).json_body();
    let grant = apps["apps"][0]["grant_id"].as_str().unwrap().to_owned();
    assert_eq!(app.request("DELETE", &format!("/v1/connected-apps/{grant}"), Some(&ada.key), None).status, 200);
    assert_eq!(tools_list_status(&app, &access), 401);
    // Nothing it could have minted stands: the account still holds its one key and no runner or invitation.
    assert_eq!(app.request("GET", "/v1/keys", Some(&ada.key), None).json_body()["keys"].as_array().unwrap().len(), 1);
    assert_eq!(app.request("GET", "/v1/runners", Some(&ada.key), None).json_body()["runners"], json!([]));
    let invites = app.request("GET", &format!("/v1/workspaces/{}/invitations", ada.slug), Some(&ada.key), None);
    assert_eq!(invites.json_body()["invitations"], json!([]));
}

#[test]
fn a_token_for_another_audience_is_refused() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let client_id = client(&app);
    let cookie = sign_in(&app, &ada.key);
    let q = authorize_query(&client_id, REDIRECT, "read")
        .replace(&form(&[("resource", RESOURCE)]), &form(&[("resource", "https://other.example/mcp")]));
    let r = app.send(request("GET", &format!("/oauth/authorize?{q}"), Some(&cookie), ""));
    assert_eq!(r.status, 303);
    assert_eq!(param(&query_of(r.header("location").unwrap()), "error").as_deref(), Some("invalid_target"));
    let code = consent(&app, &ada, &client_id, REDIRECT, "read");
    let r = token(
        &app,
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("client_id", &client_id),
            ("redirect_uri", REDIRECT),
            ("code_verifier", VERIFIER),
            ("resource", "https://other.example/mcp"),
        ],
    );
    assert_eq!(error_of(&r), "invalid_target");
}

#[test]
fn scope_cannot_be_escalated() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let (client_id, t) = connected(&app, &ada, "read");
    let r = token(
        &app,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", t["refresh_token"].as_str().unwrap()),
            ("client_id", &client_id),
            ("scope", "read write"),
        ],
    );
    assert_eq!(error_of(&r), "invalid_scope");
    // A console opened with a read key cannot grant write.
    let read_key = app.request("POST", "/v1/keys", Some(&ada.key), Some(json!({"name": "ro", "scopes": ["read"]})));
    let read_key = read_key.json_body()["key"].as_str().unwrap().to_owned();
    let reader = Account { key: read_key, slug: ada.slug.clone(), email: ada.email.clone() };
    let cookie = sign_in(&app, &reader.key);
    let client_id = client(&app);
    let q = authorize_query(&client_id, REDIRECT, "read write");
    let page = app.send(request("GET", &format!("/oauth/authorize?{q}"), Some(&cookie), ""));
    let html = String::from_utf8_lossy(&page.body).into_owned();
    assert!(!html.contains("option value=\"read write\""), "{html}");
    let at = html.find("name=\"csrf\" value=\"").unwrap() + 19;
    let mut fields: Vec<(String, String)> = form_urlencoded::parse(q.as_bytes()).into_owned().collect();
    fields.extend([
        ("csrf".to_owned(), html[at..at + 64].to_owned()),
        ("workspace".into(), ada.slug.clone()),
        ("access".into(), "read write".into()),
        ("decision".into(), "approve".into()),
    ]);
    let body = form_urlencoded::Serializer::new(String::new()).extend_pairs(fields).finish();
    let r = app.send(request("POST", "/oauth/authorize", Some(&cookie), &body));
    assert_eq!(r.status, 403);
}

#[test]
fn consent_needs_a_sign_in_and_a_csrf_token_and_can_be_denied() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let client_id = client(&app);
    let q = authorize_query(&client_id, REDIRECT, "read");
    let r = app.send(request("GET", &format!("/oauth/authorize?{q}"), None, ""));
    assert_eq!(r.status, 303);
    let to = r.header("location").unwrap();
    assert!(to.starts_with("/console/login?next=%2Foauth%2Fauthorize%3F"), "{to}");
    let cookie = sign_in(&app, &ada.key);
    let mut fields: Vec<(String, String)> = form_urlencoded::parse(q.as_bytes()).into_owned().collect();
    fields.extend([
        ("workspace".to_owned(), ada.slug.clone()),
        ("access".into(), "read".into()),
        ("decision".into(), "approve".into()),
    ]);
    let forged = form_urlencoded::Serializer::new(String::new()).extend_pairs(fields.clone()).finish();
    assert_eq!(app.send(request("POST", "/oauth/authorize", Some(&cookie), &forged)).status, 403);
    let page = app.send(request("GET", &format!("/oauth/authorize?{q}"), Some(&cookie), ""));
    let html = String::from_utf8_lossy(&page.body).into_owned();
    assert!(page.header("content-security-policy").unwrap().contains("form-action 'self' http://127.0.0.1"));
    let at = html.find("name=\"csrf\" value=\"").unwrap() + 19;
    fields.retain(|(k, _)| k != "decision");
    fields.extend([("csrf".to_owned(), html[at..at + 64].to_owned()), ("decision".into(), "deny".into())]);
    let denied = form_urlencoded::Serializer::new(String::new()).extend_pairs(fields).finish();
    let r = app.send(request("POST", "/oauth/authorize", Some(&cookie), &denied));
    assert_eq!(r.status, 303);
    let q = query_of(r.header("location").unwrap());
    assert_eq!(param(&q, "error").as_deref(), Some("access_denied"));
    assert_eq!(param(&q, "iss").as_deref(), Some(ORIGIN));
}

#[test]
fn revoked_tokens_are_refused() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let (client_id, t) = connected(&app, &ada, "read");
    let access = t["access_token"].as_str().unwrap();
    // Another client cannot revoke it; the answer is 200 all the same (RFC 7009 §2.2).
    let other = client(&app);
    let r = app.send(request("POST", "/oauth/revoke", None, &form(&[("token", access), ("client_id", &other)])));
    assert_eq!(r.status, 200);
    assert_eq!(tools_list_status(&app, access), 200);
    let r = app.send(request("POST", "/oauth/revoke", None, &form(&[("token", access), ("client_id", &client_id)])));
    assert_eq!(r.status, 200);
    assert_eq!(tools_list_status(&app, access), 401);
    // Revoking the refresh token ends the family.
    let refresh_token = t["refresh_token"].as_str().unwrap();
    app.send(request("POST", "/oauth/revoke", None, &form(&[("token", refresh_token), ("client_id", &client_id)])));
    assert_eq!(error_of(&refresh(&app, &client_id, refresh_token)), "invalid_grant");
}

#[test]
fn the_console_lists_connected_apps_and_disconnects_them() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let (client_id, t) = connected(&app, &ada, "read write");
    let access = t["access_token"].as_str().unwrap();
    let apps = app.request("GET", "/v1/connected-apps", Some(&ada.key), None).json_body();
    let grant_id = apps["apps"][0]["grant_id"].as_str().unwrap().to_owned();
    assert_eq!(apps["apps"][0]["client_name"], "Test client");
    let cookie = sign_in(&app, &ada.key);
    let page = app.send(request("GET", &format!("/console/w/{}/keys", ada.slug), Some(&cookie), ""));
    let html = String::from_utf8_lossy(&page.body).into_owned();
    assert!(html.contains("Connected apps") && html.contains("Test client"), "{html}");
    let at = html.find("name=\"csrf\" value=\"").unwrap() + 19;
    let csrf = html[at..at + 64].to_owned();
    let path = format!("/console/w/{}/op/disconnect_app", ada.slug);
    let back = format!("/console/w/{}/keys", ada.slug);
    let r = app.send(request(
        "POST",
        &path,
        Some(&cookie),
        &form(&[("csrf", &csrf), ("back", &back), ("grant_id", &grant_id)]),
    ));
    assert_eq!(r.status, 303);
    assert_eq!(tools_list_status(&app, access), 401);
    assert_eq!(error_of(&refresh(&app, &client_id, t["refresh_token"].as_str().unwrap())), "invalid_grant");
    let apps = app.request("GET", "/v1/connected-apps", Some(&ada.key), None).json_body();
    assert_eq!(apps["apps"], json!([]));
}

#[test]
fn a_client_id_metadata_document_is_fetched_checked_and_cached() {
    let app = TestApp::with_config(Config { allow_loopback_http: true, ..TestApp::config() });
    let ada = app.signup("Ada", "ada@example.com");
    let url = "http://127.0.0.1:9911/client.json";
    app.sessions.net.answer(move |out| {
        assert!(out.body.is_empty());
        HttpResponse::json(
            200,
            &json!({"client_id": url, "client_name": "Test client", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"}),
        )
    });
    let code = consent(&app, &ada, url, REDIRECT, "read");
    let fetched = app.sessions.net.requests.borrow().len();
    let r = exchange(&app, url, &code, REDIRECT, VERIFIER);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    consent(&app, &ada, url, REDIRECT, "read");
    assert_eq!(app.sessions.net.requests.borrow().len(), fetched, "served from the cache");
    // A document naming another client_id, or too large, is refused on the page.
    let other = "http://127.0.0.1:9911/other.json";
    app.sessions
        .net
        .answer(|_| HttpResponse::json(200, &json!({"client_id": "https://x.example/c", "redirect_uris": [REDIRECT]})));
    let cookie = sign_in(&app, &ada.key);
    let r = app.send(request(
        "GET",
        &format!("/oauth/authorize?{}", authorize_query(other, REDIRECT, "read")),
        Some(&cookie),
        "",
    ));
    assert_eq!(r.status, 400);
    assert!(String::from_utf8_lossy(&r.body).contains("client_id"));
    app.sessions.net.answer(|_| HttpResponse::text(200, "application/json", vec![b' '; 6000]));
    let large = "http://127.0.0.1:9911/large.json";
    let r = app.send(request(
        "GET",
        &format!("/oauth/authorize?{}", authorize_query(large, REDIRECT, "read")),
        Some(&cookie),
        "",
    ));
    assert_eq!(r.status, 400);
    // Without the development opt-in, a loopback document is not fetched at all.
    let prod = TestApp::new();
    let ada = prod.signup("Ada", "ada@example.com");
    let cookie = sign_in(&prod, &ada.key);
    let r = prod.send(request(
        "GET",
        &format!("/oauth/authorize?{}", authorize_query(url, REDIRECT, "read")),
        Some(&cookie),
        "",
    ));
    assert_eq!(r.status, 400);
    assert!(prod.sessions.net.requests.borrow().is_empty());
}

#[test]
fn bad_token_requests_get_rfc_6749_errors_never_a_500() {
    let app = TestApp::new();
    for (fields, error) in [
        (vec![], "invalid_request"),
        (vec![("grant_type", "password")], "unsupported_grant_type"),
        (vec![("grant_type", "authorization_code")], "invalid_request"),
        (
            vec![("grant_type", "authorization_code"), ("code", "x"), ("client_id", "y"), ("code_verifier", "z")],
            "invalid_grant",
        ),
        (vec![("grant_type", "refresh_token"), ("refresh_token", "x"), ("client_id", "y")], "invalid_grant"),
    ] {
        let r = token(&app, &fields);
        assert_eq!(r.status, 400, "{fields:?}");
        assert_eq!(error_of(&r), error, "{fields:?}");
    }
    let r = app.send(request("GET", "/oauth/token", None, ""));
    assert_eq!(r.status, 405);
}

#[test]
fn a_loopback_redirect_uri_with_a_line_break_is_refused_before_consent() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let client_id = client(&app);
    let cookie = sign_in(&app, &ada.key);
    // It parses to the registered loopback URI (a parse drops the line break), but `Location` cannot carry it.
    let q = authorize_query(&client_id, "http://127.0.0.1:49152/call\r\nback", "read");
    for method in ["GET", "POST"] {
        let (path, body) = match method {
            "GET" => (format!("/oauth/authorize?{q}"), String::new()),
            _ => ("/oauth/authorize".to_owned(), format!("{q}&decision=approve&access=read")),
        };
        let r = app.send(request(method, &path, Some(&cookie), &body));
        assert_eq!(r.status, 400, "{method}: {}", String::from_utf8_lossy(&r.body));
        assert!(r.header("location").is_none(), "{method}");
        assert!(String::from_utf8_lossy(&r.body).contains("`redirect_uri` must not contain control characters"));
    }
}

/// `GET /oauth/authorize` naming `client_id`, from `ip`, signed in with `cookie` or anonymous.
fn authorize_request(client_id: &str, cookie: Option<&str>, ip: &str) -> HttpRequest {
    let q = authorize_query(client_id, REDIRECT, "read");
    let mut req = request("GET", &format!("/oauth/authorize?{q}"), cookie, "");
    req.client_ip = ip.into();
    req
}

fn authorize_from(app: &TestApp, client_id: &str, cookie: Option<&str>, ip: &str) -> HttpResponse {
    app.send(authorize_request(client_id, cookie, ip))
}

fn fetches(app: &TestApp) -> usize {
    app.sessions.net.requests.borrow().len()
}

/// A network serving a good metadata document at every URL.
fn serve_documents(app: &TestApp) {
    app.sessions.net.answer(|out| {
        HttpResponse::json(
            200,
            &json!({"client_id": out.url, "client_name": "Test client", "redirect_uris": [REDIRECT]}),
        )
    });
}

fn loopback_app() -> TestApp {
    TestApp::with_config(Config { allow_loopback_http: true, ..TestApp::config() })
}

/// What an error page says.
fn page_error(r: &HttpResponse) -> String {
    let html = String::from_utf8_lossy(&r.body);
    let at = html.find("class=\"error\">").map_or(0, |i| i + 14);
    html[at..].split("</p>").next().unwrap_or_default().to_owned()
}

#[test]
fn an_anonymous_caller_has_documents_fetched_at_most_10_times_a_minute_from_one_address() {
    let app = loopback_app();
    let ada = app.signup("Ada", "ada@example.com");
    serve_documents(&app);
    let doc = |i: usize| format!("http://127.0.0.1:9911/client-{i}.json");
    for i in 0..10 {
        assert_eq!(authorize_from(&app, &doc(i), None, "198.51.100.1").status, 303, "on to sign in");
    }
    assert_eq!(fetches(&app), 10);
    let r = authorize_from(&app, &doc(10), None, "198.51.100.1");
    assert_eq!(r.status, 429, "{}", page_error(&r));
    assert!(page_error(&r).contains("sign in"), "{}", page_error(&r));
    assert_eq!(fetches(&app), 10, "the eleventh was not fetched");
    // A cached document costs no fetch; another address has its own limit.
    assert_eq!(authorize_from(&app, &doc(0), None, "198.51.100.1").status, 303);
    assert_eq!(authorize_from(&app, &doc(11), None, "198.51.100.2").status, 303);
    assert_eq!(fetches(&app), 11);
    // A signed-in person is not held to it.
    let cookie = sign_in(&app, &ada.key);
    for i in 12..25 {
        assert_eq!(authorize_from(&app, &doc(i), Some(&cookie), "198.51.100.1").status, 200);
    }
    assert_eq!(fetches(&app), 24);
}

#[test]
fn a_document_that_could_not_be_used_is_not_fetched_again_for_five_minutes_by_anyone() {
    let app = loopback_app();
    let ada = app.signup("Ada", "ada@example.com");
    let url = "http://127.0.0.1:9911/missing.json";
    app.sessions.net.answer(|_| HttpResponse::text(404, "text/plain", b"gone".to_vec()));
    assert_eq!(authorize_from(&app, url, None, "198.51.100.1").status, 400);
    assert_eq!(fetches(&app), 1);
    assert_eq!(authorize_from(&app, url, None, "198.51.100.2").status, 400, "another address");
    let cookie = sign_in(&app, &ada.key);
    assert_eq!(authorize_from(&app, url, Some(&cookie), "198.51.100.1").status, 400, "a signed-in person");
    assert_eq!(fetches(&app), 1, "the failure was remembered");
    // Five minutes on, the now-served document is fetched and used.
    serve_documents(&app);
    app.advance(5 * 60_000);
    assert_eq!(authorize_from(&app, url, Some(&cookie), "198.51.100.1").status, 200);
    assert_eq!(fetches(&app), 2);
}

#[test]
fn a_document_over_5_kb_is_refused_without_reading_the_rest_of_it() {
    let app = loopback_app();
    app.sessions.net.answer(|_| HttpResponse::text(200, "application/json", vec![b' '; 8 << 20]));
    let r = authorize_from(&app, "http://127.0.0.1:9911/huge.json", None, "198.51.100.1");
    assert_eq!(r.status, 400);
    let taken = app.sessions.net.taken.get();
    assert!(taken <= 5 * 1024 + crate::support::NET_CHUNK_BYTES, "{taken} bytes of 8 MB were read");
}

#[test]
fn every_way_a_document_fails_answers_the_same_words_and_echoes_nothing() {
    let app = loopback_app();
    let cases: Vec<(&str, Option<HttpResponse>, &str)> = vec![
        ("404", Some(HttpResponse::text(404, "text/plain", b"Not here: /srv/tenant-7/private".to_vec())), "http_404"),
        ("500", Some(HttpResponse::text(500, "text/plain", b"stack trace at db.internal:5432".to_vec())), "http_500"),
        ("not-json", Some(HttpResponse::text(200, "text/html", b"<html>hello".to_vec())), "not_json"),
        ("too-large", Some(HttpResponse::text(200, "application/json", vec![b' '; 6000])), "too_large"),
        (
            "liar",
            Some(HttpResponse::json(200, &json!({"client_id": "https://x.example/c", "redirect_uris": [REDIRECT]}))),
            "invalid",
        ),
        ("no-redirects", Some(HttpResponse::json(200, &json!({"client_id": "SELF", "redirect_uris": []}))), "invalid"),
        ("moved", Some(HttpResponse::new(302).with_header("location", "http://127.0.0.1:8787/")), "unreachable"),
        ("timeout", None, "timeout"),
    ];
    let mut said = vec![];
    for (name, answer, why) in cases {
        let url = format!("http://127.0.0.1:9911/{name}.json");
        match answer {
            Some(a) => {
                let own = url.clone();
                app.sessions.net.answer(move |_| {
                    let body = String::from_utf8_lossy(&a.body).replace("SELF", &own);
                    HttpResponse { body: body.into_bytes(), ..a.clone() }
                })
            }
            None => app.sessions.net.hang(),
        }
        let (r, line) = app.send_logged(authorize_request(&url, None, "198.51.100.1"));
        assert_eq!(r.status, 400, "{name}");
        // The reason is the log line's alone.
        assert_eq!(line["error_code"], format!("client_document_{why}"), "{name}");
        said.push((name, page_error(&r)));
    }
    // Named again, a failed one is not fetched: the same words, and the log says why.
    let fetched = fetches(&app);
    let (r, line) = app.send_logged(authorize_request("http://127.0.0.1:9911/404.json", None, "198.51.100.1"));
    assert_eq!(fetches(&app), fetched);
    assert_eq!(line["error_code"], "client_document_failed_recently");
    said.push(("again", page_error(&r)));
    let first = &said[0].1;
    assert!(first.contains("client_id") && first.contains("could not be used"), "{first}");
    for (name, text) in &said {
        assert_eq!(text, first, "{name}");
        for leak in
            ["Not here", "/srv", "db.internal", "404", "500", "JSON", "5120", "bytes", "seconds", "redirect_uris"]
        {
            assert!(!text.contains(leak), "{name}: {text}");
        }
    }
}

#[test]
fn this_servers_own_origin_is_never_fetched_even_with_loopback_allowed() {
    let app = loopback_app();
    let ada = app.signup("Ada", "ada@example.com");
    serve_documents(&app);
    let cookie = sign_in(&app, &ada.key);
    let inner =
        format!("{ORIGIN}/oauth/authorize?{}", authorize_query("http://127.0.0.1:9911/c.json", REDIRECT, "read"));
    let nested = format!("{ORIGIN}/oauth/authorize?{}", authorize_query(&inner, REDIRECT, "read"));
    for own in [
        nested.as_str(),
        "http://127.0.0.1:8787/client.json",
        "http://localhost:8787/client.json",
        "http://[::1]:8787/client.json",
        "http://2130706433:8787/client.json",
        "https://127.0.0.1:8787/client.json",
    ] {
        for who in [None, Some(cookie.as_str())] {
            let r = authorize_from(&app, own, who, "198.51.100.1");
            assert_eq!(r.status, 400, "{own}");
            assert!(page_error(&r).contains("this server"), "{own}: {}", page_error(&r));
        }
    }
    assert_eq!(fetches(&app), 0);
    // The deployment's public origin too, however it is spelled.
    let public = TestApp::with_config(Config {
        allow_loopback_http: true,
        public_base_url: "https://sky.example".into(),
        ..TestApp::config()
    });
    serve_documents(&public);
    for own in ["https://sky.example/oauth/authorize?client_id=x", "https://SKY.example:443/client.json"] {
        assert_eq!(authorize_from(&public, own, None, "198.51.100.1").status, 400, "{own}");
    }
    assert_eq!(fetches(&public), 0);
    // Another port on this machine is another server.
    assert_eq!(authorize_from(&app, "http://127.0.0.1:9911/c.json", Some(&cookie), "198.51.100.1").status, 200);
}
