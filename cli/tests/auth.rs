//! `sky auth` against a stand-in server: device sign-in stores the key privately and never prints it,
//! `status` checks it, `logout` revokes it by id; the flow's refusals become clear errors.

mod support;

use serde_json::json;
use sky::auth::{self, Options};
use sky::context::Context;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use support::{mode, Scratch, StandIn};

const KEY: &str = "ast_DeviceKey0123456789abcdefghijklmnopqrstuvwxy";

/// A server whose device flow answers `pending` (or `slow_down` second when `slow` is set) three times,
/// then `final_answer`: a key, or that error.
fn device_server(final_answer: &'static str, slow: bool) -> StandIn {
    let polls = Arc::new(AtomicUsize::new(0));
    StandIn::start(move |req| {
        let json_reply = |status: u16, v: serde_json::Value| (status, "application/json", v.to_string());
        let err = |code: &str| json_reply(400, json!({"error": {"code": code, "message": code}}));
        match (req.method.as_str(), req.url.as_str()) {
            ("POST", "/v1/device/code") => json_reply(
                200,
                json!({"device_code": "skydc_secret", "user_code": "BCDF-GHJK",
                    "verification_uri": "http://x/device", "verification_uri_complete": "http://x/device?code=BCDF-GHJK",
                    "expires_in": 900, "interval": 0}),
            ),
            ("POST", "/v1/device/token") => match polls.fetch_add(1, Ordering::SeqCst) {
                1 if slow => err("slow_down"),
                0..=2 => err("authorization_pending"),
                _ if final_answer == "key" => json_reply(
                    200,
                    json!({"key": KEY, "key_id": "key_0123", "prefix": &KEY[..12], "scopes": ["read", "write"],
                        "workspace": "ada", "email": "ada@example.com"}),
                ),
                _ => err(final_answer),
            },
            ("GET", "/v1/workspaces") if req.header("authorization") == Some(&format!("Bearer {KEY}")) => {
                json_reply(200, json!({"workspaces": [{"slug": "ada", "is_current": true}]}))
            }
            ("DELETE", "/v1/keys/key_0123") if req.header("authorization") == Some(&format!("Bearer {KEY}")) => {
                json_reply(200, json!({"key_id": "key_0123", "revoked": true}))
            }
            _ => json_reply(401, json!({"error": {"code": "unauthorized", "message": "unknown or revoked API key"}})),
        }
    })
}

fn opts(srv: &StandIn) -> Options {
    Options { server: Some(srv.url.clone()), device_name: Some("sky on test".into()), ..Default::default() }
}

#[test]
fn device_sign_in_stores_the_key_privately_status_checks_it_and_logout_revokes_it() {
    let s = Scratch::new("login");
    let ctx = Context::in_home(&s.0);
    let srv = device_server("key", false);
    let mut out = Vec::new();
    let key = auth::login(&ctx, &opts(&srv), &mut out).unwrap();
    let out = String::from_utf8(out).unwrap();
    assert_eq!(key, KEY);
    assert!(out.contains("BCDF-GHJK") && out.contains("http://x/device?code=BCDF-GHJK"), "{out}");
    assert!(out.contains("ada@example.com") && out.contains(&KEY[..12]), "{out}");
    assert!(!out.contains(KEY), "never printed in full: {out}");

    let code = srv.requests().into_iter().find(|r| r.url == "/v1/device/code").unwrap();
    assert_eq!(serde_json::from_str::<serde_json::Value>(&code.body).unwrap()["device_name"], "sky on test");

    let path = s.0.join(".config/agentsky/config.json");
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(&s.0.join(".config/agentsky")), 0o700);
    let stored: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(stored["key"], KEY);
    assert_eq!(stored["key_id"], "key_0123");
    assert_eq!(stored["server"], srv.url);

    // The stored server and key are the defaults from now on.
    let mut out = Vec::new();
    auth::status(&ctx, &Options::default(), &mut out).unwrap();
    let out = String::from_utf8(out).unwrap();
    assert!(out.contains("stored by sky auth login") && out.contains("workspace ada"), "{out}");
    assert!(!out.contains(KEY));

    let mut out = Vec::new();
    auth::logout(&ctx, &mut out).unwrap();
    let out = String::from_utf8(out).unwrap();
    assert!(out.contains("revoked"), "{out}");
    let revoke = srv.requests().into_iter().find(|r| r.method == "DELETE").unwrap();
    assert_eq!(revoke.url, "/v1/keys/key_0123");
    let stored: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert!(stored.get("key").is_none(), "{stored}");
    assert_eq!(stored["server"], srv.url, "the server is remembered");
    assert!(auth::status(&ctx, &Options::default(), &mut Vec::new()).unwrap_err().0.contains("not signed in"));
}

#[test]
fn a_denied_or_expired_sign_in_is_a_clear_error_and_stores_nothing() {
    for (answer, words) in [("access_denied", "denied"), ("expired_token", "expired")] {
        let s = Scratch::new("denied");
        let ctx = Context::in_home(&s.0);
        let srv = device_server(answer, false);
        let e = auth::login(&ctx, &opts(&srv), &mut Vec::new()).unwrap_err();
        assert!(e.0.contains(words), "{e}");
        assert!(!s.0.join(".config/agentsky/config.json").exists());
    }
}

#[test]
fn a_key_given_for_scripts_is_checked_and_never_revoked_by_logout() {
    let s = Scratch::new("key");
    let ctx = Context::in_home(&s.0);
    let srv = device_server("key", false);
    let mut o = opts(&srv);
    o.key = Some("ast_wrong_key_wrong_key_wrong_key_wrong_key_0000".into());
    let e = auth::login(&ctx, &o, &mut Vec::new()).unwrap_err();
    assert!(e.0.contains("refused the key ast_wrong_ke…"), "{e}");
    assert!(!e.0.contains("ast_wrong_key_wrong"), "{e}");

    o.key = Some(KEY.into());
    auth::login(&ctx, &o, &mut Vec::new()).unwrap();
    let mut out = Vec::new();
    auth::logout(&ctx, &mut out).unwrap();
    assert!(String::from_utf8(out).unwrap().contains("not revoked"));
    assert!(srv.requests().iter().all(|r| r.method != "DELETE"));
}

#[test]
fn an_unreachable_server_says_so() {
    let s = Scratch::new("down");
    let ctx = Context::in_home(&s.0);
    let o = Options { server: Some("http://127.0.0.1:9".into()), ..Default::default() };
    let e = auth::login(&ctx, &o, &mut Vec::new()).unwrap_err();
    assert!(e.0.contains("cannot reach http://127.0.0.1:9"), "{e}");
}

#[test]
fn slow_down_lengthens_the_interval_instead_of_failing() {
    let srv = device_server("key", true);
    let api = sky::api::Api::new(&srv.url);
    let mut out = Vec::new();
    let step = std::time::Duration::from_millis(200);
    let started = std::time::Instant::now();
    let token = auth::device_sign_in(&api, "sky on test", &mut out, false, false, step).unwrap();
    assert_eq!(token.key, KEY);
    assert!(started.elapsed() >= step * 2, "the two polls after slow_down waited the longer interval");
}

#[test]
fn console_prints_a_one_time_link_made_for_the_key() {
    let s = Scratch::new("console");
    let ctx = Context::in_home(&s.0);
    let srv = StandIn::start(|req| match (req.method.as_str(), req.url.as_str()) {
        ("POST", "/v1/console/link") if req.header("authorization") == Some(&format!("Bearer {KEY}")) => {
            (201, "application/json", json!({"url": "http://x/console/enter?t=once", "expires_ms": 1}).to_string())
        }
        _ => (401, "application/json", json!({"error": {"code": "unauthorized", "message": "nope"}}).to_string()),
    });
    let mut out = Vec::new();
    let with_key = Options { key: Some(KEY.into()), open_browser: false, ..opts(&srv) };
    auth::console(&ctx, &with_key, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("http://x/console/enter?t=once") && !text.contains(KEY), "{text}");
    let without = auth::console(&ctx, &opts(&srv), &mut Vec::new()).unwrap_err();
    assert!(without.to_string().contains("not signed in"), "{without}");
}
