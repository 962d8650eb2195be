//! Routines: the cron trigger records each fire once, the consumer does its work once however often it is
//! delivered, missed minutes collapse into one fire, and failures are recorded.

use crate::support::{Account, TestApp};
use serde_json::{json, Value};

fn echo(app: &TestApp, who: &Account) -> String {
    let r = app.request(
        "POST",
        "/v1/agents",
        Some(&who.key),
        Some(json!({"name": "Daily", "harness": "echo", "model": "m"})),
    );
    r.json_body()["agent_id"].as_str().unwrap().to_owned()
}

fn sessions(app: &TestApp) -> i64 {
    app.db.0.query_row("SELECT COUNT(*) FROM session", [], |r| r.get(0)).unwrap()
}

fn fires(app: &TestApp, who: &Account) -> Vec<Value> {
    let list = app.ok(&who.key, "list_routines", json!({}));
    list["routines"][0]["recent_fires"].as_array().unwrap().clone()
}

#[test]
fn a_cron_routine_fires_once_per_time_and_its_session_replies() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent = echo(&app, &ada);
    let r = app.ok(
        &ada.key,
        "create_routine",
        json!({"name": "standup", "agent_id": agent, "message": "daily standup", "cron": "*/5 * * * *"}),
    );
    let next = r["next_fire_ms"].as_i64().unwrap();
    assert!(next > app.now_ms.get() && next % 300_000 == 0, "the next 5-minute mark");
    assert_eq!(app.cron(), 0, "nothing is due yet");
    app.now_ms.set(next + 10_000);
    assert_eq!(app.cron(), 1);
    assert_eq!(app.cron(), 0, "the same minute triggered again fires nothing");
    let queued = app.queue.0.borrow().clone();
    let delivered = app.deliver();
    assert_eq!(delivered.len(), 1);
    // The queue delivers at least once: the same message again does no second start.
    app.queue.0.borrow_mut().extend(queued);
    app.deliver();
    assert_eq!(sessions(&app), 1);
    app.settle();
    let f = fires(&app, &ada);
    assert_eq!(
        (f[0]["status"].as_str(), f[0]["trigger"].as_str(), f[0]["scheduled_ms"].as_i64()),
        (Some("done"), Some("cron"), Some(next))
    );
    let sid = f[0]["session_id"].as_str().unwrap();
    assert_eq!(app.ok(&ada.key, "collect_result", json!({"session_id": sid}))["last_reply"], "echo: daily standup");
    assert_eq!(f[0]["spent_cents"], 0);
}

#[test]
fn after_downtime_a_routine_fires_once_for_what_it_missed() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent = echo(&app, &ada);
    let r = app.ok(
        &ada.key,
        "create_routine",
        json!({"name": "r", "agent_id": agent, "message": "m", "cron": "* * * * *"}),
    );
    app.now_ms.set(r["next_fire_ms"].as_i64().unwrap() + 3_600_000 + 5_000);
    assert_eq!(app.cron(), 1, "one fire, not sixty");
    app.deliver();
    let f = fires(&app, &ada);
    assert_eq!(f.len(), 1);
    let scheduled = f[0]["scheduled_ms"].as_i64().unwrap();
    assert_eq!(scheduled, (app.now_ms.get() / 60_000) * 60_000, "it stands for the latest missed minute");
    assert!(
        app.ok(&ada.key, "list_routines", json!({}))["routines"][0]["next_fire_ms"].as_i64().unwrap()
            > app.now_ms.get()
    );
}

#[test]
fn run_routine_fires_now_once_per_key() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent = echo(&app, &ada);
    let r = app.ok(&ada.key, "create_routine", json!({"name": "by hand", "agent_id": agent, "message": "go"}));
    assert!(r["next_fire_ms"].is_null() && r["cron"].is_null());
    let args = json!({"routine_id": r["routine_id"], "idempotency_key": "run-1"});
    let fire = app.ok(&ada.key, "run_routine", args.clone());
    assert_eq!((fire["status"].as_str(), fire["trigger"].as_str()), (Some("done"), Some("manual")));
    assert_eq!(app.ok(&ada.key, "run_routine", args), fire);
    assert_eq!(sessions(&app), 1);
    assert_eq!(app.cron(), 0, "a routine without cron never fires by itself");
    app.ok(&ada.key, "run_routine", json!({"routine_id": r["routine_id"], "idempotency_key": "run-2"}));
    assert_eq!(sessions(&app), 2);
}

#[test]
fn a_routine_can_message_an_existing_session() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent = echo(&app, &ada);
    let s = app.ok(&ada.key, "start_session", json!({"agent_id": agent, "message": "hello", "idempotency_key": "k"}));
    let sid = s["session"]["session_id"].as_str().unwrap();
    app.settle();
    let r = app.ok(&ada.key, "create_routine", json!({"name": "nudge", "session_id": sid, "message": "any news?"}));
    let fire = app.ok(&ada.key, "run_routine", json!({"routine_id": r["routine_id"], "idempotency_key": "n1"}));
    assert_eq!(fire["session_id"], sid);
    app.settle();
    assert_eq!(app.ok(&ada.key, "collect_result", json!({"session_id": sid}))["last_reply"], "echo: any news?");
    let events = app.ok(&ada.key, "read_session", json!({"session_id": sid, "message_id": fire["message_id"]}));
    assert_eq!(events["events"][0]["from"]["routine"]["routine_id"], r["routine_id"]);
}

#[test]
fn failures_are_recorded_never_lost() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent = echo(&app, &ada);
    let r = app.ok(
        &ada.key,
        "create_routine",
        json!({"name": "r", "agent_id": agent, "message": "m", "cron": "0 * * * *"}),
    );
    app.request("DELETE", &format!("/v1/agents/{agent}"), Some(&ada.key), None);
    app.now_ms.set(r["next_fire_ms"].as_i64().unwrap());
    app.cron();
    app.deliver();
    let f = fires(&app, &ada);
    assert_eq!(f[0]["status"], "failed");
    assert!(f[0]["error"].as_str().unwrap().contains("not found"));
    // A fire the queue gave up on (the dead-letter consumer) is failed too.
    app.now_ms.set(app.now_ms.get() + 3_600_000);
    app.cron();
    let id = app.queue.0.borrow_mut().pop().unwrap()["fire_id"].as_str().unwrap().to_owned();
    app.system(|cx| Box::pin(async move { agentsky::ops::routines::give_up(cx, &id).await })).unwrap();
    assert_eq!(fires(&app, &ada)[0]["status"], "failed");
}

#[test]
fn bad_schedules_name_their_field() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent = echo(&app, &ada);
    for (extra, field) in [
        (json!({"cron": "0 9 * *"}), "`cron`"),
        (json!({"cron": "0 9 * * *", "timezone": "Nowhere/Land"}), "`timezone`"),
        (json!({"timezone": "Nowhere/Land"}), "`timezone`"),
    ] {
        let mut args = json!({"name": "r", "agent_id": agent, "message": "m"});
        args.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let result = app.call(&ada.key, "create_routine", args);
        assert_eq!(TestApp::tool_error(&result)["code"], "invalid_params");
        assert!(TestApp::tool_error(&result)["message"].as_str().unwrap().contains(field), "{result}");
    }
    let both = json!({"name": "r", "agent_id": agent, "session_id": "ses_00000000000000000000000000", "message": "m"});
    assert_eq!(app.err_code(&ada.key, "create_routine", both), "invalid_params");
}

#[test]
fn pause_and_resume_are_tools_of_their_own() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent = echo(&app, &ada);
    let r = app.ok(
        &ada.key,
        "create_routine",
        json!({"name": "hourly", "agent_id": agent, "message": "m", "cron": "0 * * * *"}),
    );
    let id = r["routine_id"].clone();
    let paused = app.ok(&ada.key, "pause_routine", json!({"routine_id": id}));
    assert_eq!((paused["enabled"].as_bool(), paused["next_fire_ms"].is_null()), (Some(false), true));
    app.now_ms.set(r["next_fire_ms"].as_i64().unwrap() + 3 * 3_600_000);
    assert_eq!(app.cron(), 0, "a paused routine does not fire");
    let resumed = app.ok(&ada.key, "resume_routine", json!({"routine_id": id}));
    assert_eq!(resumed["enabled"], true);
    assert!(resumed["next_fire_ms"].as_i64().unwrap() > app.now_ms.get(), "never for the hours it missed");
    assert_eq!(resumed["message"], "m", "nothing else changes");
    let bo = app.signup("Bo", "bo@example.com");
    assert_eq!(app.err_code(&bo.key, "pause_routine", json!({"routine_id": id})), "not_found");
    assert_eq!(app.err_code(&bo.key, "resume_routine", json!({"routine_id": id})), "not_found");
}

#[test]
fn a_routine_is_paused_resumed_changed_and_deleted() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent = echo(&app, &ada);
    let r = app.ok(
        &ada.key,
        "create_routine",
        json!({"name": "hourly", "agent_id": agent, "message": "m", "cron": "0 * * * *"}),
    );
    let id = r["routine_id"].clone();
    let paused = app.ok(&ada.key, "update_routine", json!({"routine_id": id, "enabled": false}));
    assert_eq!(paused["enabled"], false);
    app.now_ms.set(r["next_fire_ms"].as_i64().unwrap() + 7_200_000 + 1_000);
    assert_eq!(app.cron(), 0, "a paused routine does not fire");
    let resumed = app.ok(&ada.key, "update_routine", json!({"routine_id": id, "enabled": true}));
    let next = resumed["next_fire_ms"].as_i64().unwrap();
    assert!(next > app.now_ms.get(), "resuming never fires for the hours it missed");
    assert_eq!(app.cron(), 0);
    let changed = app.ok(
        &ada.key,
        "update_routine",
        json!({"routine_id": id, "cron": "30 9 * * *", "timezone": "Europe/Berlin", "message": "standup", "budget_cents": 50}),
    );
    assert_eq!(
        (
            changed["cron"].as_str(),
            changed["timezone"].as_str(),
            changed["message"].as_str(),
            changed["budget_cents"].as_i64()
        ),
        (Some("30 9 * * *"), Some("Europe/Berlin"), Some("standup"), Some(50))
    );
    assert_eq!(changed["name"], "hourly", "fields left out keep their value");
    assert!(changed["next_fire_ms"].as_i64().unwrap() > app.now_ms.get());
    let manual = app.ok(&ada.key, "update_routine", json!({"routine_id": id, "cron": "", "budget_cents": 0}));
    assert!(manual["cron"].is_null() && manual["next_fire_ms"].is_null() && manual["budget_cents"].is_null());
    for bad in [
        json!({"cron": "61 * * * *"}),
        json!({"timezone": "Mars/Olympus"}),
        json!({"name": ""}),
        json!({"budget_cents": -3}),
    ] {
        let mut args = bad.clone();
        args["routine_id"] = id.clone();
        assert_eq!(app.err_code(&ada.key, "update_routine", args), "invalid_params", "{bad}");
    }
    let bo = app.signup("Bo", "bo@example.com");
    assert_eq!(app.err_code(&bo.key, "update_routine", json!({"routine_id": id, "enabled": false})), "not_found");
    assert_eq!(app.err_code(&bo.key, "delete_routine", json!({"routine_id": id})), "not_found");
    assert_eq!(app.ok(&ada.key, "delete_routine", json!({"routine_id": id}))["deleted"], true);
    assert_eq!(app.ok(&ada.key, "list_routines", json!({}))["routines"], json!([]));
    assert_eq!(app.err_code(&ada.key, "run_routine", json!({"routine_id": id, "idempotency_key": "x"})), "not_found");
}

#[test]
fn run_routine_answers_a_failed_fire_as_an_error_with_its_reason() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent = echo(&app, &ada);
    let r = app.ok(&ada.key, "create_routine", json!({"name": "r", "agent_id": agent, "message": "m"}));
    app.request("DELETE", &format!("/v1/agents/{agent}"), Some(&ada.key), None);
    let args = json!({"routine_id": r["routine_id"], "idempotency_key": "run-1"});
    let error = TestApp::tool_error(&app.call(&ada.key, "run_routine", args.clone()));
    let f = fires(&app, &ada);
    assert_eq!((f.len(), f[0]["status"].as_str()), (1, Some("failed")));
    assert_eq!(error["code"], "not_found");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains(f[0]["fire_id"].as_str().unwrap()) && message.contains(&agent), "{message}");
    // Nothing was done, so the same key tries again (and fails again, as a second fire).
    assert_eq!(app.err_code(&ada.key, "run_routine", args), "not_found");
    assert_eq!(fires(&app, &ada).len(), 2);
    assert_eq!(sessions(&app), 0);
}

#[test]
fn next_fire_ms_is_never_in_the_past() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent = echo(&app, &ada);
    let r = app.ok(
        &ada.key,
        "create_routine",
        json!({"name": "hourly", "agent_id": agent, "message": "m", "cron": "0 * * * *"}),
    );
    let next = |app: &TestApp| {
        let listed = app.ok(&ada.key, "list_routines", json!({}))["routines"][0]["next_fire_ms"].clone();
        let described = app.ok(&ada.key, "describe_workspace", json!({}))["routines"][0]["next_fire_ms"].clone();
        assert_eq!(listed, described);
        listed.as_i64()
    };
    // The trigger has not run for three hours (a dev server without cron, an outage): the fire it owes
    // comes on its next minute, not at a time already gone.
    app.now_ms.set(r["next_fire_ms"].as_i64().unwrap() + 3 * 3_600_000 + 15_000);
    let now = app.now_ms.get();
    assert_eq!(next(&app), Some((now / 60_000 + 1) * 60_000));
    assert_eq!(app.cron(), 1, "the overdue fire still comes");
    let after = next(&app).unwrap();
    assert!(after > now && after % 3_600_000 == 0, "then the next hour: {after}");
    // Paused, it has no next fire; resumed, the next one from now.
    let paused = app.ok(&ada.key, "update_routine", json!({"routine_id": r["routine_id"], "enabled": false}));
    assert!(paused["next_fire_ms"].is_null());
    app.now_ms.set(now + 5 * 3_600_000);
    assert_eq!(next(&app), None);
    let resumed = app.ok(&ada.key, "update_routine", json!({"routine_id": r["routine_id"], "enabled": true}));
    assert!(resumed["next_fire_ms"].as_i64().unwrap() > app.now_ms.get());
}
