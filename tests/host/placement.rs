//! Agent placement: where an agent's turns run. A hosted agent's session boots its sandbox, whose runner
//! token claims only that session's turns and checkouts; a person's runner never claims them; a
//! deployment without sandboxes says so when the agent is set up and when its turn would start.

use crate::support::{balance, credit, runner_request, Account, TestApp};
use agentsky::cx::Config;
use agentsky::http::HttpResponse;
use serde_json::{json, Value};

const BASE: &str = "https://sky.example.com";

fn app() -> TestApp {
    let secrets_key = Some("test-master-key".into());
    TestApp::with_config(Config { public_base_url: BASE.into(), secrets_key, ..TestApp::config() })
}

fn claim(app: &TestApp, token: &str) -> HttpResponse {
    app.send(runner_request(token, "POST", "/v1/runner/claim", json!({})))
}

/// Ends a claimed turn as completed.
fn finish(app: &TestApp, token: &str, lease_id: &str) {
    let done = json!({"lease_id": lease_id, "events": [], "done": "completed"});
    assert_eq!(app.send(runner_request(token, "POST", "/v1/runner/events", done)).status, 200);
    app.settle();
}

/// `POST /v1/agents` that must fail: its status and message.
fn refused(app: &TestApp, key: &str, body: Value) -> (u16, String) {
    let r = app.request("POST", "/v1/agents", Some(key), Some(body));
    assert!(r.status >= 400, "{:?}", r.json_body());
    (r.status, r.json_body()["error"]["message"].as_str().unwrap().to_owned())
}

fn person_runner(app: &TestApp, ada: &Account) -> String {
    let r = app.request("POST", "/v1/runners", Some(&ada.key), Some(json!({"name": "laptop"})));
    assert_eq!(r.status, 201, "{:?}", r.json_body());
    r.json_body()["token"].as_str().unwrap().to_owned()
}

fn start(app: &TestApp, key: &str, agent_id: &str, message: &str) -> String {
    let s = app.ok(key, "start_session", json!({"agent_id": agent_id, "message": message, "idempotency_key": message}));
    app.settle();
    s["session"]["session_id"].as_str().unwrap().to_owned()
}

/// The session's events as `(kind, text or message)`.
fn events(app: &TestApp, key: &str, session_id: &str) -> Vec<(String, String)> {
    let page = app.ok(key, "read_session", json!({"session_id": session_id}));
    page["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let said = e["text"].as_str().or(e["message"].as_str()).unwrap_or_default();
            (e["kind"].as_str().or(e["type"].as_str()).unwrap_or_default().to_owned(), said.to_owned())
        })
        .collect()
}

#[test]
fn placement_command_and_egress_are_refused_in_plain_words() {
    let app = app();
    let ada = app.signup("Ada", "ada@example.com");
    let base = |harness: &str, more: Value| {
        let mut b = json!({"name": "A", "harness": harness, "model": "m"});
        b.as_object_mut().unwrap().extend(more.as_object().unwrap().clone());
        b
    };
    for (body, says) in [
        (base("echo", json!({"placement": "hosted"})), "`placement: hosted` is for agents whose turns run on a runner"),
        (base("openai", json!({"placement": "hosted"})), "`openai` agents already run inside agentsky"),
        (base("runner", json!({"placement": "hosted"})), "a hosted `runner` agent needs `command`"),
        (
            base("claude-code", json!({"placement": "hosted", "command": "x"})),
            "claude-code and codex agents need no command",
        ),
        (base("runner", json!({"command": "make"})), "the command of a person's runner is given to `sky runner`"),
        (base("runner", json!({"placement": "hosted", "command": "a\nb"})), "`command` must be one shell line"),
        (base("codex", json!({"egress": ["pypi.org"]})), "`egress` is only for hosted agents"),
        (
            base("codex", json!({"placement": "hosted", "egress": ["https://pypi.org"]})),
            "`egress[0]` must be a host name like `registry.npmjs.org`: leave out the scheme",
        ),
        (
            base("codex", json!({"placement": "hosted", "egress": ["pypi.org", "PyPI.org"]})),
            "`egress[1]` must be a host name like `registry.npmjs.org`: write it in lowercase",
        ),
        (base("codex", json!({"placement": "sandbox"})), "placement"),
    ] {
        let (status, message) = refused(&app, &ada.key, body.clone());
        assert_eq!(status, 400, "{body}: {message}");
        assert!(message.contains(says), "{body}: {message}");
    }
    let many: Vec<String> = (0..21).map(|i| format!("h{i}.example.com")).collect();
    let (status, message) = refused(&app, &ada.key, base("codex", json!({"placement": "hosted", "egress": many})));
    assert_eq!(status, 400);
    assert!(message.contains("egress") && message.contains("at most 20"), "{message}");
}

#[test]
fn get_agent_and_list_agents_show_where_an_agent_runs() {
    let app = app();
    let ada = app.signup("Ada", "ada@example.com");
    let coder = app.create_agent(
        &ada.key,
        json!({"name": "Coder", "harness": "runner", "model": "m", "placement": "hosted",
               "command": "make test", "egress": ["pypi.org"]}),
    );
    let got = app.ok(&ada.key, "get_agent", json!({"agent_id": coder}));
    assert_eq!(
        (&got["placement"], &got["command"], &got["egress"]),
        (&json!("hosted"), &json!("make test"), &json!(["pypi.org"]))
    );
    let plain = app.create_agent(&ada.key, json!({"name": "Claude", "harness": "claude-code", "model": "m"}));
    let got = app.ok(&ada.key, "get_agent", json!({"agent_id": plain}));
    assert_eq!((&got["placement"], got.get("command"), &got["egress"]), (&json!("runner"), None, &json!([])));
    let listed = app.ok(&ada.key, "list_agents", json!({}));
    let hosted = listed["agents"].as_array().unwrap().iter().find(|a| a["id"] == coder.as_str()).unwrap().clone();
    assert_eq!(
        (&hosted["placement"], &hosted["command"], &hosted["egress"]),
        (&json!("hosted"), &json!("make test"), &json!(["pypi.org"]))
    );

    // A new command alone keeps the placement and the allow list; moving to a person's runner drops both.
    let changed = app.ok(&ada.key, "update_agent", json!({"agent_id": coder, "command": "npm test"}));
    assert_eq!((&changed["command"], &changed["egress"]), (&json!("npm test"), &json!(["pypi.org"])));
    let moved = app.ok(&ada.key, "update_agent", json!({"agent_id": coder, "placement": "runner"}));
    assert_eq!((&moved["placement"], moved.get("command"), &moved["egress"]), (&json!("runner"), None, &json!([])));
    let r = app.request("PATCH", &format!("/v1/agents/{plain}"), Some(&ada.key), Some(json!({"command": "x"})));
    assert_eq!(r.status, 400);
    assert!(r.json_body()["error"]["message"].as_str().unwrap().contains("need no command"));
}

#[test]
fn a_hosted_session_boots_its_sandbox_whose_runner_claims_only_that_sessions_turn() {
    let app = app();
    let ada = app.signup("Ada", "ada@example.com");
    let laptop = person_runner(&app, &ada);
    let gh = json!({"name": "gh", "provider": "github", "env": "scm", "credentials": {"env": {"GH_TOKEN": "t"}}});
    let r = app.request("POST", "/v1/connectors", Some(&ada.key), Some(gh));
    assert_eq!(r.status, 200, "{:?}", r.json_body());
    let hosted = app.create_agent(
        &ada.key,
        json!({"name": "Coder", "harness": "runner", "model": "m", "placement": "hosted",
               "command": "make test", "egress": ["pypi.org"]}),
    );
    let mine = app.create_agent(&ada.key, json!({"name": "Mine", "harness": "runner", "model": "m"}));

    let a = start(&app, &ada.key, &hosted, "build it");
    let boots = app.sessions.sandboxes.boots.borrow().clone();
    assert_eq!(boots.len(), 1, "one boot for the turn, not one per recheck");
    let boot = &boots[0];
    assert_eq!(boot.session_id, a);
    assert!(boot.runner_token.starts_with("srt_") && boot.max_run_s > 0);
    for host in ["registry.npmjs.org", "deb.debian.org", "api.github.com", "pypi.org"] {
        assert!(boot.egress.iter().any(|h| h == host), "{host} in {:?}", boot.egress);
    }
    assert_eq!(events(&app, &ada.key, &a).last().unwrap().1, "starting sandbox");
    // Its token is kept only as a hash.
    let hash = agentsky::rules::ids::hash_secret(&boot.runner_token);
    let stored: String =
        app.db.0.query_row("SELECT token_hash FROM runner WHERE session_id = ?1", [&a], |r| r.get(0)).unwrap();
    assert_eq!(stored, hash);

    assert_eq!(claim(&app, &laptop).status, 204, "a person's runner never claims a hosted turn");
    let c = start(&app, &ada.key, &mine, "on my laptop");
    let b = start(&app, &ada.key, &hosted, "another");
    let sandbox_b = app.sessions.sandboxes.boots.borrow()[1].runner_token.clone();

    let sandbox = &boot.runner_token;
    let got = claim(&app, sandbox);
    assert_eq!(got.status, 200, "{:?}", got.json_body());
    let turn = got.json_body();
    assert_eq!((turn["session_id"].as_str(), turn["message"].as_str()), (Some(a.as_str()), Some("build it")));
    assert_eq!(turn["agent"]["command"], "make test");
    // The sandbox reaches this deployment at its own origin only, and so do the agent's servers.
    let origin = agentsky::rules::placement::SANDBOX_ORIGIN;
    assert_eq!(turn["session_server"], format!("{origin}/v1/session/mcp"));
    assert_eq!(claim(&app, sandbox).status, 204, "nor another session's turn, hosted or not");
    let laptops = claim(&app, &laptop).json_body();
    assert_eq!(laptops["session_id"].as_str(), Some(c.as_str()), "the person's runner takes its own");
    assert!(laptops["agent"].get("command").is_none());
    assert_eq!(claim(&app, &sandbox_b).json_body()["session_id"].as_str(), Some(b.as_str()));

    // Checkouts: a sandbox's runner runs only its own session's queued for it; a person's runner those
    // queued for people's runners.
    let queue = |job: &'static str, session: String, hosted: bool| {
        app.system(move |cx| {
            Box::pin(async move {
                let ws = ada_ws(cx, &session).await;
                agentsky::store::checkouts::insert(cx.db(), job, &ws, &session, "{}", hosted, cx.now_ms).await.unwrap()
            })
        })
    };
    queue("chk_c", c.clone(), true);
    assert_eq!(claim(&app, sandbox).status, 204, "another session's checkout is not the sandbox's");
    queue("chk_people", a.clone(), false);
    assert_eq!(claim(&app, sandbox).status, 204, "one queued for people's runners is not the sandbox's");
    queue("chk_a", a.clone(), true);
    let mine = claim(&app, sandbox).json_body();
    assert_eq!(mine["checkout"]["job_id"], "chk_a");
    assert_eq!(claim(&app, &laptop).json_body()["checkout"]["job_id"], "chk_people");

    // Stopping the session stops its sandbox, and the sandbox's token stops working.
    app.ok(&ada.key, "stop_session", json!({"session_id": a}));
    assert_eq!(*app.sessions.sandboxes.stops.borrow(), vec![a.clone()]);
    assert_eq!(claim(&app, sandbox).status, 401);
    assert_eq!(claim(&app, &sandbox_b).status, 204, "another session's sandbox keeps its token (its turn is leased)");
}

/// The workspace of a session, from D1.
async fn ada_ws(cx: &agentsky::cx::Cx<'_>, session_id: &str) -> String {
    agentsky::store::sessions::get(cx.db(), session_id).await.unwrap().unwrap().workspace_id
}

#[test]
fn without_sandboxes_hosted_placement_is_refused_at_setup_and_its_turn_fails_saying_why() {
    let app = app();
    let ada = app.signup("Ada", "ada@example.com");
    let why = "no container runtime: Docker is not running on this machine";
    *app.sessions.sandboxes.unavailable.borrow_mut() = Some(why.into());
    let (status, message) =
        refused(&app, &ada.key, json!({"name": "C", "harness": "claude-code", "model": "m", "placement": "hosted"}));
    assert_eq!((status, message.as_str()), (501, format!("`placement: hosted` is not available: {why}").as_str()));
    let agent = app.create_agent(&ada.key, json!({"name": "C", "harness": "claude-code", "model": "m"}));
    let r = app.request("PATCH", &format!("/v1/agents/{agent}"), Some(&ada.key), Some(json!({"placement": "hosted"})));
    assert_eq!(r.status, 501);

    // Set up while sandboxes ran; the deployment lost them since.
    *app.sessions.sandboxes.unavailable.borrow_mut() = None;
    app.ok(&ada.key, "update_agent", json!({"agent_id": agent, "placement": "hosted"}));
    *app.sessions.sandboxes.unavailable.borrow_mut() = Some(why.into());
    let s = start(&app, &ada.key, &agent, "go");
    let said = events(&app, &ada.key, &s);
    assert!(said.contains(&("error".into(), format!("`placement: hosted` is not available: {why}"))), "{said:?}");
    let status = app.ok(&ada.key, "get_session", json!({"session_id": s}))["status"].clone();
    assert_eq!(status, "idle", "the turn ended; the session waits for another message");
    assert!(app.sessions.sandboxes.boots.borrow().is_empty());
}

#[test]
fn a_sandbox_that_went_to_sleep_is_booted_again_by_the_next_turn_with_a_fresh_token() {
    let app = app();
    let ada = app.signup("Ada", "ada@example.com");
    let agent = app.create_agent(
        &ada.key,
        json!({"name": "C", "harness": "runner", "model": "m", "placement": "hosted", "command": "cat"}),
    );
    let s = start(&app, &ada.key, &agent, "one");
    let first = app.sessions.sandboxes.boots.borrow()[0].runner_token.clone();
    let claimed = claim(&app, &first).json_body();
    finish(&app, &first, claimed["lease_id"].as_str().unwrap());
    // A turn while it runs: no boot, and its runner claims it with the token it started with.
    app.ok(&ada.key, "send_message", json!({"session_id": s, "message": "two", "idempotency_key": "two"}));
    app.settle();
    assert_eq!(app.sessions.sandboxes.boots.borrow().len(), 1, "a running sandbox is not booted again");
    assert_eq!(events(&app, &ada.key, &s).last().unwrap().1, "running in the session's sandbox");
    let claimed = claim(&app, &first).json_body();
    assert_eq!(claimed["message"], "two");
    finish(&app, &first, claimed["lease_id"].as_str().unwrap());
    // Idle, it sleeps; the next turn boots it again, with a new token, and the old one is dead.
    app.sessions.sandboxes.sleep(&s);
    app.ok(&ada.key, "send_message", json!({"session_id": s, "message": "three", "idempotency_key": "three"}));
    app.settle();
    let boots = app.sessions.sandboxes.boots.borrow().clone();
    assert_eq!(boots.len(), 2);
    assert_eq!(events(&app, &ada.key, &s).last().unwrap().1, "starting sandbox");
    assert_eq!(claim(&app, &first).status, 401);
    assert_eq!(claim(&app, &boots[1].runner_token).json_body()["message"], "three");
}

#[test]
fn sessions_configured_before_placements_run_on_a_runner() {
    let old = json!({"session_id": "s", "workspace_id": "w", "task_id": "s", "agent_id": "a", "harness": "runner",
        "model": "m", "thinking": "off", "instructions": "", "budget_cents": null, "started_by_key_id": null});
    let config: agentsky::session::SessionConfig = serde_json::from_value(old).unwrap();
    assert_eq!(config.placement, agentsky::rules::placement::Placement::Runner);
    assert_eq!((config.command, config.egress), (None, vec![]));
}

/// A workspace runs at most `SANDBOXES_PER_WORKSPACE` sandboxes at once: a hosted turn past the cap waits,
/// saying so, and starts once one stops.
#[test]
fn past_the_workspace_cap_a_hosted_turn_waits_for_a_sandbox() {
    let secrets_key = Some("test-master-key".into());
    let app = TestApp::with_config(Config { sandboxes_per_workspace: Some(1), secrets_key, ..TestApp::config() });
    let ada = app.signup("Ada", "ada@example.com");
    let agent = app.create_agent(
        &ada.key,
        json!({"name": "C", "harness": "runner", "model": "m", "placement": "hosted", "command": "cat"}),
    );
    let first = start(&app, &ada.key, &agent, "one");
    let second = start(&app, &ada.key, &agent, "two");
    assert_eq!(app.sessions.sandboxes.boots.borrow().len(), 1, "one sandbox at once");
    let said = events(&app, &ada.key, &second);
    assert!(
        said.iter().any(|(k, t)| k == "status" && t.starts_with("waiting for a sandbox: the workspace runs its 1")),
        "{said:?}"
    );

    app.ok(&ada.key, "stop_session", json!({"session_id": first}));
    app.advance(agentsky::domain::sandboxes::RECHECK_MS);
    app.settle();
    let boots = app.sessions.sandboxes.boots.borrow().clone();
    assert_eq!(boots.len(), 2, "the waiting turn's sandbox started once the other stopped");
    assert_eq!(boots[1].session_id, second);
    assert_eq!(claim(&app, &boots[1].runner_token).json_body()["message"], "two");
}

/// Sandbox time at `cents_per_hour`, with a wallet to pay it from.
fn metered_app(cents_per_hour: i64) -> TestApp {
    let secrets_key = Some("test-master-key".into());
    let admin_token = Some("adm".into());
    TestApp::with_config(Config {
        sandbox_cents_per_hour: cents_per_hour,
        secrets_key,
        admin_token,
        ..TestApp::config()
    })
}

/// A boot as `(ended, seconds, cents)`.
type BootRow = (Option<String>, Option<i64>, Option<i64>);

/// The session's boots, oldest first, and its `sandbox` ledger entries' cents.
fn boots(app: &TestApp, session_id: &str) -> (Vec<BootRow>, Vec<i64>) {
    let db = &app.db.0;
    let mut q =
        db.prepare("SELECT ended, seconds, cents FROM sandbox_boot WHERE session_id = ?1 ORDER BY started_ms").unwrap();
    let rows =
        q.query_map([session_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().map(Result::unwrap).collect();
    let mut q = db
        .prepare("SELECT cents FROM usage_entry WHERE session_id = ?1 AND kind = 'sandbox' AND model = 'sandbox' ORDER BY created_ms")
        .unwrap();
    let entries = q.query_map([session_id], |r| r.get(0)).unwrap().map(Result::unwrap).collect();
    (rows, entries)
}

fn hosted_agent(app: &TestApp, key: &str) -> String {
    app.create_agent(
        key,
        json!({"name": "C", "harness": "runner", "model": "m", "placement": "hosted", "command": "cat"}),
    )
}

/// A sandbox holds its hour before it boots, like a model call; a wallet short of it refuses the turn,
/// saying what is short, and boots nothing.
#[test]
fn a_sandbox_holds_its_time_budget_before_it_boots() {
    let app = metered_app(120);
    let ada = app.signup("Ada", "ada@example.com");
    let agent = hosted_agent(&app, &ada.key);
    let s = start(&app, &ada.key, &agent, "poor");
    assert!(app.sessions.sandboxes.boots.borrow().is_empty(), "nothing boots on an empty wallet");
    let said = events(&app, &ada.key, &s);
    assert!(
        said.iter().any(|(_, t)| t.contains("the wallet holds 0 cents, and a sandbox is held 120 before it starts")),
        "{said:?}"
    );

    credit(&app, &ada.slug, 500);
    let s = start(&app, &ada.key, &agent, "paid");
    assert_eq!(app.sessions.sandboxes.boots.borrow().len(), 1);
    assert_eq!(balance(&app, &ada), 380, "an hour at 120 cents is held while it runs");
    assert_eq!(boots(&app, &s).0, vec![(None, None, None)]);
    let sandbox = &app.ok(&ada.key, "get_session", json!({"session_id": s}))["sandbox"];
    assert_eq!((&sandbox["state"], &sandbox["boots"][0]["ready_ms"]), (&json!("starting"), &Value::Null));
    let token = app.sessions.sandboxes.boots.borrow()[0].runner_token.clone();
    app.advance(1_500);
    claim(&app, &token);
    let sandbox = &app.ok(&ada.key, "get_session", json!({"session_id": s}))["sandbox"];
    let boot = &sandbox["boots"][0];
    let booted = boot["ready_ms"].as_i64().unwrap() - boot["started_ms"].as_i64().unwrap();
    assert_eq!((&sandbox["state"], booted), (&json!("running"), 1_500));
}

/// Its time is charged per second, from its boot to its runner's last call, when it is seen asleep; a
/// session's seconds are rounded up to a cent once, not once per boot; a stop charges until the stop; and
/// nothing is charged twice.
#[test]
fn sandbox_time_is_charged_per_second_once() {
    let app = metered_app(60); // a cent a minute
    let ada = app.signup("Ada", "ada@example.com");
    credit(&app, &ada.slug, 1_000);
    let agent = hosted_agent(&app, &ada.key);
    let s = start(&app, &ada.key, &agent, "one");
    let token = app.sessions.sandboxes.boots.borrow()[0].runner_token.clone();
    app.advance(10_000);
    let claimed = claim(&app, &token).json_body();
    finish(&app, &token, claimed["lease_id"].as_str().unwrap());
    // Its runner's last call: 10 s after the boot (the finish was its last call, at the same instant).
    app.sessions.sandboxes.sleep(&s);
    app.advance(120_000);
    app.ok(&ada.key, "send_message", json!({"session_id": s, "message": "two", "idempotency_key": "two"}));
    app.settle();
    let (rows, entries) = boots(&app, &s);
    assert_eq!(rows[0], (Some("asleep".into()), Some(10), Some(1)), "10 s of a cent a minute: 1 cent");
    assert_eq!(entries, vec![1]);
    assert_eq!(balance(&app, &ada), 1_000 - 1 - 60, "the first boot's cent, and the second boot's hold");

    // The second boot runs 20 s: 30 s in all still costs one cent, already paid.
    let token = app.sessions.sandboxes.boots.borrow()[1].runner_token.clone();
    app.advance(20_000);
    let claimed = claim(&app, &token).json_body();
    finish(&app, &token, claimed["lease_id"].as_str().unwrap());
    app.sessions.sandboxes.sleep(&s);
    app.advance(10 * 60_000);
    assert_eq!(app.cron(), 0);
    let (rows, _) = boots(&app, &s);
    assert_eq!(rows[1], (Some("asleep".into()), Some(20), Some(0)), "the cron charges a sandbox unheard for minutes");
    assert_eq!(balance(&app, &ada), 999, "the hold is back");

    // A third boot, stopped 45 s in: 75 s in all, 2 cents, one more.
    app.ok(&ada.key, "send_message", json!({"session_id": s, "message": "three", "idempotency_key": "three"}));
    app.settle();
    app.advance(45_000);
    app.ok(&ada.key, "stop_session", json!({"session_id": s}));
    let (rows, entries) = boots(&app, &s);
    assert_eq!(rows[2], (Some("stopped".into()), Some(45), Some(1)));
    assert_eq!(entries, vec![1, 1]);
    assert_eq!(balance(&app, &ada), 998);
    // The person sees it: on the session (its log newest first) and in Health.
    let sandbox = &app.ok(&ada.key, "get_session", json!({"session_id": s}))["sandbox"];
    assert_eq!(sandbox["state"], "stopped");
    let log: Vec<_> = sandbox["boots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (b["ended"].clone(), b["ready_ms"].is_null(), b["seconds"].as_i64().unwrap(), b["cents"].clone()))
        .collect();
    assert_eq!(
        log,
        vec![
            (json!("stopped"), true, 45, json!(1)),
            (json!("asleep"), false, 20, json!(0)),
            (json!("asleep"), false, 10, json!(1))
        ]
    );
    assert_eq!(sandbox["egress"], json!(["deb.debian.org", "registry.npmjs.org", "security.debian.org"]));
    let health = &app.ok(&ada.key, "get_metrics", json!({}))["sandboxes"];
    assert_eq!(*health, json!({"boots": 3, "boot_p50_ms": 10_000, "boot_p95_ms": 20_000, "seconds": 75}));
    // Settling again changes nothing.
    app.advance(10 * 60_000);
    app.cron();
    app.ok(&ada.key, "stop_session", json!({"session_id": s}));
    assert_eq!((boots(&app, &s).1, balance(&app, &ada)), (vec![1, 1], 998));
}

/// A sandbox that did not start costs nothing, and its hold goes back.
#[test]
fn a_sandbox_that_does_not_start_costs_nothing() {
    let app = metered_app(60);
    let ada = app.signup("Ada", "ada@example.com");
    credit(&app, &ada.slug, 100);
    let agent = hosted_agent(&app, &ada.key);
    app.sessions.sandboxes.fail_boots("the container runtime said no");
    let s = start(&app, &ada.key, &agent, "one");
    let said = events(&app, &ada.key, &s);
    assert!(said.iter().any(|(_, t)| t.contains("the container runtime said no")), "{said:?}");
    assert_eq!(boots(&app, &s), (vec![(Some("failed".into()), Some(0), Some(0))], vec![]));
    assert_eq!(balance(&app, &ada), 100);
}

/// A hosted claude-code agent's CLI calls its model through the relay with its sandbox's runner token: the
/// relay sends it on to the workspace's endpoint with the workspace's key (which the sandbox never gets),
/// under the outbound rule; without the key it says which secret to set; a person's runner has no relay.
#[test]
fn a_sandboxed_cli_reaches_its_model_through_the_relay_with_the_workspaces_key() {
    let app = app();
    let ada = app.signup("Ada", "ada@example.com");
    let agent = app.create_agent(
        &ada.key,
        json!({"name": "C", "harness": "claude-code", "model": "claude-x", "placement": "hosted"}),
    );
    start(&app, &ada.key, &agent, "one");
    let boot = app.sessions.sandboxes.boots.borrow()[0].clone();
    let token = boot.runner_token.clone();
    assert_eq!(
        boot.env,
        vec![
            ("ANTHROPIC_BASE_URL".to_owned(), "http://10.172.0.1/v1/runner/model/anthropic".to_owned()),
            ("ANTHROPIC_AUTH_TOKEN".to_owned(), token.clone())
        ],
        "the CLI's key is the runner token, never the workspace's"
    );
    let messages = json!({"model": "claude-x", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]});
    let relay = |token: &str| {
        let mut req =
            runner_request(token, "POST", "/v1/runner/model/anthropic/v1/messages?beta=true", messages.clone());
        req.headers.push(("anthropic-version".into(), "2023-06-01".into()));
        app.send(req)
    };
    let r = relay(&token);
    assert_eq!(r.status, 404, "{:?}", r.json_body());
    assert!(r.json_body()["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("this workspace has no ANTHROPIC_API_KEY secret"));

    for (name, value) in [("ANTHROPIC_API_KEY", "sk-ant-workspace"), ("ANTHROPIC_BASE_URL", "https://llm.example.com/")]
    {
        let r = app.request("PUT", &format!("/v1/secrets/{name}"), Some(&ada.key), Some(json!({"value": value})));
        assert_eq!(r.status, 200, "{:?}", r.json_body());
    }
    app.sessions.net.answer(|_| {
        HttpResponse::json(200, &json!({"type": "message", "content": [{"type": "text", "text": "hello"}]}))
    });
    let r = relay(&token);
    assert_eq!((r.status, &r.json_body()["content"][0]["text"]), (200, &json!("hello")));
    let sent = app.sessions.net.requests.borrow().last().cloned().unwrap();
    assert_eq!(sent.url, "https://llm.example.com/v1/messages?beta=true");
    let header = |name: &str| sent.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone());
    assert_eq!(header("x-api-key").as_deref(), Some("sk-ant-workspace"));
    assert_eq!(header("anthropic-version").as_deref(), Some("2023-06-01"));
    assert_eq!(header("authorization"), None, "the runner token stays here");
    assert_eq!(serde_json::from_slice::<Value>(&sent.body).unwrap(), messages);

    // The model endpoint is under the outbound rule like any URL a workspace names.
    let r =
        app.request("PUT", "/v1/secrets/ANTHROPIC_BASE_URL", Some(&ada.key), Some(json!({"value": "http://10.0.0.1"})));
    assert_eq!(r.status, 400, "{:?}", r.json_body());
    // A person's runner calls its model with its own key.
    let person = person_runner(&app, &ada);
    assert_eq!(relay(&person).status, 403);
}
