//! Slack with buttons (issue 39): connecting a workspace's Slack app (checked with `auth.test`, secrets
//! sealed), a request posted as a Block Kit message, a member linking their Slack user with a one-time
//! code, and signed clicks: valid, stale, forged, from an unlinked user, from one whose account is no
//! longer a member, and on what needs a signed-in person (no button; a forged one refused). A decision updates the message with who decided.

use crate::support::{form_body, Account, TestApp};
use agentsky::cx::{Config, Outbound};
use agentsky::http::{HttpRequest, HttpResponse};
use agentsky::rules::slack;
use serde_json::{json, Value};
use std::cell::RefCell;
use std::rc::Rc;

const SLACK: &str = "https://slack.example/api";
const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
const TOKEN: &str = "xoxb-test-bot-token";
const TEAM: &str = "T0TEAM";

type Calls = Rc<RefCell<Vec<(String, Value)>>>;

/// A fake of Slack's Web API, checking the bot token as Slack does; each call recorded (method, body).
fn fake_slack(app: &TestApp) -> Calls {
    let calls: Calls = Rc::default();
    let seen = calls.clone();
    app.sessions.net.answer(move |req: &Outbound| {
        let method = req.url.strip_prefix(&format!("{SLACK}/")).unwrap_or(&req.url).to_owned();
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        let authorized = req.headers.iter().any(|(k, v)| k == "authorization" && v == &format!("Bearer {TOKEN}"));
        seen.borrow_mut().push((method.clone(), body.clone()));
        let answer = match (authorized, method.as_str()) {
            (false, _) => json!({"ok": false, "error": "invalid_auth"}),
            (true, "auth.test") => json!({"ok": true, "team_id": TEAM, "user_id": "UBOT"}),
            (true, "chat.postMessage") => json!({"ok": true, "channel": body["channel"], "ts": "1700000000.000100"}),
            (true, "chat.update" | "chat.postEphemeral") => json!({"ok": true}),
            _ => json!({"ok": false, "error": "unknown_method"}),
        };
        HttpResponse::json(200, &answer)
    });
    calls
}

struct World {
    app: TestApp,
    ada: Account,
    mo: Account,
    calls: Calls,
    sid: String,
    token: String,
}

/// `acme` (Ada owner, Mo member) with its Slack app connected, a `runner`-less echo session, and a
/// staging and a production target.
fn world() -> World {
    let app = TestApp::with_config(Config {
        secrets_key: Some("test-master-key".into()),
        slack_api_url: Some(SLACK.into()),
        public_base_url: "https://agentsky.example".into(),
        ..TestApp::config()
    });
    let calls = fake_slack(&app);
    let ada = app.signup("Ada", "ada@example.com");
    let mo = app.signup("Mo", "mo@example.com");
    app.shared_workspace(&ada, "acme");
    app.join(&ada, "acme", &mo, "member");
    let bad = app.request(
        "PUT",
        "/v1/slack?workspace=acme",
        Some(&ada.key),
        Some(json!({"bot_token": "xoxb-not-the-token", "signing_secret": SECRET, "channel": "C0APPROVE"})),
    );
    assert_eq!(bad.status, 400, "a token Slack refuses is refused here: {:?}", bad.json_body());
    let member = app.request(
        "PUT",
        "/v1/slack?workspace=acme",
        Some(&mo.key),
        Some(json!({"bot_token": TOKEN, "signing_secret": SECRET, "channel": "C0APPROVE"})),
    );
    assert_eq!(member.status, 403, "owners and admins connect Slack");
    let connected = app.request(
        "PUT",
        "/v1/slack?workspace=acme",
        Some(&ada.key),
        Some(json!({"bot_token": TOKEN, "signing_secret": SECRET, "channel": "C0APPROVE"})),
    );
    assert_eq!(connected.status, 200, "{:?}", connected.json_body());
    let shown = connected.json_body();
    assert_eq!((shown["team_id"].as_str(), shown["channel"].as_str()), (Some(TEAM), Some("C0APPROVE")));
    assert!(!shown.to_string().contains(TOKEN) && !shown.to_string().contains(SECRET), "secrets never shown: {shown}");
    let sealed: String = app.db.0.query_row("SELECT sealed FROM slack_connection", [], |r| r.get(0)).unwrap();
    assert!(!sealed.contains(TOKEN) && !sealed.contains(SECRET), "stored sealed");
    for (name, env) in [("stage", "staging"), ("web", "prod")] {
        let body = json!({"name": name, "provider": "vercel", "env": env, "credentials": {"env": {"T": "x"}}});
        let r = app.request("POST", "/v1/connectors?workspace=acme", Some(&ada.key), Some(body));
        assert_eq!(r.status, 200, "{:?}", r.json_body());
    }
    let agent =
        app.ok(&ada.key, "create_agent", json!({"name": "Dev", "harness": "echo", "model": "m", "workspace": "acme"}));
    let s = app.ok(
        &ada.key,
        "start_session",
        json!({"agent_id": agent["agent_id"], "message": "ship", "idempotency_key": "k", "workspace": "acme"}),
    );
    app.settle();
    let sid = s["session"]["session_id"].as_str().unwrap().to_owned();
    let token = app.session_token(&ada.key, &sid);
    World { app, ada, mo, calls, sid, token }
}

impl World {
    /// The agent asks for `scope` on `target`: the request id and its posted message's buttons.
    fn ask(&self, target: &str, scope: &str) -> (String, Vec<Value>) {
        self.calls.borrow_mut().clear();
        let pending = self.app.agent_ok(
            &self.token,
            "request_access",
            json!({"target": target, "scope": [scope], "reason": "ship <it>"}),
        );
        assert_eq!(pending["status"], "pending");
        let task = self.app.ok(&self.ada.key, "get_task", json!({"task_id": self.sid}));
        let id = task["open_requests"][0]["request_id"].as_str().unwrap().to_owned();
        let calls = self.calls.borrow();
        let (_, posted) = calls.iter().find(|(m, _)| m == "chat.postMessage").expect("the request is posted");
        assert_eq!(posted["channel"], "C0APPROVE");
        assert!(posted["text"].as_str().unwrap().contains("ship &lt;it&gt;"), "{posted}");
        (id, posted["blocks"][1]["elements"].as_array().unwrap().clone())
    }

    /// A Slack user's `/agentsky` command, signed.
    fn command(&self, user: &str, text: &str) -> HttpResponse {
        let body = form_body(&[("team_id", TEAM), ("user_id", user), ("command", "/agentsky"), ("text", text)]);
        self.app.send(signed("/v1/slack/commands", &body, self.app.now_ms.get() / 1000, SECRET))
    }

    /// A click on `button` by `user`, signed `at` (unix seconds) with `secret`.
    fn click(&self, user: &str, button: &Value, at: i64, secret: &str) -> HttpResponse {
        let payload = json!({"type": "block_actions", "team": {"id": TEAM}, "user": {"id": user},
            "channel": {"id": "C0APPROVE"}, "actions": [{"action_id": button["action_id"], "value": button["value"]}]});
        let body = form_body(&[("payload", &payload.to_string())]);
        self.app.send(signed("/v1/slack/interactions", &body, at, secret))
    }

    fn now_s(&self) -> i64 {
        self.app.now_ms.get() / 1000
    }

    fn link(&self, who: &Account, slack_user: &str) {
        let code = self.app.request("POST", "/v1/slack/link-code?workspace=acme", Some(&who.key), Some(json!({})));
        assert_eq!(code.status, 200, "{:?}", code.json_body());
        let code = code.json_body()["code"].as_str().unwrap().to_owned();
        let linked = self.command(slack_user, &format!("link {code}"));
        assert_eq!(linked.status, 200);
        assert!(linked.json_body()["text"].as_str().unwrap().starts_with("Linked"), "{:?}", linked.json_body());
        let again = self.command("UOTHER", &format!("link {code}"));
        assert!(again.json_body()["text"].as_str().unwrap().contains("not valid"), "a code works once");
    }
}

fn signed(path: &str, body: &str, at: i64, secret: &str) -> HttpRequest {
    let signature = slack::sign(secret, &at.to_string(), body.as_bytes());
    HttpRequest {
        stream: None,
        method: "POST".into(),
        path: path.into(),
        query: String::new(),
        headers: vec![
            ("content-type".into(), "application/x-www-form-urlencoded".into()),
            ("x-slack-request-timestamp".into(), at.to_string()),
            ("x-slack-signature".into(), signature),
        ],
        body: body.as_bytes().to_vec(),
        client_ip: "203.0.113.9".into(),
    }
}

fn said(r: &HttpResponse) -> String {
    r.json_body()["said"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn a_click_by_a_linked_member_answers_and_the_message_says_who_decided() {
    let w = world();
    let (req, buttons) = w.ask("stage", "deploy");
    let labels: Vec<&str> = buttons.iter().map(|b| b["text"]["text"].as_str().unwrap()).collect();
    assert_eq!(labels, ["Approve once", "Deny", "Open in agentsky"]);
    assert_eq!(buttons[2]["url"], format!("https://agentsky.example/console/w/acme#request-{req}"));

    // Unlinked: refused, and told how to link.
    let r = w.click("UMO", &buttons[0], w.now_s(), SECRET);
    assert_eq!(r.status, 200);
    assert!(said(&r).contains("/agentsky link"), "{}", said(&r));
    // Stale and forged: refused before anything is read.
    assert_eq!(w.click("UMO", &buttons[0], w.now_s() - 301, SECRET).status, 401, "stale");
    assert_eq!(w.click("UMO", &buttons[0], w.now_s(), "another-signing-secret").status, 401, "forged");
    assert!(
        w.app.ok(&w.ada.key, "get_task", json!({"task_id": w.sid}))["open_requests"][0]["request_id"] == req.as_str()
    );

    w.link(&w.mo, "UMO");
    w.calls.borrow_mut().clear();
    let r = w.click("UMO", &buttons[0], w.now_s(), SECRET);
    assert_eq!(r.status, 200, "{:?}", r.json_body());
    assert_eq!(said(&r), "Answered: approve.");
    let check = w.app.agent_ok(&w.token, "check_grant", json!({"grantId": grant_of(&w, &req)}));
    assert_eq!(check["status"], "active", "a member approves once from Slack: {check}");
    let calls = w.calls.borrow();
    let (_, update) = calls.iter().find(|(m, _)| m == "chat.update").expect("the message is updated");
    assert_eq!((update["channel"].as_str(), update["ts"].as_str()), (Some("C0APPROVE"), Some("1700000000.000100")));
    assert!(update["text"].as_str().unwrap().contains("approved by Mo (via Slack)"), "{update}");
    assert_eq!(update["blocks"].as_array().unwrap().len(), 2, "no buttons left: {update}");
    drop(calls);
    let log = w.app.request("GET", "/v1/audit?workspace=acme&limit=500", Some(&w.ada.key), None).json_body();
    let approved =
        log["entries"].as_array().unwrap().iter().find(|e| e["action"] == "access_approved").unwrap().clone();
    assert!(approved["detail"].as_str().unwrap().contains("via Slack"), "{approved}");
}

#[test]
fn what_needs_a_signed_in_person_is_not_a_button_and_a_forged_one_is_refused() {
    let w = world();
    w.link(&w.ada, "UADA");
    let (req, buttons) = w.ask("web", "deploy");
    assert_eq!(buttons.len(), 1, "a production deploy opens agentsky instead: {buttons:?}");
    assert_eq!(buttons[0]["text"]["text"], "Open in agentsky");
    // A forged value that approves it anyway (signed: it came from the team's app) is refused.
    let value = json!({"t": w.sid, "r": req, "a": "approve"}).to_string();
    let r = w.click("UADA", &json!({"action_id": "answer:approve", "value": value}), w.now_s(), SECRET);
    assert!(said(&r).contains("after signing in"), "{}", said(&r));
    // An `always` cannot be asked for from Slack at all: a button carries only its answer word.
    let value = json!({"t": w.sid, "r": req, "a": "always"}).to_string();
    let r = w.click("UADA", &json!({"action_id": "answer:always", "value": value}), w.now_s(), SECRET);
    assert!(said(&r).starts_with("Not answered"), "{}", said(&r));
    assert_eq!(
        w.app.ok(&w.ada.key, "get_task", json!({"task_id": w.sid}))["open_requests"][0]["request_id"],
        req.as_str()
    );
}

#[test]
fn a_linked_slack_user_whose_account_left_the_workspace_is_refused() {
    let w = world();
    w.link(&w.mo, "UMO");
    let (req, _) = w.ask("stage", "write");
    // Mo leaves: the link stays, the membership does not.
    let mo_id: String = w
        .app
        .db
        .0
        .query_row("SELECT account_id FROM account WHERE email = 'mo@example.com'", [], |r| r.get(0))
        .unwrap();
    let gone = w.app.request("DELETE", &format!("/v1/workspaces/acme/members/{mo_id}"), Some(&w.ada.key), None);
    assert_eq!(gone.status, 200, "{:?}", gone.json_body());
    let value = json!({"t": w.sid, "r": req, "a": "approve"}).to_string();
    let r = w.click("UMO", &json!({"action_id": "answer:approve", "value": value}), w.now_s(), SECRET);
    assert!(said(&r).contains("not a member"), "{}", said(&r));
}

fn grant_of(w: &World, request_id: &str) -> String {
    w.app.db.0.query_row("SELECT grant_id FROM grant_ WHERE request_id = ?1", [request_id], |r| r.get(0)).unwrap()
}
