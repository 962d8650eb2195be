//! The session record and agent performance: records over REST and over the webhook, read back by
//! `read_session_record`, and the read model behind `read_agent_performance`.

use crate::support::{Account, TestApp};
use agentsky::http::{HttpRequest, HttpResponse};
use serde_json::{json, Value};

fn app() -> TestApp {
    TestApp::with_secrets()
}

fn agent(app: &TestApp, who: &Account, model: &str) -> String {
    let body = json!({"name": "Echo", "harness": "echo", "model": model});
    let resp = app.request("POST", "/v1/agents", Some(&who.key), Some(body));
    assert_eq!(resp.status, 201, "{:?}", resp.json_body());
    resp.json_body()["agent_id"].as_str().unwrap().to_owned()
}

fn session(app: &TestApp, who: &Account, agent_id: &str, key: &str) -> String {
    let args = json!({"agent_id": agent_id, "message": "do the thing", "idempotency_key": key});
    let started = app.ok(&who.key, "start_session", args);
    app.settle();
    started["session"]["session_id"].as_str().unwrap().to_owned()
}

fn record(app: &TestApp, who: &Account, session_id: &str, body: Value) -> HttpResponse {
    app.request("POST", &format!("/v1/sessions/{session_id}/record"), Some(&who.key), Some(body))
}

fn performance(app: &TestApp, who: &Account) -> Vec<Value> {
    app.ok(&who.key, "read_agent_performance", json!({}))["performance"].as_array().unwrap().clone()
}

fn row<'a>(rows: &'a [Value], model: &str) -> &'a Value {
    rows.iter().find(|r| r["model"] == model).unwrap_or_else(|| panic!("no {model} in {rows:?}"))
}

#[test]
fn records_recorded_over_rest_appear_in_read_session_record() {
    let app = app();
    let ada = app.signup("Ada", "ada@example.com");
    let a = agent(&app, &ada, "m1");
    let s = session(&app, &ada, &a, "k1");
    let empty = app.ok(&ada.key, "read_session_record", json!({"session_id": s}));
    assert_eq!((empty["decisions"].clone(), empty["outcomes"].clone()), (json!([]), json!([])), "nobody decided yet");

    let resp = record(&app, &ada, &s, json!({"name": "adopted", "note": "merged as is"}));
    assert_eq!(resp.status, 201, "{:?}", resp.json_body());
    app.advance(1_000);
    assert_eq!(record(&app, &ada, &s, json!({"name": "vote", "value": "up"})).status, 201);
    let merged = json!({"name": "pr_merged", "url": "https://github.com/o/r/pull/7"});
    assert_eq!(record(&app, &ada, &s, merged).status, 201);

    let rec = app.ok(&ada.key, "read_session_record", json!({"session_id": s}));
    let decisions = rec["decisions"].as_array().unwrap();
    assert_eq!(decisions.len(), 2);
    assert_eq!((decisions[0]["name"].as_str(), decisions[0]["note"].as_str()), (Some("adopted"), Some("merged as is")));
    assert_eq!((decisions[1]["name"].as_str(), decisions[1]["value"].as_str()), (Some("vote"), Some("up")));
    assert_eq!(decisions[0]["by_name"], "Ada", "who");
    assert_eq!(decisions[0]["by_kind"], "member");
    assert_eq!(decisions[0]["recorded_ms"], app.now_ms.get() - 1_000, "when");
    assert_eq!(rec["outcomes"][0]["name"], "pr_merged");
    assert_eq!(rec["outcomes"][0]["url"], "https://github.com/o/r/pull/7");

    // Checked input, and others' sessions stay hidden.
    assert_eq!(record(&app, &ada, &s, json!({"name": "vote"})).status, 400);
    assert_eq!(record(&app, &ada, &s, json!({"name": "liked"})).status, 400);
    assert_eq!(record(&app, &ada, &s, json!({"name": "adopted", "value": "up"})).status, 400);
    let bob = app.signup("Bob", "bob@example.com");
    assert_eq!(record(&app, &bob, &s, json!({"name": "discard"})).status, 404);
    assert_eq!(app.err_code(&bob.key, "read_session_record", json!({"session_id": s})), "not_found");
}

#[test]
fn records_move_read_agent_performance() {
    let app = app();
    let ada = app.signup("Ada", "ada@example.com");
    let (a1, a2) = (agent(&app, &ada, "m1"), agent(&app, &ada, "m2"));
    let s1 = session(&app, &ada, &a1, "k1");
    let s2 = session(&app, &ada, &a1, "k2");
    let s3 = session(&app, &ada, &a2, "k3");
    app.db.0.execute("UPDATE session SET spent_cents = 40 WHERE session_id = ?1", [&s1]).unwrap();
    app.db.0.execute("UPDATE session SET spent_cents = 2 WHERE session_id = ?1", [&s2]).unwrap();

    let before = performance(&app, &ada);
    let m1 = row(&before, "m1");
    assert_eq!(
        (m1["harness"].as_str(), m1["sessions"].as_i64(), m1["spent_cents"].as_i64()),
        (Some("echo"), Some(2), Some(42))
    );
    assert_eq!((m1["decided"].as_i64(), m1["undecided"].as_i64()), (Some(0), Some(2)));

    assert_eq!(record(&app, &ada, &s1, json!({"name": "adopted", "idempotency_key": "r1"})).status, 201);
    // A retry with the same key records once; the same key for something else is refused.
    assert_eq!(record(&app, &ada, &s1, json!({"name": "adopted", "idempotency_key": "r1"})).status, 201);
    let conflict = record(&app, &ada, &s1, json!({"name": "discard", "idempotency_key": "r1"}));
    assert_eq!(conflict.json_body()["error"]["code"], "idempotency_conflict");
    assert_eq!(record(&app, &ada, &s1, json!({"name": "did_the_job", "value": "yes"})).status, 201);
    assert_eq!(record(&app, &ada, &s1, json!({"name": "shipped"})).status, 201);
    assert_eq!(record(&app, &ada, &s3, json!({"name": "vote", "value": "down"})).status, 201);
    assert_eq!(record(&app, &ada, &s3, json!({"name": "later_failure"})).status, 201);

    let after = performance(&app, &ada);
    let m1 = row(&after, "m1");
    assert_eq!((m1["decided"].as_i64(), m1["undecided"].as_i64()), (Some(1), Some(1)), "a session is decided once");
    assert_eq!(m1["decisions"]["adopted"], 1);
    assert_eq!(m1["decisions"]["did_the_job_yes"], 1);
    assert_eq!(m1["outcomes"]["shipped"], 1);
    let m2 = row(&after, "m2");
    assert_eq!(
        (m2["sessions"].as_i64(), m2["decided"].as_i64(), m2["undecided"].as_i64()),
        (Some(1), Some(1), Some(0))
    );
    assert_eq!((m2["decisions"]["vote_down"].as_i64(), m2["outcomes"]["later_failure"].as_i64()), (Some(1), Some(1)));

    // The answer comes from the read model kept with the records, not from recounting them.
    let kept: i64 = app.db.0.query_row("SELECT SUM(adopted) FROM agent_performance", [], |r| r.get(0)).unwrap();
    assert_eq!(kept, 1);

    // Outside the range, nothing; a range before the sessions started is empty.
    let old = app.ok(&ada.key, "read_agent_performance", json!({"since": "2020-01-01", "until": "2020-01-31"}));
    assert_eq!(old["performance"], json!([]));
    assert_eq!(old["since"], "2020-01-01");
    let code = app.err_code(&ada.key, "read_agent_performance", json!({"since": "2026-02-30"}));
    assert_eq!(code, "invalid_params");
}

fn hook(app: &TestApp, workspace_id: &str, headers: &[(&str, &str)], body: &Value) -> HttpResponse {
    let mut all =
        vec![("host".to_owned(), "127.0.0.1:8787".to_owned()), ("content-type".into(), "application/json".into())];
    all.extend(headers.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    app.send(HttpRequest {
        method: "POST".into(),
        path: format!("/v1/webhooks/records/{workspace_id}"),
        headers: all,
        body: serde_json::to_vec(body).unwrap(),
        client_ip: "198.51.100.1".into(),
        ..Default::default()
    })
}

#[test]
fn the_webhook_records_a_merged_pull_request_and_scripts_outcomes() {
    let app = app();
    let ada = app.signup("Ada", "ada@example.com");
    let a = agent(&app, &ada, "m1");
    let s = session(&app, &ada, &a, "k1");
    let made = app.request("POST", &format!("/v1/workspaces/{}/records-webhook", ada.slug), Some(&ada.key), None);
    assert_eq!(made.status, 201, "{:?}", made.json_body());
    let made = made.json_body();
    let secret = made["secret"].as_str().unwrap().to_owned();
    let url = made["url"].as_str().unwrap();
    let workspace_id = url.rsplit('/').next().unwrap().to_owned();
    assert!(url.starts_with("http://127.0.0.1:8787/v1/webhooks/records/ws_"), "{url}");

    let pr = json!({
        "action": "closed", "sender": {"login": "octocat"},
        "pull_request": {"merged": true, "title": "Fix login", "body": format!("Session: {s}"),
            "head": {"ref": "fix-login"}, "html_url": "https://github.com/o/r/pull/7"},
    });
    let signature = agentsky::rules::hmac::signature(&secret, &serde_json::to_vec(&pr).unwrap());
    let github =
        [("x-github-event", "pull_request"), ("x-github-delivery", "d-1"), ("x-hub-signature-256", signature.as_str())];
    let resp = hook(&app, &workspace_id, &github, &pr);
    assert_eq!(resp.status, 200, "{:?}", resp.json_body());
    assert_eq!(resp.json_body()["record"]["name"], "pr_merged");
    // GitHub redelivers: recorded once.
    assert_eq!(hook(&app, &workspace_id, &github, &pr).status, 200);
    let rec = app.ok(&ada.key, "read_session_record", json!({"session_id": s}));
    assert_eq!(rec["outcomes"].as_array().unwrap().len(), 1);
    assert_eq!(rec["outcomes"][0]["by_name"], "github:octocat");
    assert_eq!(rec["outcomes"][0]["by_kind"], "webhook");
    assert_eq!(row(&performance(&app, &ada), "m1")["outcomes"]["pr_merged"], 1);

    // A wrong signature, no credentials, an unmerged close, a session of another workspace.
    let forged = [("x-github-event", "pull_request"), ("x-hub-signature-256", "sha256=00")];
    assert_eq!(hook(&app, &workspace_id, &forged, &pr).status, 401);
    assert_eq!(hook(&app, &workspace_id, &[], &json!({"session_id": s, "name": "shipped"})).status, 401);
    let mut closed = pr.clone();
    closed["pull_request"]["merged"] = json!(false);
    let sig = agentsky::rules::hmac::signature(&secret, &serde_json::to_vec(&closed).unwrap());
    let resp = hook(&app, &workspace_id, &[("x-github-event", "pull_request"), ("x-hub-signature-256", &sig)], &closed);
    assert_eq!((resp.status, resp.json_body()["recorded"].clone()), (202, json!(false)));

    // Scripts send the secret as a bearer.
    let bearer = format!("Bearer {secret}");
    let shipped = json!({"session_id": s, "name": "shipped", "by": "deploy-bot", "note": "v1.2"});
    let resp = hook(&app, &workspace_id, &[("authorization", &bearer)], &shipped);
    assert_eq!(resp.status, 200, "{:?}", resp.json_body());
    assert_eq!(resp.json_body()["record"]["by_name"], "deploy-bot");
    let bob = app.signup("Bob", "bob@example.com");
    let b = agent(&app, &bob, "m1");
    let theirs = session(&app, &bob, &b, "kb");
    let resp =
        hook(&app, &workspace_id, &[("authorization", &bearer)], &json!({"session_id": theirs, "name": "shipped"}));
    assert_eq!(resp.status, 404);

    // Only owners and admins make webhooks; a workspace without one has none.
    assert_eq!(hook(&app, &format!("ws_{}", "0".repeat(26)), &[("authorization", &bearer)], &shipped).status, 404);
}

#[test]
fn unsigned_posts_never_spend_the_workspace_bucket_that_signed_ones_count_on() {
    let app = app();
    let ada = app.signup("Ada", "ada@example.com");
    let a = agent(&app, &ada, "m1");
    let s = session(&app, &ada, &a, "k1");
    let made =
        app.request("POST", &format!("/v1/workspaces/{}/records-webhook", ada.slug), Some(&ada.key), None).json_body();
    let secret = made["secret"].as_str().unwrap().to_owned();
    let workspace_id = made["url"].as_str().unwrap().rsplit('/').next().unwrap().to_owned();
    let shipped = json!({"session_id": s, "name": "shipped", "by": "deploy-bot"});
    // More forged posts than the workspace may make in a minute: each refused, none counted.
    let cap = agentsky::rules::rate::capacity(agentsky::ops::records::WEBHOOK_CALLS_PER_MIN);
    for i in 0..cap + 50 {
        let forged = hook(&app, &workspace_id, &[("authorization", "Bearer not-the-secret")], &shipped);
        assert_eq!(forged.status, 401, "forged post {i}");
    }
    let bearer = format!("Bearer {secret}");
    let resp = hook(&app, &workspace_id, &[("authorization", &bearer)], &shipped);
    assert_eq!(resp.status, 200, "the signed post still gets through: {:?}", resp.json_body());
    // Signed posts are the ones counted.
    for _ in 1..cap {
        assert_eq!(hook(&app, &workspace_id, &[("authorization", &bearer)], &shipped).status, 200);
    }
    let over = hook(&app, &workspace_id, &[("authorization", &bearer)], &shipped);
    assert_eq!(over.status, 429);
}
