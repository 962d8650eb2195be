//! Runner jobs: while a runner holds a session's turn, `land` has it upload the agent's work and run the
//! checks in its folder, `get_credential` has it load an SSH key into the turn's ssh-agent, and the goal's
//! command criteria are graded by the exit codes it reports at the turn's end. The test's "runner" answers
//! its jobs from a wait hook, as a real one does while the asking call waits.

use crate::support::{runner_request, Account, HostSessions, TestApp};
use futures::future::LocalBoxFuture;
use serde_json::{json, Value};
use std::cell::RefCell;
use std::rc::Rc;

const SSH_KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY-----\ntest-key-material\n-----END OPENSSH PRIVATE KEY-----\n";

/// A runner agent's session in a task with lanes, its turn claimed by a runner.
pub(crate) struct Claimed {
    pub ada: Account,
    pub runner: String,
    pub sid: String,
    pub lease: String,
    /// The agent's session token, as the runner hands it to the agent.
    pub agent: String,
}

pub(crate) fn claimed(app: &TestApp) -> Claimed {
    let ada = app.signup("Ada", "ada@example.com");
    let runner = app.request("POST", "/v1/runners", Some(&ada.key), Some(json!({"name": "laptop"}))).json_body()
        ["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let agent = app.request(
        "POST",
        "/v1/agents",
        Some(&ada.key),
        Some(json!({"name": "Coder", "harness": "runner", "model": "claude"})),
    );
    let started = app.ok(
        &ada.key,
        "start_session",
        json!({"agent_id": agent.json_body()["agent_id"], "message": "add app.rs", "idempotency_key": "k"}),
    );
    let sid = started["session"]["session_id"].as_str().unwrap().to_owned();
    let r = app.request("PUT", &format!("/v1/tasks/{sid}/settings"), Some(&ada.key), Some(json!({"lanes": true})));
    assert_eq!(r.status, 200, "{:?}", r.json_body());
    app.settle();
    let turn = app.send(runner_request(&runner, "POST", "/v1/runner/claim", json!({}))).json_body();
    let lease = turn["lease_id"].as_str().unwrap().to_owned();
    let agent = turn["session_token"].as_str().unwrap().to_owned();
    Claimed { ada, runner, sid, lease, agent }
}

/// What the test's runner does with each job; it returns the job's result (or `None`: no answer).
pub(crate) type Worker = Rc<dyn Fn(&HostSessions, &Value) -> LocalBoxFuture<'static, Option<Value>>>;

/// Installs a runner that, whenever a call waits on a job, polls its jobs and answers them with `work`;
/// returns the jobs it saw.
pub(crate) fn runner_answers(app: &TestApp, c: &Claimed, work: Worker) -> Rc<RefCell<Vec<Value>>> {
    let seen = Rc::new(RefCell::new(Vec::new()));
    let (token, lease, log) = (c.runner.clone(), c.lease.clone(), seen.clone());
    *app.sessions.on_wait.borrow_mut() = Some(Rc::new(move |sessions: HostSessions, key: String| {
        let (token, lease, log, work) = (token.clone(), lease.clone(), log.clone(), work.clone());
        Box::pin(async move {
            if !key.starts_with("job:") {
                return;
            }
            let poll = json!({"lease_id": lease, "wait_seconds": 0});
            let jobs = sessions.handle(runner_request(&token, "POST", "/v1/runner/jobs", poll)).await.json_body();
            for job in jobs["jobs"].as_array().cloned().unwrap_or_default() {
                log.borrow_mut().push(job.clone());
                if let Some(result) = work(&sessions, &job).await {
                    let post = json!({"lease_id": lease, "job_id": job["job_id"], "result": result});
                    let r = sessions.handle(runner_request(&token, "POST", "/v1/runner/jobs/result", post)).await;
                    assert_eq!(r.status, 200, "{:?}", r.json_body());
                }
            }
        })
    }));
    seen
}

fn app() -> TestApp {
    TestApp::with_secrets()
}

#[test]
fn land_collects_the_runners_work_and_runs_the_checks_in_its_folder() {
    let app = app();
    let c = claimed(&app);
    let exit = Rc::new(RefCell::new(1));
    let (token, lease, code) = (c.runner.clone(), c.lease.clone(), exit.clone());
    let work: Worker = Rc::new(move |sessions: &HostSessions, job: &Value| {
        let (sessions, job, token, lease, code) =
            (sessions.clone(), job.clone(), token.clone(), lease.clone(), code.clone());
        Box::pin(async move {
            match job["kind"].as_str().unwrap() {
                "sync" => {
                    let put = json!({"lease_id": lease, "path": "app.rs", "content": "fn main() {}"});
                    let r = sessions.handle(runner_request(&token, "PUT", "/v1/runner/files", put)).await;
                    assert_eq!(r.status, 200);
                    Some(json!({"ok": true, "uploaded": ["app.rs"], "refreshed": []}))
                }
                "run" => {
                    let exit_code = *code.borrow();
                    let output =
                        if exit_code == 0 { "test result: ok" } else { "test app ... FAILED\nerror: 1 test failed" };
                    Some(json!({"exit_code": exit_code, "timed_out": false, "output": output}))
                }
                other => panic!("unexpected job {other}"),
            }
        })
    });
    let jobs = runner_answers(&app, &c, work);

    // The first landing collects the work, then asks for the checks.
    let first = app.agent_ok(&c.agent, "land", json!({"summary": "Add app.rs"}));
    assert_eq!(first["landed"], false);
    assert!(first["reason"].as_str().unwrap().contains("remember_command"), "{first}");
    assert!(first["steps"][0].as_str().unwrap().contains("1 file(s) uploaded"), "{first}");
    app.agent_ok(&c.agent, "remember_command", json!({"kind": "checks", "command": "cargo test"}));

    // Failing checks refuse the landing and show their output.
    let failed = app.agent_ok(&c.agent, "land", json!({"summary": "Add app.rs"}));
    assert_eq!(failed["landed"], false, "{failed}");
    assert_eq!(failed["reason"], "the checks failed: `cargo test` exited 1; fix what they report and call land again");
    assert!(failed["steps"].to_string().contains("error: 1 test failed"), "{failed}");
    assert_eq!(app.err_code(&c.ada.key, "read_task_file", json!({"task_id": c.sid, "path": "app.rs"})), "not_found");

    // Passing checks land it.
    *exit.borrow_mut() = 0;
    let landed = app.agent_ok(&c.agent, "land", json!({"summary": "Add app.rs"}));
    assert_eq!(landed["landed"], true, "{landed}");
    assert!(landed["steps"].to_string().contains("checks: `cargo test` passed (exit 0)"), "{landed}");
    assert_eq!(
        app.ok(&c.ada.key, "read_task_file", json!({"task_id": c.sid, "path": "app.rs"}))["content"],
        "fn main() {}"
    );
    let kinds: Vec<String> = jobs.borrow().iter().map(|j| j["kind"].as_str().unwrap().to_owned()).collect();
    assert_eq!(kinds, ["sync", "sync", "run", "sync", "run"]);
    assert_eq!(jobs.borrow()[2]["command"], "cargo test");
}

#[test]
fn a_file_the_agent_removed_in_the_runners_folder_is_deleted_from_the_lane_and_lands() {
    let app = app();
    let c = claimed(&app);
    for (path, text) in [("old.rs", "fn old() {}"), ("keep.rs", "fn keep() {}")] {
        app.ok(&c.ada.key, "write_task_file", json!({"task_id": c.sid, "path": path, "content": text}));
    }
    let project = json!({"checks": {"command": "cargo test"}}).to_string();
    app.ok(
        &c.ada.key,
        "write_task_file",
        json!({"task_id": c.sid, "path": ".agentsky/project.json", "content": project}),
    );
    let (token, lease) = (c.runner.clone(), c.lease.clone());
    let seen_files = Rc::new(RefCell::new(Vec::new()));
    let log = seen_files.clone();
    let work: Worker = Rc::new(move |sessions: &HostSessions, job: &Value| {
        let (sessions, job, token, lease, log) =
            (sessions.clone(), job.clone(), token.clone(), lease.clone(), log.clone());
        Box::pin(async move {
            let files = format!("/v1/runner/files?lease_id={lease}");
            match job["kind"].as_str().unwrap() {
                "sync" => {
                    let url = format!("{files}&path=old.rs");
                    let r = sessions.handle(runner_request(&token, "DELETE", &url, json!({}))).await;
                    assert_eq!(r.status, 200, "{:?}", r.json_body());
                    let deleted = r.json_body()["deleted"] == true;
                    // A retried delete whose answer was lost finds it gone, and says so.
                    let again = sessions.handle(runner_request(&token, "DELETE", &url, json!({}))).await;
                    assert_eq!((again.status, again.json_body()["deleted"].clone()), (200, json!(false)));
                    let deleted: Vec<&str> = if deleted { vec!["old.rs"] } else { vec![] };
                    Some(json!({"ok": true, "uploaded": [], "deleted": deleted, "refreshed": [], "removed": []}))
                }
                "run" => {
                    let listed = sessions.handle(runner_request(&token, "GET", &files, json!({}))).await.json_body();
                    let paths: Vec<String> = listed["files"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|f| f["path"].as_str().unwrap().to_owned())
                        .collect();
                    log.borrow_mut().push(paths);
                    Some(json!({"exit_code": 0, "timed_out": false, "output": "ok"}))
                }
                other => panic!("unexpected job {other}"),
            }
        })
    });
    runner_answers(&app, &c, work);
    let landed = app.agent_ok(&c.agent, "land", json!({"summary": "Remove old.rs"}));
    assert_eq!(landed["landed"], true, "{landed}");
    assert!(landed["steps"][0].as_str().unwrap().contains("1 deleted"), "{landed}");
    assert!(landed["steps"].to_string().contains("deleting old.rs"), "{landed}");
    assert_eq!(seen_files.borrow()[0], [".agentsky/project.json", "keep.rs"], "the checks' folder as the lane sees it");
    assert_eq!(app.err_code(&c.ada.key, "read_task_file", json!({"task_id": c.sid, "path": "old.rs"})), "not_found");
    let listed = app.ok(&c.ada.key, "list_task_files", json!({"task_id": c.sid}));
    let paths: Vec<&str> = listed["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(paths, [".agentsky/project.json", "keep.rs"]);
    // A path the server's rule refuses is refused by name.
    let bad = app.send(runner_request(
        &c.runner,
        "DELETE",
        &format!("/v1/runner/files?lease_id={}&path=..%2Fx", c.lease),
        json!({}),
    ));
    assert_eq!(bad.status, 400, "{:?}", bad.json_body());
}

#[test]
fn a_runner_that_goes_away_is_reported_not_waited_for() {
    let app = app();
    let c = claimed(&app);
    // The runner never answers; its lease runs out meanwhile.
    let work: Worker = Rc::new(|sessions: &HostSessions, _job: &Value| {
        sessions.advance(31_000);
        Box::pin(async { None })
    });
    runner_answers(&app, &c, work);
    let refused = app.agent_ok(&c.agent, "land", json!({"summary": "Add app.rs"}));
    assert_eq!(refused["landed"], false);
    assert!(refused["reason"].as_str().unwrap().contains("went away"), "{refused}");
}

#[test]
fn an_ssh_grant_is_served_as_the_runners_agent_socket_and_its_key_only_to_the_runner() {
    let app = app();
    let c = claimed(&app);
    let r = app.request(
        "POST",
        "/v1/connectors",
        Some(&c.ada.key),
        Some(json!({"name": "web-1", "provider": "ssh", "env": "prod", "credentials": {"ssh_private_key": SSH_KEY}})),
    );
    assert_eq!(r.status, 200, "{:?}", r.json_body());
    let connector = r.json_body()["connector_id"].as_str().unwrap().to_owned();
    for scope in ["read", "write", "deploy", "delete"] {
        let policy = json!({"connector_id": connector, "scope": scope, "decision": "allow"});
        app.request("PUT", "/v1/policies", Some(&c.ada.key), Some(policy));
    }
    let grant = app.agent_ok(
        &c.agent,
        "request_access",
        json!({"target": "web-1", "scope": ["read", "write", "deploy", "delete"], "reason": "run uptime"}),
    );
    assert_eq!(grant["status"], "active");

    let (token, lease) = (c.runner.clone(), c.lease.clone());
    let work: Worker = Rc::new(move |sessions: &HostSessions, job: &Value| {
        let (sessions, job, token, lease) = (sessions.clone(), job.clone(), token.clone(), lease.clone());
        Box::pin(async move {
            assert_eq!(job["kind"], "ssh_agent");
            assert!(job.get("private_key").is_none() && !job.to_string().contains("BEGIN"), "no key in the job");
            let ask = json!({"lease_id": lease, "job_id": job["job_id"]});
            let key = sessions.handle(runner_request(&token, "POST", "/v1/runner/ssh-key", ask.clone())).await;
            assert_eq!(key.json_body()["private_key"], SSH_KEY);
            let again = sessions.handle(runner_request(&token, "POST", "/v1/runner/ssh-key", ask)).await;
            assert_eq!(again.status, 403, "a job's key is handed out once");
            Some(json!({"socket_path": "/tmp/sky-turn/meta/ssh/agent.sock"}))
        })
    });
    runner_answers(&app, &c, work);
    let cred = app.agent_ok(&c.agent, "get_credential", json!({"grantId": grant["grantId"]}));
    assert_eq!(
        cred,
        json!({
            "kind": "ssh-agent", "env": {"SSH_AUTH_SOCK": "/tmp/sky-turn/meta/ssh/agent.sock"},
            "socketPath": "/tmp/sky-turn/meta/ssh/agent.sock", "expiresAt": grant["expiresAt"], "scoped": false,
        })
    );
    assert!(!cred.to_string().contains("BEGIN"), "the agent never sees the key");
    let audit = app.request("GET", "/v1/audit", Some(&c.ada.key), None).json_body();
    let actions: Vec<&str> =
        audit["entries"].as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert!(actions.contains(&"ssh_key_loaded") && actions.contains(&"get_credential"), "{actions:?}");

    // Revoked: the runner is told to end what it holds of the grant (the turn's ssh-agent), and the
    // credential is refused.
    *app.sessions.on_wait.borrow_mut() = None;
    let id = grant["grantId"].as_str().unwrap();
    assert_eq!(app.request("DELETE", &format!("/v1/grants/{id}"), Some(&c.ada.key), None).status, 200);
    let poll = json!({"lease_id": c.lease});
    let jobs = app.send(runner_request(&c.runner, "POST", "/v1/runner/jobs", poll)).json_body();
    let kinds: Vec<&str> = jobs["jobs"].as_array().unwrap().iter().map(|j| j["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["grant_forget"], "{jobs}");
    assert_eq!((jobs["jobs"][0]["grant_id"].as_str(), jobs["jobs"][0]["ssh"].as_bool()), (Some(id), Some(true)));
    assert!(app.agent_err(&c.agent, "get_credential", json!({"grantId": id})).contains("not active"));

    // Once the turn is over there is no runner to hold an agent: refused, clearly.
    let done = json!({"lease_id": c.lease, "events": [], "done": "completed"});
    assert_eq!(app.send(runner_request(&c.runner, "POST", "/v1/runner/events", done)).status, 200);
    let token = app.session_token(&c.ada.key, &c.sid);
    let again = app.agent_ok(
        &token,
        "request_access",
        json!({"target": "web-1", "scope": ["read", "write", "deploy", "delete"], "reason": "again"}),
    );
    let err = app.agent_err(&token, "get_credential", json!({"grantId": again["grantId"]}));
    assert!(err.contains("no runner is running it now"), "{err}");
}

#[test]
fn jobs_are_polled_by_lease_answered_once_and_hidden_from_other_runners() {
    let app = app();
    let c = claimed(&app);
    let other = app.request("POST", "/v1/runners", Some(&c.ada.key), Some(json!({"name": "other"}))).json_body()
        ["token"]
        .as_str()
        .unwrap()
        .to_owned();
    // No answer: the asking call gives up, and says so; the job stays for the runner to find.
    let failed = app.agent_ok(&c.agent, "land", json!({"summary": "x"}));
    assert!(failed["reason"].as_str().unwrap().contains("did not answer"), "{failed}");
    let poll = |token: &str, seen: Value| {
        app.send(runner_request(token, "POST", "/v1/runner/jobs", json!({"lease_id": c.lease, "seen": seen})))
    };
    let jobs = poll(&c.runner, json!([])).json_body();
    assert_eq!((jobs["jobs"][0]["kind"].as_str(), jobs["stop"].as_bool()), (Some("sync"), Some(false)));
    let id = jobs["jobs"][0]["job_id"].clone();
    assert_eq!(poll(&c.runner, json!([id])).json_body()["jobs"], json!([]), "seen jobs are not sent again");
    assert_eq!(poll(&other, json!([])).status, 409, "another runner's lease");
    let post = |result: Value| {
        let body = json!({"lease_id": c.lease, "job_id": id, "result": result});
        app.send(runner_request(&c.runner, "POST", "/v1/runner/jobs/result", body))
    };
    assert_eq!(post(json!({"ok": true})).status, 200);
    assert_eq!(post(json!({"ok": false})).status, 200, "a retried post is accepted");
    assert_eq!(poll(&c.runner, json!([])).json_body()["jobs"], json!([]), "answered");
    let bad = json!({"lease_id": c.lease, "wait_seconds": 26});
    assert_eq!(app.send(runner_request(&c.runner, "POST", "/v1/runner/jobs", bad)).status, 400);
    let huge = post(json!({"output": "x".repeat(70_000)}));
    assert_eq!(huge.status, 413);
}

#[test]
fn goal_command_criteria_are_graded_by_what_the_runner_ran_at_the_turns_end() {
    let app = app();
    let c = claimed(&app);
    let goal = json!({
        "session_id": c.sid, "objective": "tests pass",
        "criteria": [{"text": "the tests pass", "command": "cargo test"}, {"text": "lint is clean", "command": "cargo clippy"}],
        "max_iterations": 2, "idempotency_key": "g",
    });
    app.ok(&c.ada.key, "set_goal", goal);
    let criteria =
        app.send(runner_request(&c.runner, "GET", &format!("/v1/runner/criteria?lease_id={}", c.lease), json!({})));
    assert_eq!(criteria.json_body()["commands"], json!(["cargo test", "cargo clippy"]));
    let done = json!({"lease_id": c.lease, "events": [{"key": "a", "type": "agent_message", "text": "done"}], "done": "completed",
    "checks": [
        {"command": "cargo test", "exit_code": 0, "timed_out": false, "output": "ok"},
        {"command": "cargo clippy", "exit_code": 101, "timed_out": false, "output": "warning: unused\nerror: could not compile"},
    ]});
    let r = app.send(runner_request(&c.runner, "POST", "/v1/runner/events", done));
    assert_eq!(r.status, 200, "{:?}", r.json_body());
    app.settle();
    let g = app.ok(&c.ada.key, "get_goal", json!({"session_id": c.sid}));
    let verdicts = &g["goal"]["last_verdicts"];
    assert_eq!(
        (verdicts[0]["met"].as_bool(), verdicts[0]["reason"].as_str()),
        (Some(true), Some("`cargo test` exited 0"))
    );
    assert_eq!(
        (verdicts[1]["met"].as_bool(), verdicts[1]["reason"].as_str()),
        (Some(false), Some("`cargo clippy` exited 101: error: could not compile"))
    );
    assert_eq!(g["goal"]["status"], "active", "unmet: the next turn starts");
}
