//! Device sign-in (`sky auth login`): a code, the approval page, polling, and the key minted once.

use crate::support::TestApp;
use agentsky::http::{HttpRequest, HttpResponse};
use serde_json::{json, Value};

fn start(app: &TestApp, name: &str) -> Value {
    let resp = app.request("POST", "/v1/device/code", None, Some(json!({ "device_name": name })));
    assert_eq!(resp.status, 201, "{}", String::from_utf8_lossy(&resp.body));
    resp.json_body()
}

fn poll(app: &TestApp, code: &Value) -> HttpResponse {
    app.request("POST", "/v1/device/token", None, Some(json!({ "device_code": code["device_code"] })))
}

fn poll_error(app: &TestApp, code: &Value) -> String {
    let resp = poll(app, code);
    assert_eq!(resp.status, 400, "{}", String::from_utf8_lossy(&resp.body));
    resp.json_body()["error"]["code"].as_str().unwrap().to_owned()
}

/// Posts the approval page's form as a browser on this origin would.
fn form(app: &TestApp, fields: &[(&str, &str)]) -> HttpResponse {
    form_from(app, Some("http://127.0.0.1:8787"), fields)
}

fn form_from(app: &TestApp, origin: Option<&str>, fields: &[(&str, &str)]) -> HttpResponse {
    let body: Vec<String> = fields.iter().map(|(k, v)| format!("{k}={}", encode(v))).collect();
    let mut headers = vec![
        ("host".to_owned(), "127.0.0.1:8787".to_owned()),
        ("content-type".into(), "application/x-www-form-urlencoded".into()),
    ];
    if let Some(o) = origin {
        headers.push(("origin".into(), o.into()));
    }
    app.send(HttpRequest {
        method: "POST".into(),
        path: "/device".into(),
        headers,
        body: body.join("&").into_bytes(),
        client_ip: "203.0.113.7".into(),
        ..Default::default()
    })
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            b' ' => "+".into(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn text(resp: &HttpResponse) -> String {
    String::from_utf8_lossy(&resp.body).into_owned()
}

fn user_code(code: &Value) -> &str {
    code["user_code"].as_str().unwrap()
}

#[test]
fn a_device_is_approved_with_an_existing_key_and_collects_its_own_key_once() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let code = start(&app, "sky on laptop");
    let shown = user_code(&code);
    assert!(shown.len() == 9 && shown.as_bytes()[4] == b'-', "{shown}");
    assert_eq!(code["verification_uri"], "http://127.0.0.1:8787/device");
    assert_eq!(code["verification_uri_complete"], format!("http://127.0.0.1:8787/device?code={shown}"));
    assert_eq!((code["expires_in"].as_i64(), code["interval"].as_i64()), (Some(900), Some(5)));

    assert_eq!(poll_error(&app, &code), "authorization_pending");
    assert_eq!(poll_error(&app, &code), "slow_down", "a poll right after another is too fast");
    app.advance(5_000);
    assert_eq!(poll_error(&app, &code), "authorization_pending");

    let page = app.request("GET", &format!("/device?code={}", shown.to_lowercase()), None, None);
    assert_eq!(page.status, 200);
    assert!(text(&page).contains("sky on laptop") && text(&page).contains(shown), "{}", text(&page));
    assert!(page.header("content-security-policy").unwrap().contains("frame-ancestors 'none'"));
    assert_eq!(page.header("cache-control"), Some("no-store"));

    // The wrong key, or another account's email, proves nothing.
    let bob = app.signup("Bob", "bob@example.com");
    for (email, key) in [("ada@example.com", bob.key.as_str()), ("bob@example.com", ada.key.as_str())] {
        let resp = form(&app, &[("user_code", shown), ("action", "approve"), ("email", email), ("key", key)]);
        assert_eq!(resp.status, 403, "{}", text(&resp));
        assert!(text(&resp).contains("do not belong to the same account"));
    }
    app.advance(5_000);
    assert_eq!(poll_error(&app, &code), "authorization_pending");

    let resp =
        form(&app, &[("user_code", shown), ("action", "approve"), ("email", "ADA@example.com"), ("key", &ada.key)]);
    assert_eq!(resp.status, 200, "{}", text(&resp));
    assert!(text(&resp).contains("Approved"));

    app.advance(5_000);
    let got = poll(&app, &code);
    assert_eq!(got.status, 200, "{}", text(&got));
    let got = got.json_body();
    let key = got["key"].as_str().unwrap();
    assert!(key.starts_with("ast_") && key.starts_with(got["prefix"].as_str().unwrap()));
    assert_eq!(got["workspace"], ada.slug);
    assert_eq!(got["email"], "ada@example.com");
    assert_eq!(got["scopes"], json!(["read", "write"]));

    // The key is Ada's, named for the device, and works.
    let keys = app.request("GET", "/v1/keys", Some(key), None).json_body();
    let named: Vec<&Value> = keys["keys"].as_array().unwrap().iter().filter(|k| k["key_id"] == got["key_id"]).collect();
    assert_eq!(named.len(), 1);
    assert_eq!(named[0]["name"], "sky on laptop");
    assert_eq!(keys["keys"].as_array().unwrap().len(), 2, "Ada's first key and the device's");

    // Once: a second poll gets nothing.
    app.advance(5_000);
    assert_eq!(poll_error(&app, &code), "expired_token");
    let page = app.request("GET", &format!("/device?code={shown}"), None, None);
    assert_eq!(page.status, 404);

    // `sky auth logout` revokes it with itself.
    let key_id = got["key_id"].as_str().unwrap();
    assert_eq!(app.request("DELETE", &format!("/v1/keys/{key_id}"), Some(key), None).status, 200);
    assert_eq!(app.request("GET", "/v1/keys", Some(key), None).status, 401);
}

#[test]
fn neither_code_nor_key_is_stored_in_clear() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let code = start(&app, "sky on laptop");
    let shown = user_code(&code);
    form(&app, &[("user_code", shown), ("action", "approve"), ("email", "ada@example.com"), ("key", &ada.key)]);
    app.advance(5_000);
    let key = poll(&app, &code).json_body()["key"].as_str().unwrap().to_owned();
    let dump: String = app
        .db
        .0
        .query_row(
            "SELECT group_concat(device_hash || user_code_hash || device_name || COALESCE(key_id, ''), ' ')
             FROM device_code",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let device_code = code["device_code"].as_str().unwrap();
    for secret in [device_code, shown, &shown.replace('-', ""), &key[4..]] {
        assert!(!dump.contains(secret), "{secret} is stored in clear");
    }
}

#[test]
fn a_denied_code_tells_the_cli_and_cannot_be_approved_after() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let code = start(&app, "sky on laptop");
    let shown = user_code(&code);
    let resp = form(&app, &[("user_code", shown), ("action", "deny")]);
    assert_eq!(resp.status, 200);
    assert!(text(&resp).contains("Denied"));
    assert_eq!(poll_error(&app, &code), "access_denied");
    let resp =
        form(&app, &[("user_code", shown), ("action", "approve"), ("email", "ada@example.com"), ("key", &ada.key)]);
    assert_eq!(resp.status, 404);
    app.advance(5_000);
    assert_eq!(poll_error(&app, &code), "access_denied");
}

#[test]
fn codes_expire_after_fifteen_minutes() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let code = start(&app, "sky on laptop");
    let shown = user_code(&code);
    app.advance(15 * 60_000);
    assert_eq!(poll_error(&app, &code), "expired_token");
    let resp =
        form(&app, &[("user_code", shown), ("action", "approve"), ("email", "ada@example.com"), ("key", &ada.key)]);
    assert_eq!(resp.status, 404);
    assert!(text(&resp).contains("expired"));
    // An unknown or garbled device code is the same answer, and so is a garbled user code on the page.
    assert_eq!(poll_error(&app, &json!({ "device_code": "skydc_nope" })), "expired_token");
    assert_eq!(poll_error(&app, &json!({ "device_code": "something else" })), "expired_token");
    assert_eq!(app.request("GET", "/device?code=AAAA-1111", None, None).status, 404);
    assert_eq!(app.request("GET", "/device", None, None).status, 200, "without a code the page asks for one");
}

#[test]
fn a_new_account_is_created_on_the_page_and_its_first_key_is_the_devices() {
    let app = TestApp::new();
    let code = start(&app, "sky on laptop");
    let shown = user_code(&code);
    let resp =
        form(&app, &[("user_code", shown), ("action", "create"), ("name", "Cy Young"), ("email", "cy@example.com")]);
    assert_eq!(resp.status, 200, "{}", text(&resp));
    app.advance(5_000);
    let got = poll(&app, &code).json_body();
    assert_eq!(got["workspace"], "cy-young");
    assert_eq!(got["email"], "cy@example.com");
    let key = got["key"].as_str().unwrap();
    let keys = app.request("GET", "/v1/keys", Some(key), None).json_body();
    assert_eq!(keys["keys"].as_array().unwrap().len(), 1, "{keys}");
    let ws = app.request("GET", "/v1/workspaces", Some(key), None).json_body();
    assert!(ws.to_string().contains("cy-young"), "{ws}");

    // An email already taken is refused on the page, and the code stays usable.
    let code = start(&app, "sky on desktop");
    let shown = user_code(&code);
    let resp = form(&app, &[("user_code", shown), ("action", "create"), ("name", "Cy"), ("email", "CY@example.com")]);
    assert_eq!(resp.status, 409);
    assert!(text(&resp).contains("already exists"));
    assert_eq!(poll_error(&app, &code), "authorization_pending");
}

#[test]
fn an_account_is_never_created_for_a_code_that_is_no_longer_pending() {
    let app = TestApp::new();
    let code = start(&app, "sky on laptop");
    let shown = user_code(&code);
    app.advance(15 * 60_000 + 1);
    let resp = form(&app, &[("user_code", shown), ("action", "create"), ("name", "Cy"), ("email", "cy@example.com")]);
    assert_eq!(resp.status, 404, "{}", text(&resp));
    let n: i64 = app.db.0.query_row("SELECT COUNT(*) FROM account", [], |r| r.get(0)).unwrap();
    assert_eq!(n, 0);
}

#[test]
fn closed_sign_up_hides_account_creation_and_refuses_it() {
    let app = TestApp::with_config(agentsky::cx::Config {
        open_signup: false,
        rate_limit_per_min: 600,
        ..Default::default()
    });
    let code = start(&app, "sky on laptop");
    let shown = user_code(&code);
    let page = text(&app.request("GET", &format!("/device?code={shown}"), None, None));
    assert!(page.contains("Approve") && !page.contains("Create my account"), "{page}");
    let resp = form(&app, &[("user_code", shown), ("action", "create"), ("name", "Cy"), ("email", "cy@example.com")]);
    assert_eq!(resp.status, 403);
    assert_eq!(poll_error(&app, &code), "authorization_pending");
}

#[test]
fn approval_never_widens_the_proving_key() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let read_only = app.request("POST", "/v1/keys", Some(&ada.key), Some(json!({"name": "ro", "scopes": ["read"]})));
    let read_only = read_only.json_body()["key"].as_str().unwrap().to_owned();
    let code = start(&app, "sky on laptop");
    let shown = user_code(&code);
    let resp =
        form(&app, &[("user_code", shown), ("action", "approve"), ("email", "ada@example.com"), ("key", &read_only)]);
    assert_eq!(resp.status, 403);
    assert!(text(&resp).contains("read-only"));

    // A key locked to a shared workspace approves a key locked the same way.
    let team = app.request("POST", "/v1/workspaces", Some(&ada.key), Some(json!({"name": "Team", "slug": "team"})));
    assert_eq!(team.status, 201, "{}", text(&team));
    let locked = app.request(
        "POST",
        "/v1/keys",
        Some(&ada.key),
        Some(json!({"name": "team", "scopes": ["read", "write"], "workspace": "team"})),
    );
    let locked = locked.json_body()["key"].as_str().unwrap().to_owned();
    let resp =
        form(&app, &[("user_code", shown), ("action", "approve"), ("email", "ada@example.com"), ("key", &locked)]);
    assert_eq!(resp.status, 200, "{}", text(&resp));
    app.advance(5_000);
    let got = poll(&app, &code).json_body();
    assert_eq!(got["workspace"], "team");
    let key = got["key"].as_str().unwrap();
    let listed = app.request("GET", "/v1/keys", Some(key), None).json_body();
    let mine = listed["keys"].as_array().unwrap().iter().find(|k| k["key_id"] == got["key_id"]).unwrap().clone();
    assert_eq!(mine["workspace"], "team");
}

#[test]
fn the_page_refuses_other_sites_and_escapes_what_it_shows() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let code = start(&app, "<script>alert(1)</script>");
    let shown = user_code(&code);
    let page = text(&app.request("GET", &format!("/device?code={shown}"), None, None));
    assert!(!page.contains("<script>") && page.contains("&lt;script&gt;"), "{page}");

    let fields = [("user_code", shown), ("action", "approve"), ("email", "ada@example.com"), ("key", ada.key.as_str())];
    for origin in ["https://evil.example", "null", "http://127.0.0.1:9999"] {
        assert_eq!(form_from(&app, Some(origin), &fields).status, 403, "{origin}");
    }
    assert_eq!(poll_error(&app, &code), "authorization_pending");
    // No Origin at all (curl, the end-to-end test) is let through: the form proves the account.
    assert_eq!(form_from(&app, None, &fields).status, 200);
}

#[test]
fn bad_requests_get_clear_errors() {
    let app = TestApp::new();
    let resp = app.request("POST", "/v1/device/code", None, Some(json!({ "device_name": "" })));
    assert_eq!(resp.status, 400);
    assert!(resp.json_body()["error"]["message"].as_str().unwrap().contains("device_name"));
    let resp = app.request("POST", "/v1/device/token", None, Some(json!({})));
    assert_eq!(resp.status, 400);
    let code = start(&app, "sky on laptop");
    let resp = form(&app, &[("user_code", user_code(&code)), ("action", "launch")]);
    assert_eq!(resp.status, 400);
}
