//! A task's git remote: set by an operation (its URL through the outbound rule, a branch git accepts, a
//! connector of the workspace, owners and admins only), and `land`'s push step: through the runner of the
//! landing session, with the session's grant covering `write` on the remote's connector, building on what
//! agentsky pushed last; a failed push is reported in `steps` and `reason` while the landing stands.

use crate::runner_jobs::{claimed, runner_answers, Worker};
use crate::support::{runner_request, HostSessions, TestApp};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::rc::Rc;

fn remote(app: &TestApp, key: &str, task: &str, body: Value) -> (u16, Value) {
    let r = app.request("PUT", &format!("/v1/tasks/{task}/remote"), Some(key), Some(body));
    (r.status, r.json_body())
}

#[test]
fn a_remote_is_checked_where_it_is_set() {
    let app = TestApp::with_secrets();
    let c = claimed(&app);
    let repo = app.request(
        "POST",
        "/v1/connectors",
        Some(&c.ada.key),
        Some(json!({"name": "repo", "provider": "github", "env": "scm", "credentials": {"env": {"GH_TOKEN": "ghp-host-1"}}})),
    );
    let repo = repo.json_body()["connector_id"].as_str().unwrap().to_owned();
    for (body, field) in [
        (json!({"url": "https://ada:pw@github.com/ada/app.git", "connector_id": repo}), "`url`"),
        (json!({"url": "git@github.com:ada/app.git", "connector_id": repo}), "`url`"),
        (json!({"url": "https://169.254.169.254/app.git", "connector_id": repo}), "`url`"),
        (json!({"url": "/srv/../etc", "connector_id": repo}), "`url`"),
        (json!({"url": "/srv/app.git", "branch": "a..b", "connector_id": repo}), "`branch`"),
        (json!({"url": "/srv/app.git"}), "`connector_id`"),
        (json!({"url": null, "branch": "main"}), "`branch`"),
        (json!({"url": "/srv/app.git", "connector_id": repo, "force": true}), "force"),
    ] {
        let (status, body_back) = remote(&app, &c.ada.key, &c.sid, body.clone());
        assert_eq!(status, 400, "{body} → {body_back}");
        assert!(body_back["error"]["message"].as_str().unwrap().contains(field), "{body} → {body_back}");
    }
    let (status, _) = remote(
        &app,
        &c.ada.key,
        &c.sid,
        json!({"url": "/srv/app.git", "connector_id": "con_00000000000000000000000000"}),
    );
    assert_eq!(status, 404);

    // The grant's token goes only to the connector's git host, and only a git host's connector pushes.
    let web = app.request(
        "POST",
        "/v1/connectors",
        Some(&c.ada.key),
        Some(json!({"name": "web", "provider": "vercel", "env": "prod", "credentials": {"env": {"VERCEL_TOKEN": "vt-1"}}})),
    );
    let web = web.json_body()["connector_id"].as_str().unwrap().to_owned();
    for body in [
        json!({"url": "https://evil.example/ada/app.git", "connector_id": repo}),
        json!({"url": "https://github.com.evil.example/ada/app.git", "connector_id": repo}),
        json!({"url": "https://gitlab.com/ada/app.git", "connector_id": repo}),
        json!({"url": "https://github.com/ada/app.git", "connector_id": web}),
        json!({"url": "/srv/app.git", "connector_id": web}),
    ] {
        let (status, body_back) = remote(&app, &c.ada.key, &c.sid, body.clone());
        assert_eq!(status, 400, "{body} → {body_back}");
        assert!(body_back["error"]["message"].as_str().unwrap().contains("`url`"), "{body} → {body_back}");
    }

    let (status, set) =
        remote(&app, &c.ada.key, &c.sid, json!({"url": "https://github.com/ada/app.git", "connector_id": repo}));
    assert_eq!(status, 200, "{set}");
    assert_eq!(
        (set["remote"]["url"].as_str(), set["remote"]["branch"].as_str(), &set["remote"]["pushed_head"]),
        (Some("https://github.com/ada/app.git"), Some("main"), &Value::Null)
    );
    let got = app.request("GET", &format!("/v1/tasks/{}/remote", c.sid), Some(&c.ada.key), None).json_body();
    assert_eq!(got["remote"], set["remote"]);
    // Another account cannot read or set it.
    let bob = app.signup("Bob", "bob@example.com");
    assert_eq!(app.request("GET", &format!("/v1/tasks/{}/remote", c.sid), Some(&bob.key), None).status, 404);
    let (status, _) = remote(&app, &bob.key, &c.sid, json!({"url": "/tmp/steal.git", "connector_id": repo}));
    assert_eq!(status, 404);
    // `null` removes it.
    let (status, gone) = remote(&app, &c.ada.key, &c.sid, json!({"url": null}));
    assert_eq!((status, &gone["remote"]), (200, &Value::Null));
}

#[test]
fn land_pushes_through_the_runner_with_the_grant_and_reports_a_refused_push() {
    let app = TestApp::with_secrets();
    let c = claimed(&app);
    let repo = app.request(
        "POST",
        "/v1/connectors",
        Some(&c.ada.key),
        Some(json!({"name": "repo", "provider": "github", "env": "scm", "credentials": {"env": {"GH_TOKEN": "ghp-host-1"}}})),
    );
    let repo = repo.json_body()["connector_id"].as_str().unwrap().to_owned();
    let (status, _) =
        remote(&app, &c.ada.key, &c.sid, json!({"url": "/srv/app.git", "branch": "agentsky", "connector_id": repo}));
    assert_eq!(status, 200);

    // The test's runner: each sync uploads a new version of app.rs; checks pass; pushes answer `push`.
    let version = Rc::new(RefCell::new(0));
    let push: Rc<RefCell<Value>> = Rc::new(RefCell::new(json!({"ok": true, "head": "a".repeat(40)})));
    let (token, lease, v, answer) = (c.runner.clone(), c.lease.clone(), version.clone(), push.clone());
    let work: Worker = Rc::new(move |sessions: &HostSessions, job: &Value| {
        let (sessions, job, token, lease, v, answer) =
            (sessions.clone(), job.clone(), token.clone(), lease.clone(), v.clone(), answer.clone());
        Box::pin(async move {
            match job["kind"].as_str().unwrap() {
                "sync" => {
                    *v.borrow_mut() += 1;
                    let content = format!("fn main() {{ /* {} */ }}", v.borrow());
                    let put = json!({"lease_id": lease, "path": "app.rs", "content": content});
                    assert_eq!(
                        sessions.handle(runner_request(&token, "PUT", "/v1/runner/files", put)).await.status,
                        200
                    );
                    Some(json!({"ok": true, "uploaded": ["app.rs"], "refreshed": []}))
                }
                "run" => Some(json!({"exit_code": 0, "timed_out": false, "output": "ok"})),
                "push" => Some(answer.borrow().clone()),
                other => panic!("unexpected job {other}"),
            }
        })
    });
    let jobs = runner_answers(&app, &c, work);
    // Each landing a minute after the last (`land` counts against the session's access bucket), the
    // runner renewing its lease meanwhile.
    let land = |summary: &str| {
        for _ in 0..4 {
            app.now_ms.set(app.now_ms.get() + 16_000);
            let beat =
                app.send(runner_request(&c.runner, "POST", "/v1/runner/heartbeat", json!({"lease_id": c.lease})));
            assert_eq!(beat.status, 200, "{:?}", beat.json_body());
        }
        app.agent_ok(&c.agent, "land", json!({"summary": summary}))
    };
    land("First");
    app.agent_ok(&c.agent, "remember_command", json!({"kind": "checks", "command": "cargo test"}));

    // Without a grant on the remote's connector: landed, not pushed, and why.
    let landed = land("Add app.rs");
    assert_eq!((landed["landed"].as_bool(), landed["pushed"].as_bool()), (Some(true), Some(false)), "{landed}");
    let reason = landed["reason"].as_str().unwrap();
    assert!(reason.contains("live grant on `repo` covering `write`") && reason.contains("next land"), "{reason}");
    assert!(!jobs.borrow().iter().any(|j| j["kind"] == "push"), "no push without a grant");

    // With a grant covering write: the runner pushes, and the remote's new head is reported and kept.
    let r = app.request(
        "PUT",
        "/v1/policies",
        Some(&c.ada.key),
        Some(json!({"connector_id": repo, "scope": "write", "decision": "allow"})),
    );
    assert_eq!(r.status, 200);
    let g = app.agent_ok(&c.agent, "request_access", json!({"target": "repo", "scope": ["write"], "reason": "push"}));
    assert_eq!(g["status"], "active", "{g}");
    let landed = land("Change app.rs\n\nWith a body.");
    assert_eq!((landed["landed"].as_bool(), landed["pushed"].as_bool()), (Some(true), Some(true)), "{landed}");
    assert_eq!(landed["remoteHead"], "a".repeat(40));
    assert!(landed["steps"]
        .to_string()
        .contains(&format!("push: agentsky on /srv/app.git is now at {}", "a".repeat(40))));
    let job = jobs.borrow().iter().rev().find(|j| j["kind"] == "push").cloned().unwrap();
    assert_eq!(
        (job["url"].as_str(), job["branch"].as_str(), job["grant_id"].as_str(), &job["expected_head"]),
        (Some("/srv/app.git"), Some("agentsky"), g["grantId"].as_str(), &Value::Null)
    );
    let message = job["message"].as_str().unwrap();
    assert!(
        message.starts_with("Change app.rs\n\nWith a body.") && message.contains(landed["commit"].as_str().unwrap())
    );
    assert!(!job.to_string().contains("ghp-host-1"), "the job carries no credential: {job}");
    let got = app.request("GET", &format!("/v1/tasks/{}/remote", c.sid), Some(&c.ada.key), None).json_body();
    assert_eq!(got["remote"]["pushed_head"], "a".repeat(40));

    // A push the remote refuses: landed, not pushed, git's reason in `reason` and `steps`.
    *push.borrow_mut() =
        json!({"ok": false, "error": "rejected (non-fast-forward): agentsky on the remote is at bbbb"});
    let landed = land("Again");
    assert_eq!((landed["landed"].as_bool(), landed["pushed"].as_bool()), (Some(true), Some(false)), "{landed}");
    assert!(landed["reason"].as_str().unwrap().contains("non-fast-forward"), "{landed}");
    assert!(landed["steps"].to_string().contains("push: not pushed"), "{landed}");
    let job = jobs.borrow().iter().rev().find(|j| j["kind"] == "push").cloned().unwrap();
    assert_eq!(job["expected_head"], "a".repeat(40), "the next push builds on the last one");

    // Setting the same remote keeps what was pushed; another branch starts over.
    let (_, same) =
        remote(&app, &c.ada.key, &c.sid, json!({"url": "/srv/app.git", "branch": "agentsky", "connector_id": repo}));
    assert_eq!(same["remote"]["pushed_head"], "a".repeat(40));
    let (_, other) =
        remote(&app, &c.ada.key, &c.sid, json!({"url": "/srv/app.git", "branch": "other", "connector_id": repo}));
    assert_eq!(other["remote"]["pushed_head"], Value::Null);

    // The connector stops being a git host after the remote was set: checked again at push time.
    let (status, _) = remote(
        &app,
        &c.ada.key,
        &c.sid,
        json!({"url": "https://github.com/ada/app.git", "branch": "other", "connector_id": repo}),
    );
    assert_eq!(status, 200);
    let r = app.request(
        "POST",
        "/v1/connectors",
        Some(&c.ada.key),
        Some(json!({"name": "repo", "provider": "vercel", "env": "scm", "credentials": {"env": {"GH_TOKEN": "ghp-host-1"}}})),
    );
    assert!(r.status < 300, "{:?}", r.json_body());
    let pushes = jobs.borrow().iter().filter(|j| j["kind"] == "push").count();
    let landed = land("After the connector changed");
    assert_eq!((landed["landed"].as_bool(), landed["pushed"].as_bool()), (Some(true), Some(false)), "{landed}");
    assert!(landed["reason"].as_str().unwrap().contains("not a git host"), "{landed}");
    assert_eq!(jobs.borrow().iter().filter(|j| j["kind"] == "push").count(), pushes, "no push job was sent");
}
