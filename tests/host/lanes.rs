//! Lanes and `land`: a lane starts at the base's head; `land` merges the base into the lane three ways per
//! file (disjoint edits merge, overlapping ones conflict with their regions until the agent writes its
//! reconciled version), and never lands without running the checks it knows: on the session's runner, or
//! on any online runner of the workspace in a fresh checkout of the merged lane, or not at all. A delete is
//! a tombstone in the lane: the lane stops seeing the file, the base keeps it until `land` merges the delete
//! (against an unchanged file it wins, against an edit it conflicts until reconciled); a rename is a delete
//! plus an add.

use crate::support::{runner_request, Account, HostSessions, TestApp};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::rc::Rc;

struct Task {
    ada: Account,
    agent_id: String,
    /// The task's id (its first session's).
    task: String,
}

fn task(app: &TestApp) -> Task {
    let ada = app.signup("Ada", "ada@example.com");
    let agent_id = app.create_agent(&ada.key, json!({"name": "Dev", "harness": "echo", "model": "m"}));
    let s =
        app.ok(&ada.key, "start_session", json!({"agent_id": agent_id, "message": "plan", "idempotency_key": "s0"}));
    app.settle();
    let task = s["session"]["session_id"].as_str().unwrap().to_owned();
    let r = app.request("PUT", &format!("/v1/tasks/{task}/settings"), Some(&ada.key), Some(json!({"lanes": true})));
    assert_eq!(r.status, 200, "{:?}", r.json_body());
    Task { ada, agent_id, task }
}

/// A new session in the task: (session id, its token).
fn join(app: &TestApp, t: &Task, name: &str) -> (String, String) {
    let s = app.ok(
        &t.ada.key,
        "start_session",
        json!({"agent_id": t.agent_id, "message": name, "idempotency_key": name, "task_id": t.task}),
    );
    app.settle();
    let sid = s["session"]["session_id"].as_str().unwrap().to_owned();
    let token = app.session_token(&t.ada.key, &sid);
    (sid, token)
}

/// The session writes a file in its lane, as its harness's file tool does.
fn lane_write(app: &TestApp, t: &Task, sid: &str, path: &str, text: &str) {
    let key = format!("w-{sid}-{path}-{}", text.len());
    app.ok(
        &t.ada.key,
        "send_message",
        json!({"session_id": sid, "message": format!("/write {path} {text}"), "idempotency_key": key}),
    );
    app.settle();
}

/// Writes `text` again as a new version (a fresh idempotency key: `lane_write`'s would replay the first).
fn lane_write_again(app: &TestApp, t: &Task, sid: &str, path: &str, text: &str) {
    let message = format!("/write {path} {text}");
    app.ok(&t.ada.key, "send_message", json!({"session_id": sid, "message": message, "idempotency_key": "again"}));
    app.settle();
}

fn base_write(app: &TestApp, t: &Task, path: &str, text: &str) {
    app.ok(&t.ada.key, "write_task_file", json!({"task_id": t.task, "path": path, "content": text}));
}

fn base_read(app: &TestApp, t: &Task, path: &str) -> String {
    app.ok(&t.ada.key, "read_task_file", json!({"task_id": t.task, "path": path}))["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Registers a runner of the workspace that is online (it just called) and, whenever a call waits on a
/// job, claims checkouts, fetches their lanes and answers with `exit`; returns what it fetched.
pub fn checker(app: &TestApp, key: &str, exit: i64) -> Rc<RefCell<Vec<Value>>> {
    let token = app.request("POST", "/v1/runners", Some(key), Some(json!({"name": "ci box"}))).json_body()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(app.send(runner_request(&token, "POST", "/v1/runner/claim", json!({}))).status, 204);
    answer_checkouts(app, move || token.clone(), exit)
}

/// No runner of the person: whenever a call waits on a job, the runner of the sandbox booted last claims
/// the checkout, fetches its lane and answers with `exit`; returns what it fetched.
fn sandbox_checker(app: &TestApp, exit: i64) -> Rc<RefCell<Vec<Value>>> {
    let boots = app.sessions.sandboxes.boots.clone();
    answer_checkouts(app, move || boots.borrow().last().map(|b| b.runner_token.clone()).unwrap_or_default(), exit)
}

fn answer_checkouts(app: &TestApp, token: impl Fn() -> String + 'static, exit: i64) -> Rc<RefCell<Vec<Value>>> {
    let token = Rc::new(token);
    let fetched = Rc::new(RefCell::new(Vec::new()));
    let log = fetched.clone();
    *app.sessions.on_wait.borrow_mut() = Some(Rc::new(move |sessions: HostSessions, key: String| {
        let (token, log) = (token(), log.clone());
        Box::pin(async move {
            if !key.starts_with("job:") {
                return;
            }
            let claim = sessions.handle(runner_request(&token, "POST", "/v1/runner/claim", json!({}))).await;
            if claim.status != 200 {
                return;
            }
            let c = claim.json_body()["checkout"].clone();
            assert_eq!(c["kind"], "checks");
            let lease = c["lease_id"].as_str().unwrap().to_owned();
            let files = sessions
                .handle(runner_request(&token, "GET", &format!("/v1/runner/files?lease_id={lease}"), json!({})))
                .await
                .json_body();
            log.borrow_mut().push(json!({"command": c["command"], "files": files["files"]}));
            let beat = sessions
                .handle(runner_request(&token, "POST", "/v1/runner/heartbeat", json!({"lease_id": lease})))
                .await;
            assert_eq!(beat.status, 200, "{:?}", beat.json_body());
            let output = if exit == 0 { "ok".to_owned() } else { FAILED_OUTPUT.to_owned() };
            let result = json!({"exit_code": exit, "timed_out": false, "output": output});
            let post = json!({"lease_id": lease, "job_id": c["job_id"], "result": result});
            let r = sessions.handle(runner_request(&token, "POST", "/v1/runner/jobs/result", post.clone())).await;
            assert_eq!(r.status, 200, "{:?}", r.json_body());
            // A retried post whose answer was lost is accepted, unchanged.
            let again = sessions.handle(runner_request(&token, "POST", "/v1/runner/jobs/result", post)).await;
            assert_eq!(again.status, 200, "{:?}", again.json_body());
        })
    }));
    fetched
}

/// What failing checks print: many lines, a credential near the end, then the verdict.
const FAILED_OUTPUT: &str = concat!(
    "noise 0\n",
    "noise 1\n",
    "noise 2\n",
    "noise 3\n",
    "noise 4\n",
    "noise 5\n",
    "noise 6\n",
    "noise 7\n",
    "noise 8\n",
    "noise 9\n",
    "noise 10\n",
    "noise 11\n",
    "noise 12\n",
    "noise 13\n",
    "noise 14\n",
    "noise 15\n",
    "noise 16\n",
    "noise 17\n",
    "noise 18\n",
    "noise 19\n",
    "noise 20\n",
    "noise 21\n",
    "noise 22\n",
    "noise 23\n",
    "noise 24\n",
    "noise 25\n",
    "noise 26\n",
    "noise 27\n",
    "noise 28\n",
    "noise 29\n",
    "noise 30\n",
    "noise 31\n",
    "noise 32\n",
    "noise 33\n",
    "noise 34\n",
    "noise 35\n",
    "noise 36\n",
    "noise 37\n",
    "noise 38\n",
    "noise 39\n",
    "noise 40\n",
    "noise 41\n",
    "noise 42\n",
    "noise 43\n",
    "noise 44\n",
    "noise 45\n",
    "noise 46\n",
    "noise 47\n",
    "noise 48\n",
    "noise 49\n",
    "noise 50\n",
    "noise 51\n",
    "noise 52\n",
    "noise 53\n",
    "noise 54\n",
    "noise 55\n",
    "noise 56\n",
    "noise 57\n",
    "noise 58\n",
    "noise 59\n",
    "noise 60\n",
    "noise 61\n",
    "noise 62\n",
    "noise 63\n",
    "export GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwx\n1 failed"
);

/// The project's checks, as `remember_command` keeps them.
fn checks_known(app: &TestApp, t: &Task) {
    let project = json!({"checks": {"command": "make check"}}).to_string();
    base_write(app, t, ".agentsky/project.json", &project);
}

fn file_of(fetched: &Value, path: &str) -> Option<String> {
    fetched["files"].as_array()?.iter().find(|f| f["path"] == path).map(|f| f["content"].as_str().unwrap().to_owned())
}

const FIVE: &str = "one\ntwo\nthree\nfour\nfive";

#[test]
fn a_session_that_joins_late_starts_at_the_bases_head() {
    let app = TestApp::new();
    let t = task(&app);
    base_write(&app, &t, "a.txt", "1");
    base_write(&app, &t, "b.txt", "2");
    let (sid, token) = join(&app, &t, "late");
    let activity = app.agent_ok(&token, "project_activity", json!({}));
    assert_eq!(activity["behind"], 0, "{activity}");
    assert_eq!(activity["baseCommits"], json!([]));
    lane_write(&app, &t, &sid, "c.txt", "3");
    base_write(&app, &t, "a.txt", "1 again");
    let activity = app.agent_ok(&token, "project_activity", json!({}));
    assert_eq!(activity["behind"], 1, "{activity}");
    let sessions = app.agent_ok(&token, "list_sessions", json!({}));
    let me = sessions.as_array().unwrap().iter().find(|s| s["self"] == true).unwrap().clone();
    assert_eq!((me["behind"].clone(), me["files"].clone()), (json!(1), json!(["c.txt"])), "{me}");
}

#[test]
fn disjoint_edits_of_one_file_in_two_lanes_both_land_and_checks_run_on_another_runner() {
    let app = TestApp::new();
    let t = task(&app);
    checks_known(&app, &t);
    base_write(&app, &t, "app.txt", FIVE);
    let (a, ta) = join(&app, &t, "first");
    let (b, tb) = join(&app, &t, "second");
    let fetched = checker(&app, &t.ada.key, 0);
    lane_write(&app, &t, &a, "app.txt", "ONE\ntwo\nthree\nfour\nfive");
    lane_write(&app, &t, &b, "app.txt", "one\ntwo\nthree\nfour\nFIVE");

    let landed = app.agent_ok(&ta, "land", json!({"summary": "Shout one"}));
    assert_eq!(landed["landed"], true, "{landed}");
    assert!(landed["steps"].to_string().contains("passed (exit 0) on another runner of the workspace"), "{landed}");
    let activity = app.agent_ok(&tb, "project_activity", json!({}));
    assert_eq!(activity["behind"], 1, "{activity}");

    let landed = app.agent_ok(&tb, "land", json!({"summary": "Shout five"}));
    assert_eq!(landed["landed"], true, "{landed}");
    assert!(landed["steps"].to_string().contains("merged app.txt"), "{landed}");
    assert_eq!(base_read(&app, &t, "app.txt"), "ONE\ntwo\nthree\nfour\nFIVE");
    // The second checkout held the merged file, not the lane's own edit alone.
    let seen = fetched.borrow();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[1]["command"], "make check");
    assert_eq!(file_of(&seen[1], "app.txt").as_deref(), Some("ONE\ntwo\nthree\nfour\nFIVE"));
    let activity = app.agent_ok(&tb, "project_activity", json!({}));
    assert_eq!(activity["behind"], 0, "{activity}");
}

#[test]
fn overlapping_edits_conflict_with_their_regions_until_reconciled() {
    let app = TestApp::new();
    let t = task(&app);
    checks_known(&app, &t);
    base_write(&app, &t, "app.txt", FIVE);
    let (a, ta) = join(&app, &t, "first");
    let (b, tb) = join(&app, &t, "second");
    checker(&app, &t.ada.key, 0);
    lane_write(&app, &t, &a, "app.txt", "one\nTWO from a\nthree\nfour\nfive");
    lane_write(&app, &t, &b, "app.txt", "one\ntwo from b\nthree\nfour\nfive");
    assert_eq!(app.agent_ok(&ta, "land", json!({"summary": "a"}))["landed"], true);

    let conflict = app.agent_ok(&tb, "land", json!({"summary": "b"}));
    assert_eq!(conflict["landed"], false, "{conflict}");
    assert!(conflict["reason"].as_str().unwrap().starts_with("conflict: app.txt"), "{conflict}");
    // The advice names only tools this agent has: every snake_case name in it is a session tool.
    let reason = conflict["reason"].as_str().unwrap();
    let named: Vec<&str> = reason
        .split(|c: char| !(c.is_ascii_lowercase() || c == '_'))
        .filter(|w| w.contains('_') && !w.starts_with('_') && !w.ends_with('_'))
        .collect();
    assert!(!named.is_empty() && named.iter().all(|t| agentsky::agent::is_tool(t)), "{named:?} in {reason}");
    let c = &conflict["conflicts"][0];
    assert_eq!((c["path"].clone(), c["kind"].clone()), (json!("app.txt"), json!("content")));
    let r = &c["regions"][0];
    assert_eq!(
        (r["lane"]["from"].clone(), r["lane"]["to"].clone(), r["lane"]["text"].clone()),
        (json!(2), json!(2), json!("two from b\n"))
    );
    assert_eq!(r["base"]["text"], "TWO from a\n");
    assert_eq!(r["merge_base"], "two\n");
    // Nothing reached the base, and asking again gives the same conflict.
    assert_eq!(base_read(&app, &t, "app.txt"), "one\nTWO from a\nthree\nfour\nfive");
    assert_eq!(app.agent_ok(&tb, "land", json!({"summary": "b"}))["landed"], false);

    // The agent reads the base's version and the merge base.
    let activity = app.agent_ok(&tb, "project_activity", json!({}));
    let m = &activity["merging"][0];
    assert_eq!(m["file"], "app.txt");
    assert_eq!(m["base"]["content"], "one\nTWO from a\nthree\nfour\nfive");
    assert_eq!(m["mergeBase"]["content"], FIVE);

    // Meanwhile the base changes elsewhere in the file: the reconciled version still merges with that.
    base_write(&app, &t, "app.txt", "one\nTWO from a\nthree\nfour\nfive!");
    lane_write(&app, &t, &b, "app.txt", "one\nTWO from a and b\nthree\nfour\nfive");
    let activity = app.agent_ok(&tb, "project_activity", json!({}));
    assert_eq!(activity["merging"], json!([]), "a reconciled file is no longer waiting");
    let landed = app.agent_ok(&tb, "land", json!({"summary": "b"}));
    assert_eq!(landed["landed"], true, "{landed}");
    assert_eq!(base_read(&app, &t, "app.txt"), "one\nTWO from a and b\nthree\nfour\nfive!");
    assert_eq!(app.agent_ok(&tb, "project_activity", json!({}))["behind"], 0);
}

#[test]
fn files_added_in_both_lanes_merge_when_equal_and_conflict_when_not() {
    let app = TestApp::new();
    let t = task(&app);
    checks_known(&app, &t);
    let (a, ta) = join(&app, &t, "first");
    let (b, tb) = join(&app, &t, "second");
    checker(&app, &t.ada.key, 0);
    lane_write(&app, &t, &a, "same.txt", "same");
    lane_write(&app, &t, &b, "same.txt", "same");
    lane_write(&app, &t, &a, "new.txt", "from a");
    lane_write(&app, &t, &b, "new.txt", "from b");
    lane_write(&app, &t, &b, "only-b.txt", "b");
    assert_eq!(app.agent_ok(&ta, "land", json!({"summary": "a"}))["landed"], true);
    let conflict = app.agent_ok(&tb, "land", json!({"summary": "b"}));
    let files: Vec<&str> =
        conflict["conflicts"].as_array().unwrap().iter().map(|c| c["path"].as_str().unwrap()).collect();
    assert_eq!(files, ["new.txt"], "{conflict}");
    assert_eq!(conflict["conflicts"][0]["kind"], "added_in_both");
    assert_eq!(conflict["conflicts"][0]["merge_base_version"], Value::Null);
    lane_write(&app, &t, &b, "new.txt", "from a and b");
    let landed = app.agent_ok(&tb, "land", json!({"summary": "b"}));
    assert_eq!(landed["landed"], true, "{landed}");
    assert_eq!(
        (base_read(&app, &t, "new.txt"), base_read(&app, &t, "same.txt"), base_read(&app, &t, "only-b.txt")),
        ("from a and b".to_owned(), "same".to_owned(), "b".to_owned())
    );
}

#[test]
fn a_one_sided_base_change_reaches_the_lane_and_failing_checks_refuse() {
    let app = TestApp::new();
    let t = task(&app);
    base_write(&app, &t, "app.txt", FIVE);
    base_write(&app, &t, "lib.txt", "lib");
    checks_known(&app, &t);
    let (a, ta) = join(&app, &t, "first");
    let fetched = checker(&app, &t.ada.key, 1);
    lane_write(&app, &t, &a, "app.txt", "one\ntwo\nthree\nfour\nfive\nsix");
    base_write(&app, &t, "lib.txt", "lib v2");
    let failed = app.agent_ok(&ta, "land", json!({"summary": "six"}));
    assert_eq!(failed["landed"], false, "{failed}");
    assert!(failed["reason"].as_str().unwrap().starts_with("the checks failed: `make check` exited 1"), "{failed}");
    // The checkout held the lane's edit and the base's newer file.
    let seen = fetched.borrow();
    assert_eq!(file_of(&seen[0], "app.txt").as_deref(), Some("one\ntwo\nthree\nfour\nfive\nsix"));
    assert_eq!(file_of(&seen[0], "lib.txt").as_deref(), Some("lib v2"));
    assert_eq!(base_read(&app, &t, "app.txt"), FIVE);
    // The output shown is its redacted tail, and only that is stored.
    let steps = failed["steps"].to_string();
    assert!(steps.contains("GITHUB_TOKEN=[redacted]") && steps.contains("1 failed"), "{failed}");
    assert!(!steps.contains("ghp_") && !steps.contains("noise 10\\n"), "{failed}");
    let stored: String = app.db.0.query_row("SELECT result FROM runner_checkout", [], |r| r.get(0)).unwrap();
    assert!(!stored.contains("ghp_"), "{stored}");
    assert!(!stored.contains("noise 0\\n") && stored.contains("noise 63"), "only the kept tail: {stored}");
    // The cron forgets a done checkout after a day, not before.
    let sweep = || app.system(|cx| Box::pin(agentsky::domain::jobs::forget_done_checkouts(cx))).unwrap();
    assert_eq!(sweep(), 0);
    app.advance(24 * 3_600_000 + 1);
    assert_eq!(sweep(), 1);
    let left: i64 = app.db.0.query_row("SELECT COUNT(*) FROM runner_checkout", [], |r| r.get(0)).unwrap();
    assert_eq!(left, 0);
}

#[test]
fn with_checks_known_and_no_runner_online_land_refuses() {
    let app = TestApp::new();
    *app.sessions.sandboxes.unavailable.borrow_mut() = Some("no container runtime".into());
    let t = task(&app);
    checks_known(&app, &t);
    let (a, ta) = join(&app, &t, "first");
    lane_write(&app, &t, &a, "app.txt", "x");
    let refused = app.agent_ok(&ta, "land", json!({"summary": "x"}));
    assert_eq!(refused["landed"], false, "{refused}");
    assert!(refused["reason"].as_str().unwrap().contains("no runner of the workspace is online"), "{refused}");
    assert_eq!(app.err_code(&t.ada.key, "read_task_file", json!({"task_id": t.task, "path": "app.txt"})), "not_found");

    // A runner last seen over a minute ago is not online either.
    checker(&app, &t.ada.key, 0);
    app.advance(61_000);
    let refused = app.agent_ok(&ta, "land", json!({"summary": "x"}));
    assert!(refused["reason"].as_str().unwrap().contains("no runner of the workspace is online"), "{refused}");
}

/// With no runner of the workspace online, the checks run in the session's hosted sandbox, started for
/// them, in a fresh checkout of the lane: passing, the work lands; failing, the landing is refused with
/// their output.
#[test]
fn with_no_runner_online_the_checks_run_in_the_sessions_sandbox() {
    let app = TestApp::new();
    let t = task(&app);
    checks_known(&app, &t);
    let (a, ta) = join(&app, &t, "first");
    lane_write(&app, &t, &a, "app.txt", "x");
    let fetched = sandbox_checker(&app, 3);
    let refused = app.agent_ok(&ta, "land", json!({"summary": "x"}));
    assert_eq!(refused["landed"], false, "{refused}");
    assert!(refused["steps"].to_string().contains("exited 3 in the session's hosted sandbox"), "{refused}");
    assert!(refused["steps"].to_string().contains("1 failed"), "the checks' output: {refused}");
    let boots = app.sessions.sandboxes.boots.borrow().clone();
    assert_eq!((boots.len(), boots[0].session_id.as_str()), (1, a.as_str()), "the session's own sandbox");
    assert_eq!(file_of(&fetched.borrow()[0], "app.txt").as_deref(), Some("x"), "a checkout of the lane");

    sandbox_checker(&app, 0);
    let landed = app.agent_ok(&ta, "land", json!({"summary": "x"}));
    assert_eq!(landed["landed"], true, "{landed}");
    assert!(landed["steps"].to_string().contains("passed (exit 0) in the session's hosted sandbox"), "{landed}");
    assert_eq!(app.sessions.sandboxes.boots.borrow().len(), 1, "the sandbox still ran: not booted again");
    assert_eq!(base_read(&app, &t, "app.txt"), "x");
}

#[test]
fn a_file_first_written_in_a_lane_merges_from_the_base_the_lane_saw_then() {
    let app = TestApp::new();
    let t = task(&app);
    // The task's first session started before the base had app.txt or its checks.
    let first = app.session_token(&t.ada.key, &t.task);
    checks_known(&app, &t);
    base_write(&app, &t, "app.txt", FIVE);
    checker(&app, &t.ada.key, 0);
    base_write(&app, &t, "app.txt", "one\ntwo\nthree\nfour\nfive!");
    lane_write(&app, &t, &t.task, "app.txt", "ONE\ntwo\nthree\nfour\nfive!");
    base_write(&app, &t, "app.txt", "one\ntwo\nTHREE\nfour\nfive!");
    let landed = app.agent_ok(&first, "land", json!({"summary": "Shout one"}));
    assert_eq!(landed["landed"], true, "{landed}");
    assert_eq!(base_read(&app, &t, "app.txt"), "ONE\ntwo\nTHREE\nfour\nfive!");
}

#[test]
fn writing_the_lanes_own_text_again_keeps_its_side_of_a_conflict() {
    let app = TestApp::new();
    let t = task(&app);
    checks_known(&app, &t);
    base_write(&app, &t, "app.txt", FIVE);
    let (a, ta) = join(&app, &t, "first");
    checker(&app, &t.ada.key, 0);
    lane_write(&app, &t, &a, "app.txt", "one\nmine\nthree\nfour\nfive");
    base_write(&app, &t, "app.txt", "one\ntheirs\nthree\nfour\nfive");
    assert_eq!(app.agent_ok(&ta, "land", json!({"summary": "mine"}))["landed"], false);
    // The same text again: a new version, so the lane's side is its reconciled version.
    lane_write_again(&app, &t, &a, "app.txt", "one\nmine\nthree\nfour\nfive");
    let landed = app.agent_ok(&ta, "land", json!({"summary": "mine"}));
    assert_eq!(landed["landed"], true, "{landed}");
    assert_eq!(base_read(&app, &t, "app.txt"), "one\nmine\nthree\nfour\nfive");
}

#[test]
fn of_two_landings_checked_against_one_head_only_the_first_commits() {
    // Both lanes passed their checks against the same base head; the second batch finds it moved and
    // writes nothing (before, it overwrote the first one's files and commit).
    let app = TestApp::new();
    let t = task(&app);
    base_write(&app, &t, "app.txt", "base");
    let (a, _) = join(&app, &t, "first");
    let (b, _) = join(&app, &t, "second");
    lane_write(&app, &t, &a, "app.txt", "from-a");
    lane_write(&app, &t, &b, "app.txt", "from-b");
    let ws: String =
        app.db.0.query_row("SELECT workspace_id FROM session WHERE session_id = ?1", [&a], |r| r.get(0)).unwrap();
    let before_b: i64 =
        app.db.0.query_row("SELECT lane_base_seq FROM session WHERE session_id = ?1", [&b], |r| r.get(0)).unwrap();
    let (task, ws2, a2, b2) = (t.task.clone(), ws.clone(), a.clone(), b.clone());
    let landed = app.system(move |cx| {
        Box::pin(async move {
            use agentsky::store::lanes;
            let head = lanes::head(cx.db(), &task).await.unwrap();
            let mut out = vec![];
            for (sid, commit) in [(&a2, "cmt_a"), (&b2, "cmt_b")] {
                let changes = lanes::changes(cx.db(), &task, sid).await.unwrap();
                assert_eq!(changes.len(), 1);
                let l = lanes::Landing {
                    task_id: &task,
                    workspace_id: &ws2,
                    session_id: sid,
                    commit_id: commit,
                    subject: "s",
                    body: "",
                    changes: &changes,
                    head,
                    now_ms: cx.now_ms,
                };
                out.push((head, lanes::land(cx.db(), &l).await.unwrap()));
            }
            out
        })
    });
    let head = landed[0].0;
    assert_eq!(landed[0].1, Some(head + 1));
    assert_eq!(landed[1].1, None, "the second landing must see the base moved");
    assert_eq!(base_read(&app, &t, "app.txt"), "from-a");
    let commits: i64 = app
        .db
        .0
        .query_row("SELECT COUNT(*) FROM task_commit WHERE task_id = ?1 AND commit_id = 'cmt_b'", [&t.task], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(commits, 0);
    let after_b: i64 =
        app.db.0.query_row("SELECT lane_base_seq FROM session WHERE session_id = ?1", [&b], |r| r.get(0)).unwrap();
    assert_eq!(after_b, before_b, "the loser's lane keeps its merge base");
}

/// Puts `n` files into a lane by SQL (`f0000.txt`…), as many writes would.
fn many_lane_files(app: &TestApp, t: &Task, sid: &str, n: usize) {
    let ws: String =
        app.db.0.query_row("SELECT workspace_id FROM session WHERE session_id = ?1", [sid], |r| r.get(0)).unwrap();
    for i in 0..n {
        app.db
            .0
            .execute(
                "INSERT INTO task_file (task_id, workspace_id, lane, path, version, size_bytes, sha256, created_ms, base_seq)
                 VALUES (?1, ?2, ?3, ?4, 1, 1, ?5, 0, 0)",
                rusqlite::params![t.task, ws, sid, format!("f{i:04}.txt"), format!("{i:064x}")],
            )
            .unwrap();
    }
}

#[test]
fn a_lane_of_more_than_a_thousand_files_merges_all_of_them_and_landing_refuses_past_the_cap() {
    let app = TestApp::new();
    let t = task(&app);
    checks_known(&app, &t);
    base_write(&app, &t, "zzz.txt", "old");
    let (a, ta) = join(&app, &t, "first");
    // The lane holds zzz.txt as the base had it, after 1001 files of its own, and the base then changes it.
    app.db
        .0
        .execute(
            "INSERT INTO task_file (task_id, workspace_id, lane, path, version, size_bytes, sha256, created_ms, base_seq)
             SELECT task_id, workspace_id, ?2, path, 1, size_bytes, sha256, created_ms, base_seq FROM task_file
             WHERE task_id = ?1 AND lane = '' AND path = 'zzz.txt'",
            [&t.task, &a],
        )
        .unwrap();
    many_lane_files(&app, &t, &a, 1001);
    base_write(&app, &t, "zzz.txt", "new");
    let count = || -> i64 {
        app.db.0.query_row("SELECT COUNT(*) FROM task_commit WHERE task_id = ?1", [&t.task], |r| r.get(0)).unwrap()
    };
    let before = count();
    let refused = app.agent_ok(&ta, "land", json!({"summary": "big"}));
    assert_eq!(refused["landed"], false, "{refused}");
    assert!(refused["reason"].as_str().unwrap().contains("more than 1000 files"), "{refused}");
    // The merge before it reached the lane's last file.
    assert!(refused["steps"].to_string().contains("merged zzz.txt"), "{refused}");
    let lane_sha: String = app
        .db
        .0
        .query_row(
            "SELECT sha256 FROM task_file WHERE task_id = ?1 AND lane = ?2 AND path = 'zzz.txt' ORDER BY version DESC LIMIT 1",
            [&t.task, &a],
            |r| r.get(0),
        )
        .unwrap();
    let base_sha: String = app
        .db
        .0
        .query_row(
            "SELECT sha256 FROM task_file WHERE task_id = ?1 AND lane = '' AND path = 'zzz.txt' ORDER BY version DESC LIMIT 1",
            [&t.task],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(lane_sha, base_sha);
    assert_eq!(count(), before, "nothing landed");
}

/// The session deletes a file in its lane, as its harness's `delete_task_file` tool does; the tool's
/// answer.
fn lane_delete(app: &TestApp, t: &Task, sid: &str, path: &str, key: &str) -> Value {
    let sent = app.ok(
        &t.ada.key,
        "send_message",
        json!({"session_id": sid, "message": format!("/delete {path}"), "idempotency_key": key}),
    );
    app.settle();
    let page = app.ok(
        &t.ada.key,
        "read_session",
        json!({"session_id": sid, "cursor": sent["cursor"], "message_id": sent["message_id"]}),
    );
    let result = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "tool_result" && e["name"] == "delete_task_file")
        .unwrap_or_else(|| panic!("no delete_task_file result: {page}"))
        .clone();
    serde_json::from_str(result["content"].as_str().unwrap()).unwrap()
}

/// The paths a session's lane sees, as its harness's `list_task_files` does.
fn lane_paths(app: &TestApp, t: &Task, sid: &str) -> Vec<String> {
    let (task, sid) = (t.task.clone(), sid.to_owned());
    app.system(move |cx| {
        Box::pin(async move {
            let ws = agentsky::store::sessions::get(cx.db(), &sid).await.unwrap().unwrap().workspace_id;
            let folder = agentsky::domain::taskfs::Folder { workspace_id: &ws, task_id: &task, lane: &sid };
            let files = agentsky::domain::taskfs::list(cx.db(), folder).await.unwrap();
            files.into_iter().map(|f| f.path).collect()
        })
    })
}

/// What a lane reads of `path` at `at` (`lane`, `base`, `merge_base`), as the harness's `read_task_file`
/// does: the text, or the error's code.
fn lane_read(app: &TestApp, t: &Task, sid: &str, path: &str, at: &str) -> Result<String, String> {
    let (task, sid, path) = (t.task.clone(), sid.to_owned(), path.to_owned());
    let at: agentsky::domain::taskfs::At = serde_json::from_value(json!(at)).unwrap();
    app.system(move |cx| {
        Box::pin(async move {
            let ws = agentsky::store::sessions::get(cx.db(), &sid).await.unwrap().unwrap().workspace_id;
            let folder = agentsky::domain::taskfs::Folder { workspace_id: &ws, task_id: &task, lane: &sid };
            agentsky::domain::taskfs::read_at(cx.db(), cx.env.blobs.as_ref(), folder, &path, at)
                .await
                .map(|(_, text)| text)
                .map_err(|e| e.code.as_str().to_owned())
        })
    })
}

fn base_paths(app: &TestApp, t: &Task) -> Vec<String> {
    let files = app.ok(&t.ada.key, "list_task_files", json!({"task_id": t.task}))["files"].clone();
    files.as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap().to_owned()).collect()
}

fn me(app: &TestApp, token: &str) -> Value {
    let sessions = app.agent_ok(token, "list_sessions", json!({}));
    sessions.as_array().unwrap().iter().find(|s| s["self"] == true).unwrap().clone()
}

#[test]
fn a_lane_deletes_a_file_and_land_carries_the_delete_into_the_base() {
    let app = TestApp::new();
    let t = task(&app);
    checks_known(&app, &t);
    base_write(&app, &t, "old.txt", "old");
    base_write(&app, &t, "keep.txt", "keep");
    let (a, ta) = join(&app, &t, "first");
    let (b, tb) = join(&app, &t, "second");
    let fetched = checker(&app, &t.ada.key, 0);

    let done = lane_delete(&app, &t, &a, "old.txt", "d1");
    assert_eq!(done["deleted"], true, "{done}");
    // The lane no longer sees it; the base and the other lane still do, until land.
    assert!(!lane_paths(&app, &t, &a).contains(&"old.txt".to_owned()));
    assert_eq!(lane_read(&app, &t, &a, "old.txt", "lane"), Err("not_found".into()));
    assert_eq!(lane_read(&app, &t, &a, "old.txt", "base"), Ok("old".into()));
    assert!(lane_paths(&app, &t, &b).contains(&"old.txt".to_owned()));
    assert_eq!(base_read(&app, &t, "old.txt"), "old");
    // A delete is a change of the lane: listed, and an overlap for a peer that changed the file too.
    assert_eq!(me(&app, &ta)["files"], json!(["old.txt"]));
    lane_write(&app, &t, &b, "old.txt", "old, edited");
    let peer = app.agent_ok(&tb, "list_sessions", json!({}));
    let a_row = peer.as_array().unwrap().iter().find(|s| s["sessionId"] == a).unwrap().clone();
    assert_eq!(a_row["overlapsWithYou"], json!(["old.txt"]), "{peer}");
    // Deleting what the lane no longer sees names the file.
    let again = lane_delete(&app, &t, &a, "old.txt", "d2");
    assert!(again["error"].as_str().unwrap().contains("no file `old.txt`"), "{again}");

    let landed = app.agent_ok(&ta, "land", json!({"summary": "Remove old.txt"}));
    assert_eq!(landed["landed"], true, "{landed}");
    assert!(landed["steps"].to_string().contains("deleting old.txt"), "{landed}");
    // The checks ran on the lane as it would land: without the file.
    assert_eq!(file_of(&fetched.borrow()[0], "old.txt"), None);
    assert_eq!(file_of(&fetched.borrow()[0], "keep.txt").as_deref(), Some("keep"));
    assert_eq!(base_paths(&app, &t), [".agentsky/project.json", "keep.txt"]);
    assert_eq!(app.err_code(&t.ada.key, "read_task_file", json!({"task_id": t.task, "path": "old.txt"})), "not_found");
    // Its history stays readable by version; the delete itself is no text.
    let v1 = app.ok(&t.ada.key, "read_task_file", json!({"task_id": t.task, "path": "old.txt", "version": 1}));
    assert_eq!(v1["content"], "old");
    assert_eq!(
        app.err_code(&t.ada.key, "read_task_file", json!({"task_id": t.task, "path": "old.txt", "version": 2})),
        "not_found"
    );
    assert_eq!(me(&app, &ta)["files"], json!([]), "landed: nothing left to land");
    let activity = app.agent_ok(&tb, "project_activity", json!({}));
    assert_eq!(activity["behind"], 1, "{activity}");
    assert_eq!(activity["baseCommits"][0]["files"], json!(["old.txt"]), "{activity}");
    assert_eq!(activity["overlaps"], json!([]), "a landed lane changes nothing any more: {activity}");
}

#[test]
fn a_delete_against_an_edit_conflicts_until_reconciled() {
    let app = TestApp::new();
    let t = task(&app);
    checks_known(&app, &t);
    base_write(&app, &t, "app.txt", FIVE);
    let (a, ta) = join(&app, &t, "deleter");
    let (b, tb) = join(&app, &t, "editor");
    checker(&app, &t.ada.key, 0);
    lane_delete(&app, &t, &a, "app.txt", "d1");
    lane_write(&app, &t, &a, "other.txt", "other");
    lane_write(&app, &t, &b, "app.txt", "one\nTWO\nthree\nfour\nfive");
    assert_eq!(app.agent_ok(&tb, "land", json!({"summary": "edit"}))["landed"], true);

    // The lane deleted what the base changed since.
    let conflict = app.agent_ok(&ta, "land", json!({"summary": "delete"}));
    assert_eq!(conflict["landed"], false, "{conflict}");
    assert!(conflict["reason"].as_str().unwrap().starts_with("conflict: app.txt"), "{conflict}");
    let c = &conflict["conflicts"][0];
    assert_eq!((c["path"].clone(), c["kind"].clone()), (json!("app.txt"), json!("deleted_in_lane")), "{conflict}");
    assert_eq!(c["regions"], json!([]));
    assert!(c["merge_base_version"].is_i64() && c["lane_version"].is_i64(), "{conflict}");
    // What to reconcile with: the base's edit and the merge base.
    let activity = app.agent_ok(&ta, "project_activity", json!({}));
    let m = &activity["merging"][0];
    assert_eq!(
        (m["base"]["content"].as_str(), m["mergeBase"]["content"].as_str()),
        (Some("one\nTWO\nthree\nfour\nfive"), Some(FIVE))
    );
    assert_eq!(lane_read(&app, &t, &a, "app.txt", "merge_base"), Ok(FIVE.into()));
    assert_eq!(base_read(&app, &t, "app.txt"), "one\nTWO\nthree\nfour\nfive", "nothing landed");
    assert_eq!(
        app.err_code(&t.ada.key, "read_task_file", json!({"task_id": t.task, "path": "other.txt"})),
        "not_found"
    );
    assert_eq!(app.agent_ok(&ta, "land", json!({"summary": "delete"}))["conflicts"][0]["kind"], "deleted_in_lane");

    // Deleting it again is the lane's reconciled side: the delete lands.
    assert_eq!(lane_delete(&app, &t, &a, "app.txt", "d2")["deleted"], true);
    assert_eq!(app.agent_ok(&ta, "project_activity", json!({}))["merging"], json!([]));
    let landed = app.agent_ok(&ta, "land", json!({"summary": "delete"}));
    assert_eq!(landed["landed"], true, "{landed}");
    assert_eq!(base_paths(&app, &t), [".agentsky/project.json", "other.txt"]);
    assert_eq!(me(&app, &ta)["behind"], 0);
}

#[test]
fn an_edit_against_a_base_delete_conflicts_and_writing_the_file_keeps_it() {
    let app = TestApp::new();
    let t = task(&app);
    checks_known(&app, &t);
    base_write(&app, &t, "app.txt", FIVE);
    let (a, ta) = join(&app, &t, "deleter");
    let (b, tb) = join(&app, &t, "editor");
    checker(&app, &t.ada.key, 0);
    lane_delete(&app, &t, &a, "app.txt", "d1");
    lane_write(&app, &t, &b, "app.txt", "one\ntwo\nthree\nfour\nFIVE");
    assert_eq!(app.agent_ok(&ta, "land", json!({"summary": "delete"}))["landed"], true);
    assert_eq!(me(&app, &tb)["behind"], 1);

    let conflict = app.agent_ok(&tb, "land", json!({"summary": "edit"}));
    assert_eq!(conflict["landed"], false, "{conflict}");
    assert_eq!(conflict["conflicts"][0]["kind"], "deleted_in_base", "{conflict}");
    // The base has no version to read; the merge base has.
    assert_eq!(lane_read(&app, &t, &b, "app.txt", "base"), Err("not_found".into()));
    assert_eq!(lane_read(&app, &t, &b, "app.txt", "merge_base"), Ok(FIVE.into()));
    assert_eq!(lane_read(&app, &t, &b, "app.txt", "lane"), Ok("one\ntwo\nthree\nfour\nFIVE".into()));
    let m = app.agent_ok(&tb, "project_activity", json!({}))["merging"][0].clone();
    assert_eq!((m["file"].clone(), m["base"].clone()), (json!("app.txt"), Value::Null), "{m}");

    // Writing its own text again keeps the lane's side: the file comes back to the base.
    lane_write_again(&app, &t, &b, "app.txt", "one\ntwo\nthree\nfour\nFIVE");
    let landed = app.agent_ok(&tb, "land", json!({"summary": "edit"}));
    assert_eq!(landed["landed"], true, "{landed}");
    assert_eq!(base_read(&app, &t, "app.txt"), "one\ntwo\nthree\nfour\nFIVE");
}

#[test]
fn a_base_delete_reaches_a_lane_that_left_the_file_alone() {
    let app = TestApp::new();
    let t = task(&app);
    checks_known(&app, &t);
    base_write(&app, &t, "gone.txt", "x");
    let (a, ta) = join(&app, &t, "deleter");
    let (b, tb) = join(&app, &t, "bystander");
    let fetched = checker(&app, &t.ada.key, 0);
    lane_delete(&app, &t, &a, "gone.txt", "d1");
    // The other lane holds its own copy of the file, unchanged (as a runner's upload of the same text does).
    lane_write(&app, &t, &b, "gone.txt", "x");
    lane_write(&app, &t, &b, "new.txt", "new");
    assert_eq!(app.agent_ok(&ta, "land", json!({"summary": "delete"}))["landed"], true);
    // Until it merges, the lane holds a file the base no longer has.
    assert_eq!(me(&app, &tb)["files"], json!(["gone.txt", "new.txt"]));

    let landed = app.agent_ok(&tb, "land", json!({"summary": "new"}));
    assert_eq!(landed["landed"], true, "{landed}");
    assert!(landed["steps"].to_string().contains("merged gone.txt"), "{landed}");
    assert_eq!(file_of(&fetched.borrow()[1], "gone.txt"), None, "the checks ran without the deleted file");
    assert_eq!(base_paths(&app, &t), [".agentsky/project.json", "new.txt"]);
    assert!(!lane_paths(&app, &t, &b).contains(&"gone.txt".to_owned()));
}

#[test]
fn a_rename_is_a_delete_plus_an_add_and_lands_beside_an_edit_elsewhere() {
    let app = TestApp::new();
    let t = task(&app);
    checks_known(&app, &t);
    base_write(&app, &t, "notes.md", "notes\n");
    base_write(&app, &t, "app.txt", FIVE);
    let (a, ta) = join(&app, &t, "renamer");
    let (b, tb) = join(&app, &t, "editor");
    checker(&app, &t.ada.key, 0);
    // a renames notes.md to docs/notes.md; b edits app.txt.
    lane_write(&app, &t, &a, "docs/notes.md", "notes\n");
    lane_delete(&app, &t, &a, "notes.md", "d1");
    lane_write(&app, &t, &b, "app.txt", "ONE\ntwo\nthree\nfour\nfive");
    assert_eq!(me(&app, &ta)["files"], json!(["docs/notes.md", "notes.md"]));
    assert_eq!(app.agent_ok(&tb, "land", json!({"summary": "edit"}))["landed"], true);
    let landed = app.agent_ok(&ta, "land", json!({"summary": "Move notes into docs/"}));
    assert_eq!(landed["landed"], true, "{landed}");
    assert_eq!(base_paths(&app, &t), [".agentsky/project.json", "app.txt", "docs/notes.md"]);
    assert_eq!(base_read(&app, &t, "docs/notes.md"), "notes\n");
    assert_eq!(base_read(&app, &t, "app.txt"), "ONE\ntwo\nthree\nfour\nfive");
    // A lane that created and deleted its own file leaves nothing to land.
    lane_write(&app, &t, &a, "scratch.txt", "tmp");
    lane_delete(&app, &t, &a, "scratch.txt", "d2");
    assert_eq!(me(&app, &ta)["files"], json!([]));
    let nothing = app.agent_ok(&ta, "land", json!({"summary": "nothing"}));
    assert!(nothing["reason"].as_str().unwrap().contains("nothing to land"), "{nothing}");
}

#[test]
fn without_lanes_a_delete_is_a_commit_of_the_base_at_once() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent_id = app.create_agent(&ada.key, json!({"name": "Dev", "harness": "echo", "model": "m"}));
    let s = app.ok(&ada.key, "start_session", json!({"agent_id": agent_id, "message": "hi", "idempotency_key": "s0"}));
    app.settle();
    let sid = s["session"]["session_id"].as_str().unwrap().to_owned();
    app.ok(&ada.key, "set_task_settings", json!({"task_id": sid, "lanes": false}));
    let t = Task { ada, agent_id, task: sid.clone() };
    base_write(&app, &t, "a.txt", "a");
    base_write(&app, &t, "b.txt", "b");
    let commits = || -> i64 {
        app.db.0.query_row("SELECT COUNT(*) FROM task_commit WHERE task_id = ?1", [&t.task], |r| r.get(0)).unwrap()
    };
    let before = commits();
    assert_eq!(lane_delete(&app, &t, &sid, "a.txt", "d1")["deleted"], true);
    assert_eq!(base_paths(&app, &t), ["b.txt"]);
    assert_eq!(commits(), before + 1, "a delete in the base is a commit of its history");
    let subject: String = app
        .db
        .0
        .query_row("SELECT subject FROM task_commit WHERE task_id = ?1 ORDER BY seq DESC LIMIT 1", [&t.task], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(subject, format!("{sid} deleted a.txt"));
    // Deleting what is not there says so, naming the file; writing it again brings it back.
    let missing = lane_delete(&app, &t, &sid, "a.txt", "d2");
    assert!(missing["error"].as_str().unwrap().contains("no file `a.txt` in this task to delete"), "{missing}");
    lane_write(&app, &t, &sid, "a.txt", "again");
    assert_eq!(base_read(&app, &t, "a.txt"), "again");
    // collect_result lists what the session wrote and still holds.
    lane_delete(&app, &t, &sid, "a.txt", "d3");
    let result = app.ok(&t.ada.key, "collect_result", json!({"session_id": sid}));
    assert_eq!(result["files"], json!([]), "{result}");
}

/// Registers a runner of the workspace and has it call once, so it counts as online; its token.
fn online_runner(app: &TestApp, key: &str, name: &str) -> String {
    let r = app.request("POST", "/v1/runners", Some(key), Some(json!({"name": name})));
    let token = r.json_body()["token"].as_str().unwrap().to_owned();
    assert_eq!(app.send(runner_request(&token, "POST", "/v1/runner/claim", json!({}))).status, 204);
    token
}

async fn runner_call(s: &HostSessions, token: &str, method: &str, path: &str, body: Value) -> (u16, Value) {
    let r = s.handle(runner_request(token, method, path, body)).await;
    (r.status, r.json_body())
}

/// The flaky `land` of issue 17: a runner gone without answering (killed while its claim was still
/// waiting on the server, which then leased it the checkout) left the checks to lapse, and `land` gave
/// up on them. Its lapsed checkout is run by the next runner; the gone runner's late calls are refused.
#[test]
fn checks_whose_runner_went_away_are_run_again_by_the_next_runner() {
    let app = TestApp::new();
    let t = task(&app);
    checks_known(&app, &t);
    let (a, ta) = join(&app, &t, "first");
    lane_write(&app, &t, &a, "app.txt", "x");
    let gone = online_runner(&app, &t.ada.key, "gone");
    let next = online_runner(&app, &t.ada.key, "next");
    let seen = Rc::new(RefCell::new(Vec::<String>::new()));
    let log = seen.clone();
    *app.sessions.on_wait.borrow_mut() = Some(Rc::new(move |s: HostSessions, key: String| {
        let (gone, next, log) = (gone.clone(), next.clone(), log.clone());
        Box::pin(async move {
            if !key.starts_with("job:") {
                return;
            }
            let round = log.borrow().len();
            let claim = |token: String| {
                let s = s.clone();
                async move { runner_call(&s, &token, "POST", "/v1/runner/claim", json!({})).await }
            };
            if round == 0 {
                // The gone runner's claim takes the checkout; nobody answers; its lease lapses.
                let (status, c) = claim(gone.clone()).await;
                assert_eq!(status, 200, "{c}");
                log.borrow_mut().push(c["checkout"]["lease_id"].as_str().unwrap().to_owned());
                s.advance(agentsky::runner::LEASE_MS + 1_000);
                return;
            }
            if round > 1 {
                return;
            }
            let (status, c) = claim(next.clone()).await;
            assert_eq!(status, 200, "the lapsed checkout is claimable again: {c}");
            let c = c["checkout"].clone();
            let lease = c["lease_id"].as_str().unwrap().to_owned();
            log.borrow_mut().push(lease.clone());
            // The gone runner, back too late: the checkout was taken over, its calls are refused.
            let old = log.borrow()[0].clone();
            let (status, _) = runner_call(&s, &gone, "POST", "/v1/runner/heartbeat", json!({"lease_id": old})).await;
            assert_eq!(status, 409);
            let late = json!({"lease_id": old, "job_id": c["job_id"], "result": {"exit_code": 1, "timed_out": false, "output": "stale"}});
            let (status, _) = runner_call(&s, &gone, "POST", "/v1/runner/jobs/result", late).await;
            assert_ne!(status, 200, "a result from a runner that lost the checkout is not taken");
            let done = json!({"lease_id": lease, "job_id": c["job_id"], "result": {"exit_code": 0, "timed_out": false, "output": "ok"}});
            let (status, body) = runner_call(&s, &next, "POST", "/v1/runner/jobs/result", done).await;
            assert_eq!(status, 200, "{body}");
        })
    }));
    let landed = app.agent_ok(&ta, "land", json!({"summary": "x"}));
    assert_eq!(landed["landed"], true, "{landed}");
    assert!(landed["steps"].to_string().contains("passed (exit 0) on another runner"), "{landed}");
    assert_eq!(seen.borrow().len(), 2, "two runners took it in turn");
    let attempts: i64 = app.db.0.query_row("SELECT attempts FROM runner_checkout", [], |r| r.get(0)).unwrap();
    assert_eq!(attempts, 2);
}

/// A runner whose renewal comes after its lease lapsed (a loaded machine), while no other runner took
/// the checkout, keeps it: the renewal and its result count.
#[test]
fn a_late_renewal_keeps_a_checkout_nobody_took_over() {
    let app = TestApp::new();
    let t = task(&app);
    checks_known(&app, &t);
    let (a, ta) = join(&app, &t, "first");
    lane_write(&app, &t, &a, "app.txt", "x");
    let slow = online_runner(&app, &t.ada.key, "slow");
    *app.sessions.on_wait.borrow_mut() = Some(Rc::new(move |s: HostSessions, key: String| {
        let slow = slow.clone();
        Box::pin(async move {
            if !key.starts_with("job:") {
                return;
            }
            let (status, c) = runner_call(&s, &slow, "POST", "/v1/runner/claim", json!({})).await;
            if status != 200 {
                return;
            }
            let c = c["checkout"].clone();
            let lease = c["lease_id"].as_str().unwrap().to_owned();
            s.advance(agentsky::runner::LEASE_MS + 5_000);
            let (status, body) =
                runner_call(&s, &slow, "POST", "/v1/runner/heartbeat", json!({"lease_id": lease})).await;
            assert_eq!(status, 200, "a late renewal of a lease nobody took: {body}");
            let (status, _) =
                runner_call(&s, &slow, "GET", &format!("/v1/runner/files?lease_id={lease}"), json!({})).await;
            assert_eq!(status, 200);
            s.advance(agentsky::runner::LEASE_MS + 5_000);
            let done = json!({"lease_id": lease, "job_id": c["job_id"], "result": {"exit_code": 0, "timed_out": false, "output": "ok"}});
            let (status, body) = runner_call(&s, &slow, "POST", "/v1/runner/jobs/result", done).await;
            assert_eq!(status, 200, "the result of the runner still holding the checkout: {body}");
        })
    }));
    let landed = app.agent_ok(&ta, "land", json!({"summary": "x"}));
    assert_eq!(landed["landed"], true, "{landed}");
}

/// Runners that keep going away: the checkout is given up after three, and `land` says why.
#[test]
fn a_checkout_whose_runners_keep_going_away_is_given_up_clearly() {
    let app = TestApp::new();
    let t = task(&app);
    checks_known(&app, &t);
    let (a, ta) = join(&app, &t, "first");
    lane_write(&app, &t, &a, "app.txt", "x");
    let flaky = online_runner(&app, &t.ada.key, "flaky");
    *app.sessions.on_wait.borrow_mut() = Some(Rc::new(move |s: HostSessions, key: String| {
        let flaky = flaky.clone();
        Box::pin(async move {
            if key.starts_with("job:") {
                runner_call(&s, &flaky, "POST", "/v1/runner/claim", json!({})).await;
                s.advance(agentsky::runner::LEASE_MS + 1_000);
            }
        })
    }));
    let refused = app.agent_ok(&ta, "land", json!({"summary": "x"}));
    assert_eq!(refused["landed"], false, "{refused}");
    let reason = refused["reason"].as_str().unwrap();
    assert!(reason.contains("the runners that took the checkout went away 3 times"), "{refused}");
    assert_eq!(app.err_code(&t.ada.key, "read_task_file", json!({"task_id": t.task, "path": "app.txt"})), "not_found");
}

/// A first landing works in three calls within one minute, beside the agent's own access requests: `land`
/// asks for the checks (spending no access request), `remember_command checks` answers it (a question's
/// bucket, from any session of the task once one was asked), and `land` lands. With no runner online, the
/// ask says what would run the checks.
#[test]
fn a_first_landing_asks_for_the_checks_is_taught_and_lands_in_three_calls() {
    let app = TestApp::with_secrets();
    *app.sessions.sandboxes.unavailable.borrow_mut() = Some("no container runtime".into());
    let t = task(&app);
    let (a, ta) = join(&app, &t, "first");
    let (_, tb) = join(&app, &t, "second");
    lane_write(&app, &t, &a, "app.txt", "hello");
    let refused = app.agent_err(&tb, "remember_command", json!({"kind": "checks", "command": "make check"}));
    assert!(refused.contains("did not ask"), "before any land asked: {refused}");

    // No runner online: the ask names what runs the checks.
    let asked = app.agent_ok(&ta, "land", json!({"summary": "x"}));
    let reason = asked["reason"].as_str().unwrap();
    assert!(reason.starts_with("no checks are known") && reason.contains("sky runner --server"), "{asked}");

    let fetched = checker(&app, &t.ada.key, 0);
    let started = app.now_ms.get();
    let asked = app.agent_ok(&ta, "land", json!({"summary": "x"}));
    assert!(!asked["reason"].as_str().unwrap().contains("sky runner --server"), "a runner is online now: {asked}");
    // Another session of the task teaches the checks `land` asked this one for.
    assert_eq!(app.agent_ok(&tb, "remember_command", json!({"kind": "checks", "command": "make check"}))["ok"], true);
    let landed = app.agent_ok(&ta, "land", json!({"summary": "Say hello"}));
    assert_eq!(landed["landed"], true, "{landed}");
    assert_eq!(fetched.borrow()[0]["command"], "make check");
    assert_eq!(base_read(&app, &t, "app.txt"), "hello");
    // The same minute still holds four of the five access requests for the agent's provider CLIs.
    app.request(
        "POST",
        "/v1/connectors",
        Some(&t.ada.key),
        Some(json!({"name": "web", "provider": "vercel", "env": "prod"})),
    );
    for n in 0..4 {
        let r = app.agent_call(&ta, "request_access", json!({"target": "web", "scope": ["read"], "reason": "r"}));
        assert!(!r.to_string().contains("-32003"), "access request {n} waited: {r}");
    }
    assert_eq!(app.now_ms.get(), started, "no waiting: the clock never moved");
}

/// The operator reads a task's folder as one of its sessions sees it (`session_id`): the lane's work before
/// it lands; without it, the base. Only a session of that task, and of the caller's workspaces.
#[test]
fn the_operator_reads_a_lane_through_its_session_before_it_lands() {
    let app = TestApp::new();
    let t = task(&app);
    let (a, _) = join(&app, &t, "first");
    lane_write(&app, &t, &a, "notes/hello.md", "Hello, lane!");
    let args = json!({"task_id": t.task, "path": "notes/hello.md", "session_id": a});
    assert_eq!(app.ok(&t.ada.key, "read_task_file", args)["content"], "Hello, lane!");
    let base = json!({"task_id": t.task, "path": "notes/hello.md"});
    assert_eq!(app.err_code(&t.ada.key, "read_task_file", base), "not_found", "not in the base yet");
    let listed = app.ok(&t.ada.key, "list_task_files", json!({"task_id": t.task, "session_id": a}));
    assert_eq!(listed["files"][0]["path"], "notes/hello.md");
    assert_eq!(app.ok(&t.ada.key, "list_task_files", json!({"task_id": t.task}))["files"], json!([]));
    // Another task's session, and another account, read nothing through it.
    let other = app.ok(
        &t.ada.key,
        "start_session",
        json!({"agent_id": t.agent_id, "message": "elsewhere", "idempotency_key": "other"}),
    );
    let other = other["session"]["session_id"].as_str().unwrap();
    let wrong = json!({"task_id": t.task, "path": "notes/hello.md", "session_id": other});
    assert_eq!(app.err_code(&t.ada.key, "read_task_file", wrong), "invalid_params");
    let bo = app.signup("Bo", "bo@example.com");
    let theirs = json!({"task_id": t.task, "path": "notes/hello.md", "session_id": a});
    assert_eq!(app.err_code(&bo.key, "read_task_file", theirs), "not_found");
}

/// The Run locally button of a session no runner is running: its task's run command runs on any runner of
/// the workspace, in a fresh checkout; with none online, the answer says how to start one.
#[test]
fn a_run_command_runs_on_any_runner_when_none_holds_the_session() {
    let app = TestApp::new();
    let t = task(&app);
    let (a, _) = join(&app, &t, "first");
    base_write(&app, &t, ".agentsky/project.json", &json!({"dev": {"command": "npm run dev"}}).to_string());
    let alone = app.ok(&t.ada.key, "run_command", json!({"session_id": a, "kind": "run"}));
    assert_eq!(alone["exit_code"], Value::Null);
    assert!(alone["reason"].as_str().unwrap().contains("sky runner --server"), "{alone}");
    let fetched = checker(&app, &t.ada.key, 0);
    let ran = app.ok(&t.ada.key, "run_command", json!({"session_id": a, "kind": "run"}));
    assert_eq!((ran["exit_code"].as_i64(), ran["output"].as_str()), (Some(0), Some("ok")), "{ran}");
    assert_eq!(fetched.borrow()[0]["command"], "npm run dev");
}

/// Issue 36: a new task gives each session its own lane, so `land` works on the first try; a task keeps
/// whatever it was set to.
#[test]
fn a_new_task_gives_each_session_its_own_lane_and_keeps_what_it_is_set_to() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let (_, sid) = app.echo_session(&ada.key, "/write a.txt one");
    let task = app.ok(&ada.key, "get_task", json!({"task_id": sid}));
    assert_eq!(task["settings"]["lanes"], true, "{task}");
    assert_eq!(task["lanes"][0]["changed"], json!(["a.txt"]), "the write waits in the lane: {task}");
    // A person publishes the lane's file as the session sees it; from the base it is not there yet.
    let from_base = app.call(&ada.key, "publish_artifact", json!({"task_id": sid, "path": "a.txt"}));
    assert!(TestApp::tool_error(&from_base)["message"].as_str().unwrap().contains("in the lane of session"));
    let published = app.ok(&ada.key, "publish_artifact", json!({"task_id": sid, "path": "a.txt", "session_id": sid}));
    assert_eq!(published["path"], "a.txt");
    app.ok(&ada.key, "set_task_settings", json!({"task_id": sid, "lanes": false}));
    app.ok(
        &ada.key,
        "send_message",
        json!({"session_id": sid, "message": "/write b.txt two", "idempotency_key": "m1"}),
    );
    app.settle();
    let base = app.ok(&ada.key, "list_task_files", json!({"task_id": sid}));
    let paths: Vec<&str> = base["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["b.txt"], "lanes off: writes go to the base at once");
    assert_eq!(app.ok(&ada.key, "get_task", json!({"task_id": sid}))["settings"]["lanes"], false);
}
