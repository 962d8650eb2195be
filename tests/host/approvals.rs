//! Stronger approvals (issue 39): a production target may need N owners or admins to approve a deploy or
//! delete, each once, never the session's starter while someone else could; a step-up that only a recent
//! console sign-in passes; and every approval in the audit log with the channel it came through.

use crate::support::{browser_request, form_body, Account, TestApp};
use serde_json::{json, Value};

const ORIGIN: &str = "http://127.0.0.1:8787";

struct Team {
    app: TestApp,
    ada: Account,
    bob: Account,
    cy: Account,
    mo: Account,
    slug: String,
    sid: String,
    token: String,
    connector: String,
    grant_id: std::cell::RefCell<String>,
}

/// `acme`, owned by Ada, with Bob and Cy as admins and Mo a member; Ada's session of an echo agent and a
/// production target `web`.
fn team() -> Team {
    let app = TestApp::with_secrets();
    let ada = app.signup("Ada", "ada@example.com");
    let bob = app.signup("Bob", "bob@example.com");
    let cy = app.signup("Cy", "cy@example.com");
    let mo = app.signup("Mo", "mo@example.com");
    let slug = "acme".to_owned();
    app.shared_workspace(&ada, &slug);
    app.join(&ada, &slug, &bob, "admin");
    app.join(&ada, &slug, &cy, "admin");
    app.join(&ada, &slug, &mo, "member");
    let agent =
        app.ok(&ada.key, "create_agent", json!({"name": "D", "harness": "echo", "model": "m", "workspace": slug}));
    let s = app.ok(
        &ada.key,
        "start_session",
        json!({"agent_id": agent["agent_id"], "message": "ship", "idempotency_key": "k", "workspace": slug}),
    );
    app.settle();
    let sid = s["session"]["session_id"].as_str().unwrap().to_owned();
    let token = app.session_token(&ada.key, &sid);
    let con = app.request(
        "POST",
        &format!("/v1/connectors?workspace={slug}"),
        Some(&ada.key),
        Some(json!({"name": "web", "provider": "vercel", "env": "prod", "credentials": {"env": {"T": "x"}}})),
    );
    assert_eq!(con.status, 200, "{:?}", con.json_body());
    let connector = con.json_body()["connector_id"].as_str().unwrap().to_owned();
    Team { app, ada, bob, cy, mo, slug, sid, token, connector, grant_id: Default::default() }
}

impl Team {
    fn rule(&self, body: Value) -> Value {
        let path = format!("/v1/connectors/{}/approval-rule?workspace={}", self.connector, self.slug);
        let r = self.app.request("PUT", &path, Some(&self.ada.key), Some(body));
        assert_eq!(r.status, 200, "{:?}", r.json_body());
        r.json_body()
    }

    /// The agent asks to deploy; the request's id (and the grant's, kept for [`Team::grant`]).
    fn ask(&self) -> String {
        let pending = self.app.agent_ok(
            &self.token,
            "request_access",
            json!({"target": "web", "scope": ["deploy"], "reason": "r"}),
        );
        assert_eq!(pending["status"], "pending", "{pending}");
        self.grant_id.replace(pending["grantId"].as_str().unwrap().to_owned());
        let task = self.app.ok(&self.ada.key, "get_task", json!({"task_id": self.sid}));
        task["open_requests"][0]["request_id"].as_str().unwrap().to_owned()
    }

    fn answer(&self, who: &Account, request: &str, answer: &str) -> Value {
        self.app.call(&who.key, "answer_request", json!({"task_id": self.sid, "request_id": request, "answer": answer}))
    }

    fn refused(&self, who: &Account, request: &str) -> String {
        let e = TestApp::tool_error(&self.answer(who, request, "approve"));
        assert_eq!(e["code"], "forbidden", "{e}");
        e["message"].as_str().unwrap().to_owned()
    }

    /// The last grant asked for, as the agent's `check_grant` sees it.
    fn grant(&self) -> String {
        let g = self.app.agent_ok(&self.token, "check_grant", json!({"grantId": *self.grant_id.borrow()}));
        g["status"].as_str().unwrap().to_owned()
    }

    fn audit(&self, action: &str) -> Vec<String> {
        let r =
            self.app.request("GET", &format!("/v1/audit?workspace={}&limit=500", self.slug), Some(&self.ada.key), None);
        let entries = r.json_body()["entries"].as_array().unwrap().clone();
        entries.iter().filter(|e| e["action"] == action).map(|e| e["detail"].as_str().unwrap().to_owned()).collect()
    }
}

#[test]
fn a_production_deploy_takes_two_admins_each_once_and_never_the_starter() {
    let t = team();
    assert_eq!(t.rule(json!({"approvals": 2}))["approvals"], 2);
    let req = t.ask();
    assert!(t.refused(&t.mo, &req).contains("owners or admins"), "a member may not approve");
    assert!(t.refused(&t.ada, &req).contains("you started this session"), "the starter does not approve their own");

    let first = t.answer(&t.bob, &req, "approve");
    assert_eq!(first["isError"], false, "{first}");
    let first = &first["structuredContent"];
    assert_eq!(first["request"]["status"], "open", "one of two: still open: {first}");
    assert_eq!(first["approvals"]["needed"], 2);
    assert_eq!(first["approvals"]["approved_by"].as_array().unwrap().len(), 1);
    assert!(first.get("grant").is_none());
    assert_eq!(t.grant(), "pending", "the agent still waits");
    let listed = t.app.ok(&t.cy.key, "list_requests", json!({"workspace": t.slug}));
    assert_eq!(listed["requests"][0]["approved_by"], json!(["Bob"]), "who approved so far is shown: {listed}");
    assert!(t.refused(&t.bob, &req).contains("already approved"), "each approver once");

    let second =
        t.app.ok(&t.cy.key, "answer_request", json!({"task_id": t.sid, "request_id": req, "answer": "approve"}));
    assert_eq!(second["request"]["status"], "answered", "{second}");
    assert_eq!(second["grant"]["status"], "active", "{second}");
    assert_eq!(second["approvals"], Value::Null, "the last approval answers as any answer does");
    assert_eq!(t.grant(), "active");

    let recorded = t.audit("access_approval_recorded");
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert!(recorded[0].contains("approval 1 of 2") && recorded[0].ends_with("via MCP"), "{}", recorded[0]);
    let approved = t.audit("access_approved");
    assert!(approved[0].contains("via MCP, the last of 2 approvals"), "{}", approved[0]);
    assert_eq!(t.audit("approval_rule_set"), ["deploy and delete on `web`: 2 approvals"]);
}

#[test]
fn a_denial_by_anyone_who_may_answer_denies_at_once_and_other_targets_are_unchanged() {
    let t = team();
    t.rule(json!({"approvals": 3}));
    let req = t.ask();
    let denied = t.app.ok(&t.mo.key, "answer_request", json!({"task_id": t.sid, "request_id": req, "answer": "deny"}));
    assert_eq!(
        (denied["request"]["status"].as_str(), denied["grant"]["status"].as_str()),
        (Some("answered"), Some("denied"))
    );

    // Three admins asked for, but only Bob and Cy may approve Ada's session: both of them are enough.
    let req = t.ask();
    assert_eq!(t.answer(&t.bob, &req, "approve")["structuredContent"]["approvals"]["needed"], 2);
    assert_eq!(
        t.app.ok(&t.cy.key, "answer_request", json!({"task_id": t.sid, "request_id": req, "answer": "approve"}))
            ["grant"]["status"],
        "active"
    );

    // A staging target takes no rule, and a production read is not guarded.
    let path = format!("/v1/connectors?workspace={}", t.slug);
    let body = json!({"name": "stage", "provider": "vercel", "env": "staging", "credentials": {"env": {"T": "x"}}});
    let stage = t.app.request("POST", &path, Some(&t.ada.key), Some(body)).json_body()["connector_id"].clone();
    let r = t.app.request(
        "PUT",
        &format!("/v1/connectors/{}/approval-rule?workspace={}", stage.as_str().unwrap(), t.slug),
        Some(&t.ada.key),
        Some(json!({"approvals": 2})),
    );
    assert_eq!(r.status, 400, "{:?}", r.json_body());
    assert!(r.json_body()["error"]["message"].as_str().unwrap().contains("production"));
    let r = t.app.request(
        "PUT",
        &format!("/v1/connectors/{}/approval-rule?workspace={}", t.connector, t.slug),
        Some(&t.bob.key),
        Some(json!({"approvals": 6})),
    );
    assert_eq!(r.status, 400, "at most 5: {:?}", r.json_body());
    let member = t.app.request(
        "PUT",
        &format!("/v1/connectors/{}/approval-rule?workspace={}", t.connector, t.slug),
        Some(&t.mo.key),
        Some(json!({"approvals": 1})),
    );
    assert_eq!(member.status, 403, "only owners and admins set the rule");
}

#[test]
fn a_step_up_rule_takes_a_console_sign_in_of_the_last_ten_minutes() {
    let t = team();
    t.rule(json!({"approvals": 1, "fresh_sign_in": true}));
    let req = t.ask();
    assert!(t.refused(&t.bob, &req).contains("approve it in the console"), "a key proves no sign-in");

    let login =
        t.app.send(browser_request("POST", "/console/login", None, &form_body(&[("key", &t.bob.key)]), Some(ORIGIN)));
    assert_eq!(login.status, 303);
    let cookie = login.header("set-cookie").unwrap().split(';').next().unwrap().to_owned();
    let ws = format!("/console/w/{}", t.slug);
    let answer = |csrf: &str| {
        let body = form_body(&[("task_id", &t.sid), ("request_id", &req), ("answer", "approve"), ("csrf", csrf)]);
        t.app.send(browser_request("POST", &format!("{ws}/op/answer_request"), Some(&cookie), &body, Some(ORIGIN)))
    };
    let csrf = |html: &str| {
        let at = html.find("name=\"csrf\" value=\"").expect("a form with a csrf field") + 19;
        html[at..at + 64].to_owned()
    };
    let page = t.app.send(browser_request("GET", &ws, Some(&cookie), "", None));
    let html = String::from_utf8_lossy(&page.body).into_owned();

    // Eleven minutes after signing in, the console refuses too, and says to sign in again.
    t.app.now_ms.set(t.app.now_ms.get() + 11 * 60_000);
    let late = answer(&csrf(&html));
    let cookie_value = late.header("set-cookie").unwrap_or_default().split(';').next().unwrap_or_default().to_owned();
    let flash = cookie_value.strip_prefix("agentsky_flash=").unwrap_or_default();
    let flash = base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, flash).unwrap_or_default();
    let flash = String::from_utf8_lossy(&flash);
    assert!(flash.contains("sign out, sign in again"), "the page says why: {flash}");
    assert_eq!(t.grant(), "pending", "still not granted");

    // Signed in again, it approves.
    let login =
        t.app.send(browser_request("POST", "/console/login", None, &form_body(&[("key", &t.bob.key)]), Some(ORIGIN)));
    let cookie = login.header("set-cookie").unwrap().split(';').next().unwrap().to_owned();
    let page = t.app.send(browser_request("GET", &ws, Some(&cookie), "", None));
    let html = String::from_utf8_lossy(&page.body).into_owned();
    let body = form_body(&[("task_id", &t.sid), ("request_id", &req), ("answer", "approve"), ("csrf", &csrf(&html))]);
    let ok =
        t.app.send(browser_request("POST", &format!("{ws}/op/answer_request"), Some(&cookie), &body, Some(ORIGIN)));
    assert_eq!(ok.status, 303);
    assert_eq!(t.grant(), "active");
    let approved = t.audit("access_approved");
    assert_eq!(approved.len(), 1, "{approved:?}");
    assert!(approved[0].contains("via console"), "{}", approved[0]);
}
