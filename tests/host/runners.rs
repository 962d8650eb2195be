//! The runner protocol: a runner claims a `runner` agent's turn with a lease, reports its events once
//! each, and a turn whose runner went quiet is claimed by another.

use crate::support::{runner_request, Account, TestApp};
use agentsky::http::HttpResponse;
use agentsky_wire::runner as wire;
use serde_json::{json, Value};

fn runner_call(app: &TestApp, token: &str, method: &str, path: &str, body: Value) -> HttpResponse {
    app.send(runner_request(token, method, path, body))
}

fn setup(app: &TestApp) -> (Account, String, String, Value) {
    let ada = app.signup("Ada", "ada@example.com");
    let r = app.request("POST", "/v1/runners", Some(&ada.key), Some(json!({"name": "laptop"})));
    assert_eq!(r.status, 201, "{:?}", r.json_body());
    let token = r.json_body()["token"].as_str().unwrap().to_owned();
    let agent_id = app.create_agent(
        &ada.key,
        json!({"name": "Coder", "harness": "runner", "model": "claude", "instructions": "Write code."}),
    );
    let started = app.ok(
        &ada.key,
        "start_session",
        json!({"agent_id": agent_id, "message": "add a README", "idempotency_key": "k"}),
    );
    app.settle();
    (ada, token, agent_id, started)
}

#[test]
fn a_runner_claims_a_turn_reports_it_once_and_finishes_it() {
    let app = TestApp::new();
    let (ada, token, _, started) = setup(&app);
    let sid = started["session"]["session_id"].as_str().unwrap().to_owned();
    assert_eq!(app.ok(&ada.key, "get_session", json!({"session_id": sid}))["status"], "running");
    let claim = runner_call(&app, &token, "POST", "/v1/runner/claim", json!({}));
    assert_eq!(claim.status, 200, "{:?}", claim.json_body());
    let turn = claim.json_body();
    assert_eq!((turn["session_id"].as_str(), turn["message"].as_str()), (Some(sid.as_str()), Some("add a README")));
    assert_eq!(turn["agent"]["instructions"], "Write code.");
    assert!(turn["session_token"].as_str().unwrap().starts_with("sst_"));
    // What the runner reads it as: the wire crate's turn.
    let wire::Claimed::Turn(assigned) = serde_json::from_value(turn.clone()).unwrap() else { panic!("a turn") };
    let said = assigned.history.last().map(|h| (h.role, h.text.as_str()));
    assert_eq!((assigned.agent_name(), assigned.attempt, said), ("Coder", 1, Some((wire::Role::User, "add a README"))));
    assert_eq!(runner_call(&app, &token, "POST", "/v1/runner/claim", json!({})).status, 204, "nothing else waits");

    let lease = turn["lease_id"].as_str().unwrap();
    let w = runner_call(
        &app,
        &token,
        "PUT",
        "/v1/runner/files",
        json!({"lease_id": lease, "path": "README.md", "content": "# Hi"}),
    );
    assert_eq!(w.status, 200, "{:?}", w.json_body());
    let files = runner_call(&app, &token, "GET", &format!("/v1/runner/files?lease_id={lease}"), json!({})).json_body();
    assert_eq!(files["files"][0]["content"], "# Hi");
    let events = json!({"lease_id": lease, "events": [
        {"key": "e1", "type": "status", "text": "writing"},
        {"key": "e2", "type": "agent_message", "text": "Added README.md"}
    ]});
    assert_eq!(runner_call(&app, &token, "POST", "/v1/runner/events", events.clone()).json_body()["accepted"], 2);
    // A retried post adds nothing.
    runner_call(&app, &token, "POST", "/v1/runner/events", events);
    let hb = runner_call(&app, &token, "POST", "/v1/runner/heartbeat", json!({"lease_id": lease})).json_body();
    assert_eq!(hb["stop"], false);
    let hb: wire::HeartbeatAnswer = serde_json::from_value(hb).unwrap();
    assert_eq!((hb.stopping, hb.lease_expires_ms > 0), (wire::Stopping::session(false), true));
    let last = wire::PostEvents {
        lease_id: lease.to_owned(),
        events: vec![],
        done: Some(wire::Done::Completed),
        checks: vec![],
        usage: None,
    };
    let done = runner_call(&app, &token, "POST", "/v1/runner/events", wire::to_value(&last));
    assert_eq!(done.status, 200);
    let answer: wire::EventsAnswer = serde_json::from_value(done.json_body()).unwrap();
    assert_eq!((answer.accepted, answer.stopping.stop), (0, false));

    let page = app.ok(
        &ada.key,
        "read_session",
        json!({"session_id": sid, "cursor": started["cursor"], "message_id": started["message_id"]}),
    );
    let texts: Vec<&str> = page["events"].as_array().unwrap().iter().filter_map(|e| e["text"].as_str()).collect();
    assert_eq!(texts, ["waiting for a runner to claim this turn", "writing", "Added README.md"]);
    assert_eq!(page["turn_finished"], true);
    assert_eq!(app.ok(&ada.key, "collect_result", json!({"session_id": sid}))["files"][0]["path"], "README.md");
    assert_eq!(
        runner_call(&app, &token, "POST", "/v1/runner/events", json!({"lease_id": lease, "events": []})).status,
        409,
        "the lease ended with the turn"
    );
    let agent_token = turn["session_token"].as_str().unwrap();
    let after = app.mcp_post("/v1/session/mcp", Some(agent_token), "203.0.113.7", "tools/list", json!({}));
    assert_eq!(after.status, 401, "the agent's session token died with its turn");
}

#[test]
fn a_dead_runners_turn_is_claimed_by_another() {
    let app = TestApp::new();
    let (ada, token, _, started) = setup(&app);
    let second = app.request("POST", "/v1/runners", Some(&ada.key), Some(json!({"name": "server"}))).json_body()
        ["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let first = runner_call(&app, &token, "POST", "/v1/runner/claim", json!({})).json_body();
    assert_eq!(runner_call(&app, &second, "POST", "/v1/runner/claim", json!({})).status, 204, "leased, not claimable");
    app.advance(31_000);
    let taken = runner_call(&app, &second, "POST", "/v1/runner/claim", json!({}));
    assert_eq!(taken.status, 200);
    let taken = taken.json_body();
    assert_eq!((taken["message_id"].clone(), taken["attempt"].as_i64()), (started["message_id"].clone(), Some(2)));
    let stale = runner_call(&app, &token, "POST", "/v1/runner/heartbeat", json!({"lease_id": first["lease_id"]}));
    assert_eq!(stale.status, 409, "the first runner must stop");
    let lease = taken["lease_id"].as_str().unwrap();
    runner_call(
        &app,
        &second,
        "POST",
        "/v1/runner/events",
        json!({"lease_id": lease, "events": [{"key": "a", "type": "agent_message", "text": "done by the second"}], "done": "completed"}),
    );
    let sid = started["session"]["session_id"].as_str().unwrap();
    assert_eq!(app.ok(&ada.key, "collect_result", json!({"session_id": sid}))["last_reply"], "done by the second");
}

#[test]
fn stopping_the_session_tells_the_runner_to_stop() {
    let app = TestApp::new();
    let (ada, token, _, started) = setup(&app);
    let turn = runner_call(&app, &token, "POST", "/v1/runner/claim", json!({})).json_body();
    app.ok(&ada.key, "stop_session", json!({"session_id": started["session"]["session_id"]}));
    let hb =
        runner_call(&app, &token, "POST", "/v1/runner/heartbeat", json!({"lease_id": turn["lease_id"]})).json_body();
    assert_eq!(hb["stop"], true);
    let late = runner_call(
        &app,
        &token,
        "POST",
        "/v1/runner/events",
        json!({"lease_id": turn["lease_id"], "events": [{"key": "x", "type": "agent_message", "text": "late"}]}),
    );
    // Dropped, and the runner turn ends with it, so it is not claimed again.
    assert_eq!((late.status, late.json_body()["accepted"].as_i64()), (200, Some(0)), "{:?}", late.json_body());
    assert_eq!(late.json_body()["stop"], true);
    app.advance(3_600_000);
    assert_eq!(runner_call(&app, &token, "POST", "/v1/runner/claim", json!({})).status, 204);
    assert_eq!(runner_call(&app, "srt_bogus", "POST", "/v1/runner/claim", json!({})).status, 401);
}

#[test]
fn a_retried_final_post_is_answered_not_refused() {
    let app = TestApp::new();
    let (_, token, _, _) = setup(&app);
    let turn = runner_call(&app, &token, "POST", "/v1/runner/claim", json!({})).json_body();
    let done = json!({"lease_id": turn["lease_id"], "events": [{"key": "k1", "type": "agent_message", "text": "ok"}], "done": "completed"});
    assert_eq!(runner_call(&app, &token, "POST", "/v1/runner/events", done.clone()).status, 200);
    assert_eq!(runner_call(&app, &token, "POST", "/v1/runner/events", done).status, 200, "the same final post again");
}

#[test]
fn a_revoked_runner_is_refused_and_its_turn_goes_to_another_at_once() {
    let app = TestApp::new();
    let (ada, token, _, started) = setup(&app);
    let second = app.request("POST", "/v1/runners", Some(&ada.key), Some(json!({"name": "server"}))).json_body();
    let turn = runner_call(&app, &token, "POST", "/v1/runner/claim", json!({})).json_body();
    let sid = started["session"]["session_id"].as_str().unwrap();

    let listed = app.request("GET", "/v1/runners", Some(&ada.key), None).json_body();
    let laptop = listed["runners"].as_array().unwrap().iter().find(|r| r["name"] == "laptop").unwrap().clone();
    assert_eq!(laptop["running_session_id"], sid);
    assert!(laptop["last_seen_ms"].is_i64());
    assert!(!listed.to_string().contains("srt_"), "no token in the list");
    let id = laptop["runner_id"].as_str().unwrap();

    // Only owners and admins revoke; another workspace does not see it.
    let bo = app.signup("Bo", "bo@example.com");
    assert_eq!(app.request("DELETE", &format!("/v1/runners/{id}"), Some(&bo.key), None).status, 404);
    let gone = app.request("DELETE", &format!("/v1/runners/{id}"), Some(&ada.key), None);
    assert_eq!(gone.json_body(), json!({"runner_id": id, "revoked": true}));
    assert_eq!(runner_call(&app, &token, "POST", "/v1/runner/claim", json!({})).status, 401);
    let agent_token = turn["session_token"].as_str().unwrap();
    let after = app.mcp_post("/v1/session/mcp", Some(agent_token), "203.0.113.7", "tools/list", json!({}));
    assert_eq!(after.status, 401, "the agent's token for that turn died with it");
    let again = runner_call(&app, second["token"].as_str().unwrap(), "POST", "/v1/runner/claim", json!({}));
    assert_eq!(again.status, 200, "claimable at once, not after the lease");
    assert_eq!(again.json_body()["attempt"], 2);
    assert_eq!(app.request("DELETE", &format!("/v1/runners/{id}"), Some(&ada.key), None).status, 404);
}

/// Claude Code and Codex agents are created like any agent and their turns go to the workspace's runners,
/// which are told the harness, the session's model and thinking, and where the help server is.
#[test]
fn claude_code_and_codex_agents_turns_are_claimed_by_runners_with_their_harness() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let r = app.request("POST", "/v1/runners", Some(&ada.key), Some(json!({"name": "laptop"})));
    let token = r.json_body()["token"].as_str().unwrap().to_owned();
    for (harness, model, approval) in
        [("claude-code", "claude-sonnet-4-5", None), ("codex", "gpt-5-codex", Some("every_change"))]
    {
        let mut create = json!({"name": harness, "harness": harness, "model": model});
        if let Some(a) = approval {
            create["tool_approval"] = json!(a);
        }
        let agent = app.ok(&ada.key, "create_agent", create);
        assert_eq!(agent["harness"], harness);
        assert_eq!(agent["tool_approval"], approval.unwrap_or("outside_folder"), "the default asks outside the folder");
        let started = app.ok(
            &ada.key,
            "start_session",
            json!({"agent_id": agent["agent_id"], "message": "fix it", "idempotency_key": harness}),
        );
        let sid = started["session"]["session_id"].as_str().unwrap().to_owned();
        app.ok(&ada.key, "switch_model", json!({"session_id": sid, "thinking": "high"}));
        app.settle();
        let claim = runner_call(&app, &token, "POST", "/v1/runner/claim", json!({}));
        assert_eq!(claim.status, 200, "{harness}: {:?}", claim.json_body());
        let turn = claim.json_body();
        assert_eq!(turn["session_id"], sid.as_str());
        assert_eq!((turn["agent"]["harness"].as_str(), turn["agent"]["model"].as_str()), (Some(harness), Some(model)));
        assert_eq!(turn["agent"]["thinking"], "high");
        assert_eq!(turn["agent"]["tool_approval"], approval.unwrap_or("outside_folder"));
        assert!(turn["help_server"].as_str().unwrap().ends_with("/v1/help/mcp"));
    }
    let unknown = app.request(
        "POST",
        "/v1/agents",
        Some(&ada.key),
        Some(json!({"name": "x", "harness": "claude_code", "model": "m"})),
    );
    assert_eq!(unknown.status, 400);
    let said = unknown.json_body()["error"]["message"].as_str().unwrap().to_owned();
    assert!(said.contains("echo, openai, runner, claude-code, codex"), "{said}");
}

/// `tool_approval: none` lets a coding agent run any command on a runner's machine unasked: only admins
/// make such an agent or change one; a member's other changes keep the policy as it was.
#[test]
fn only_admins_let_an_agents_tools_run_without_asking() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let bo = app.signup("Bo", "bo@example.com");
    app.shared_workspace(&ada, "acme");
    app.join(&ada, "acme", &bo, "member");
    let team = "acme";
    let create = |key: &str, approval: &str| {
        app.request(
            "POST",
            "/v1/agents",
            Some(key),
            Some(json!({"workspace": team, "name": "cc", "harness": "claude-code", "model": "m", "tool_approval": approval})),
        )
    };
    let refused = create(&bo.key, "none");
    assert_eq!(refused.status, 403, "{:?}", refused.json_body());
    assert!(refused.json_body()["error"]["message"].as_str().unwrap().contains("tool_approval: none"));
    let mine = create(&bo.key, "every_change").json_body();
    assert_eq!(mine["tool_approval"], "every_change");
    let id = mine["agent_id"].as_str().unwrap();
    let patch = |key: &str, body: Value| app.request("PATCH", &format!("/v1/agents/{id}"), Some(key), Some(body));
    assert_eq!(patch(&bo.key, json!({"tool_approval": "none"})).status, 403);
    assert_eq!(patch(&ada.key, json!({"tool_approval": "none"})).json_body()["tool_approval"], "none");
    assert_eq!(patch(&bo.key, json!({"model": "m2"})).status, 403, "a member changes no unasked agent");
    let back = patch(&ada.key, json!({"model": "m2", "tool_approval": "outside_folder"})).json_body();
    assert_eq!((back["model"].as_str(), back["tool_approval"].as_str()), (Some("m2"), Some("outside_folder")));
    let bad = patch(&ada.key, json!({"tool_approval": "sometimes"}));
    assert_eq!(bad.status, 400);
    assert!(bad.json_body()["error"]["message"].as_str().unwrap().contains("outside_folder, every_change, none"));
}

/// A coding agent CLI's usage is recorded as it reports it (not charged), shown in the session's usage and
/// the agent's performance, and counted against the session's budget: a report that reaches it stops the
/// turn, the runner is told at once, and the next message is refused.
#[test]
fn a_clis_reported_usage_is_recorded_not_charged_and_its_budget_stops_the_turn() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let r = app.request("POST", "/v1/runners", Some(&ada.key), Some(json!({"name": "laptop"})));
    let token = r.json_body()["token"].as_str().unwrap().to_owned();
    let agent = app.ok(&ada.key, "create_agent", json!({"name": "cx", "harness": "codex", "model": "gpt-5-codex"}));
    let balance = || app.ok(&ada.key, "get_usage", json!({}))["balance_cents"].as_i64().unwrap();
    let before = balance();
    let started = app.ok(
        &ada.key,
        "start_session",
        json!({"agent_id": agent["agent_id"], "message": "fix it", "idempotency_key": "u", "budget_cents": 5}),
    );
    let sid = started["session"]["session_id"].as_str().unwrap().to_owned();
    app.settle();
    let turn = runner_call(&app, &token, "POST", "/v1/runner/claim", json!({})).json_body();
    let lease = turn["lease_id"].as_str().unwrap();
    let post = |body: Value| runner_call(&app, &token, "POST", "/v1/runner/events", body);
    // Codex says no cost: its tokens are priced as the deployment prices models ($1 / $4 a million here).
    let r = post(json!({"lease_id": lease, "events": [{"key": "a", "type": "status", "text": "working"}],
        "usage": {"input_tokens": 3_600, "cached_input_tokens": 2_400, "output_tokens": 120}}));
    assert_eq!((r.status, r.json_body()["stop"].as_bool()), (200, Some(false)), "{:?}", r.json_body());
    let usage = app.ok(&ada.key, "get_usage", json!({"session_id": sid}));
    let reported = &usage["session"]["reported"];
    assert_eq!(reported["input_tokens"], 3_600);
    assert_eq!(reported["cost_usd"], 0.00408, "3,600 × $1 + 120 × $4 a million");
    assert_eq!(reported["turns"][0]["estimated"], true);
    assert_eq!(usage["session"]["spent_cents"], 0, "nothing charged");
    assert_eq!(balance(), before, "the wallet is untouched");
    let bad = post(json!({"lease_id": lease, "events": [], "usage": {"input_tokens": -1, "output_tokens": 0}}));
    assert_eq!(bad.status, 400, "{:?}", bad.json_body());
    assert!(bad.json_body()["error"]["message"].as_str().unwrap().contains("usage.input_tokens"));
    // The CLI's own figure replaces the estimate; at 6 cents it passes the 5-cent budget: the turn stops.
    let r = post(json!({"lease_id": lease, "events": [],
        "usage": {"input_tokens": 50_000, "output_tokens": 2_000, "cost_usd": 0.06}}));
    assert_eq!(r.status, 200, "{:?}", r.json_body());
    assert_eq!(r.json_body()["stop"], true, "told at once: {:?}", r.json_body());
    let page = app.ok(&ada.key, "read_session", json!({"session_id": sid, "cursor": started["cursor"]}));
    let said = page["events"].to_string();
    assert!(said.contains("budget of 5 cents reached (6 of them reported by the agent's CLI)"), "{said}");
    assert!(said.contains("budget_reached"), "{said}");
    let usage = app.ok(&ada.key, "get_usage", json!({"session_id": sid}));
    assert_eq!(usage["session"]["reported"]["cost_usd"], 0.06);
    assert_eq!(usage["session"]["reported"]["turns"][0]["estimated"], false);
    assert_eq!(balance(), before);
    let next =
        app.call(&ada.key, "send_message", json!({"session_id": sid, "message": "more", "idempotency_key": "m2"}));
    assert!(next.to_string().contains("budget of 5 cents is spent"), "{next}");
    let perf = app.ok(&ada.key, "read_agent_performance", json!({}));
    let row = perf["performance"].as_array().unwrap().iter().find(|r| r["harness"] == "codex").unwrap().clone();
    assert_eq!((row["reported_cost_usd"].as_f64(), row["spent_cents"].as_i64()), (Some(0.06), Some(0)), "{row}");
}
