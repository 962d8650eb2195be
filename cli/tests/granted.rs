//! Granted commands in a runner's turn, against a stand-in server: the agent runs `vercel`, the shim asks
//! the runner over the turn's channel, and the runner fetches the credential itself, runs the real CLI
//! from its own `PATH` with the credential in that child's environment only, streams the output back and
//! reports the exit status it saw (before the shim hears it). A CLI the agent puts on its own `PATH` is
//! not what runs; on Linux only the runner's own `sky` may use the channel and the agent holds no secret
//! for it; a shim that is ended ends its command, and so do a revoked or an expired grant; the channel's
//! folder is gone with the turn.
#![cfg(unix)]

mod support;

use serde_json::{json, Value};
use sky::runner_client::{Client, Turn};
use sky::turn::{Outcome, Timing, TurnRunner};
use std::time::Duration;
use support::{Scratch, StandIn};

const RUNNER_TOKEN: &str = "srt_GrantedRunner0123456789abcdefghijklmn";
const SESSION_TOKEN: &str = "sst_GrantedSession0123456789abcdefghijklm";
const CREDENTIAL: &str = "vt-runner-fetched-42";

/// The runner face and the session server in one: every target request is granted (`gr_new`); the
/// runner's credential for `delete` is refused; with `ssh_key`, the project has an ssh target `box`, whose
/// credential (asked for with every scope) is that key.
fn server(ssh_key: Option<String>) -> StandIn {
    server_with(ssh_key, None)
}

/// [`server`], whose env credential lasts `ttl_s`, and whose job poll hands out a `grant_forget` of
/// `gr_new` once the agent has said `FORGET_NOW`.
fn server_with(ssh_key: Option<String>, ttl_s: Option<u64>) -> StandIn {
    server_slow(ssh_key, ttl_s, Duration::ZERO)
}

/// [`server_with`], whose env credential takes `delay` to answer.
fn server_slow(ssh_key: Option<String>, ttl_s: Option<u64>, delay: Duration) -> StandIn {
    let said = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let forgotten = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    StandIn::start(move |req| {
        let reply = |status: u16, v: Value| (status, "application/json", v.to_string());
        let body: Value = serde_json::from_str(&req.body).unwrap_or(Value::Null);
        let path = req.url.split('?').next().unwrap();
        if path == "/v1/session/mcp" {
            if req.header("authorization") != Some(&format!("Bearer {SESSION_TOKEN}")) {
                return reply(401, json!({"error": {"code": "unauthorized", "message": "no"}}));
            }
            let args = &body["params"]["arguments"];
            let result = match body["params"]["name"].as_str().unwrap_or_default() {
                "list_targets" => json!([
                    {"id": "con_web", "name": "web", "provider": "vercel", "env": "prod", "lockState": "locked", "scopes": []},
                    {"id": "con_box", "name": "box", "provider": "ssh", "env": "prod", "lockState": "locked", "scopes": []},
                ]),
                "request_access" => {
                    json!({"status": "active", "grantId": "gr_new", "scope": args["scope"], "expiresAt": null, "decidedBy": "policy"})
                }
                "check_grant" => {
                    json!({"status": "active", "grantId": args["grantId"], "scope": ["deploy", "delete"], "expiresAt": null, "decidedBy": "policy"})
                }
                other => json!({"unexpected": other}),
            };
            let text = result.to_string();
            return reply(
                200,
                json!({"jsonrpc": "2.0", "id": body["id"], "result": {"content": [{"type": "text", "text": text}], "isError": false}}),
            );
        }
        if req.header("authorization") != Some(&format!("Bearer {RUNNER_TOKEN}")) {
            return reply(401, json!({"error": {"code": "unauthorized", "message": "unknown runner token"}}));
        }
        match (req.method.as_str(), path) {
            ("GET", "/v1/runner/files") => reply(200, json!({"files": []})),
            ("POST", "/v1/runner/events") => {
                let n = body["events"].as_array().map_or(0, Vec::len);
                said.lock().unwrap().push_str(&body["events"].to_string());
                reply(200, json!({"accepted": n, "stop": false}))
            }
            ("POST", "/v1/runner/jobs") => {
                std::thread::sleep(Duration::from_millis(100));
                let due = said.lock().unwrap().contains("FORGET_NOW");
                if due && !forgotten.swap(true, std::sync::atomic::Ordering::SeqCst) {
                    let job =
                        json!({"job_id": "job_forget", "kind": "grant_forget", "grant_id": "gr_new", "ssh": false});
                    return reply(200, json!({"jobs": [job], "stop": false}));
                }
                reply(200, json!({"jobs": [], "stop": false}))
            }
            ("POST", "/v1/runner/jobs/result") => reply(200, json!({"ok": true})),
            ("POST", "/v1/runner/heartbeat") => reply(200, json!({"stop": false})),
            ("POST", "/v1/runner/credential") if body["scopes"] == json!(["delete"]) => reply(
                403,
                json!({"error": {"code": "forbidden", "message": "grant gr_new covers deploy, not `delete`, which this command needs"}}),
            ),
            ("POST", "/v1/runner/credential") if body["scopes"].as_array().is_some_and(|s| s.len() == 4) => {
                match &ssh_key {
                    Some(k) => {
                        reply(200, json!({"kind": "ssh", "private_key": k, "ttl_s": 60, "scopes": body["scopes"]}))
                    }
                    None => reply(403, json!({"error": {"code": "forbidden", "message": "no ssh target"}})),
                }
            }
            ("POST", "/v1/runner/credential") => {
                std::thread::sleep(delay);
                reply(
                    200,
                    json!({"kind": "env", "env": {"VERCEL_TOKEN": CREDENTIAL}, "scopes": ["deploy"], "ttl_s": ttl_s}),
                )
            }
            ("POST", "/v1/runner/commands") => reply(200, json!({"recorded": "command_ok", "proof": true})),
            _ => reply(404, json!({"error": {"code": "not_found", "message": "no route"}})),
        }
    })
}

fn turn(server: &str) -> Turn {
    serde_json::from_value::<Turn>(json!({
        "lease_id": "lease_g", "attempt": 1, "session_id": "ses_1", "task_id": "ses_1", "message_id": "msg_1",
        "message": "deploy", "history": [], "agent": {"name": "Deployer", "model": "sh"},
        "session_token": SESSION_TOKEN, "session_server": format!("{server}/v1/session/mcp"),
    }))
    .unwrap()
}

/// A runner whose own `PATH` has a stand-in `vercel` (in `scratch/bin`) that shows what it got, and
/// exits 1 when its second word is `fail`; `slow` sleeps, its pid in `slow.pid` of its folder first.
fn runner(server: &str, scratch: &Scratch, script: &str) -> TurnRunner {
    let bin = scratch.0.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let vercel = bin.join("vercel");
    std::fs::write(
        &vercel,
        "#!/bin/sh\necho \"vercel ran: $* in $(basename \"$PWD\")\"\n\
         echo \"token ${VERCEL_TOKEN:-none}; runner ${AGENTSKY_RUNNER_SECRET:-none}\"\necho 'to stderr' >&2\n\
         if [ \"$2\" = slow ]; then echo $$ > slow.pid; sleep 30; fi\n[ \"$2\" != fail ]\n",
    )
    .unwrap();
    let ssh = bin.join("ssh");
    std::fs::write(&ssh, "#!/bin/sh\necho \"ssh ran: $*\"\necho \"agent keys: $(ssh-add -l)\"\n").unwrap();
    for cli in [&vercel, &ssh] {
        std::fs::set_permissions(cli, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    let path = std::env::join_paths(
        std::iter::once(bin).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap();
    TurnRunner {
        client: Client::new(server, RUNNER_TOKEN),
        command: vec!["sh".into(), "-c".into(), script.into()],
        sky_exe: env!("CARGO_BIN_EXE_sky").into(),
        path: Some(path),
        scratch: scratch.0.join("tmp"),
        push_roots: vec![],
        timing: Timing { lease: Duration::from_secs(5), ..support::quick_timing() },
        grants: Default::default(),
        conversations: Default::default(),
    }
}

fn bodies(srv: &StandIn, path: &str) -> Vec<Value> {
    srv.requests().iter().filter(|r| r.url == path).map(|r| serde_json::from_str(&r.body).unwrap()).collect()
}

/// What the agent printed, in order.
fn said(srv: &StandIn) -> String {
    let mut out = String::new();
    let mut keys = Vec::new();
    for p in bodies(srv, "/v1/runner/events") {
        for e in p["events"].as_array().unwrap() {
            if !keys.contains(&e["key"]) {
                keys.push(e["key"].clone());
                out.push_str(e["text"].as_str().or(e["message"].as_str()).unwrap_or_default());
                out.push('\n');
            }
        }
    }
    out
}

fn tools_called(srv: &StandIn) -> Vec<String> {
    bodies(srv, "/v1/session/mcp").iter().map(|b| b["params"]["name"].as_str().unwrap_or_default().to_owned()).collect()
}

fn run(script: &str, tag: &str) -> (StandIn, Scratch, Outcome) {
    run_with(script, tag, None)
}

fn run_with(script: &str, tag: &str, ssh_key: Option<String>) -> (StandIn, Scratch, Outcome) {
    run_on(server(ssh_key), script, tag)
}

fn run_on(srv: StandIn, script: &str, tag: &str) -> (StandIn, Scratch, Outcome) {
    let scratch = Scratch::new(tag);
    std::fs::create_dir_all(scratch.0.join("tmp")).unwrap();
    let r = runner(&srv.url, &scratch, script);
    let outcome = r.run_turn(&turn(&srv.url), &mut Vec::new()).unwrap();
    (srv, scratch, outcome)
}

#[test]
fn the_runner_runs_the_cli_with_the_credential_it_fetched_and_reports_the_exit_it_saw() {
    let (srv, scratch, outcome) = run(
        "mkdir -p site && cd site && vercel deploy --prod; echo \"exit=$?\"; vercel deploy fail --prod; echo \"exit=$?\"; \
         vercel rm app --prod; echo \"exit=$?\"",
        "granted-run",
    );
    assert_eq!(outcome, Outcome::Completed);
    let said = said(&srv);
    assert!(said.contains("vercel ran: deploy --prod in site"), "in the agent's folder: {said}");
    assert!(
        // Printed so the redaction rule lets it through (`VERCEL_TOKEN=…` would be redacted on its way).
        said.contains(&format!("token {CREDENTIAL}; runner none")),
        "the runner's credential, not the runner's secret: {said}"
    );
    assert!(said.contains("to stderr") && said.contains("exit=0\n") && said.contains("exit=1\n"), "{said}");
    assert!(said.contains("exit=69") && said.contains("not `delete`"), "a refused credential runs nothing: {said}");
    assert_eq!(said.matches("vercel ran:").count(), 2, "{said}");

    // The runner fetched the credential and reported both runs; the shim did neither.
    let asked = bodies(&srv, "/v1/runner/credential");
    assert_eq!(asked[0], json!({"lease_id": "lease_g", "grant_id": "gr_new", "scopes": ["deploy"]}));
    assert_eq!(
        bodies(&srv, "/v1/runner/commands"),
        [
            json!({"lease_id": "lease_g", "grant_id": "gr_new", "argv": ["vercel", "deploy", "--prod"], "exit_code": 0}),
            json!({"lease_id": "lease_g", "grant_id": "gr_new", "argv": ["vercel", "deploy", "fail", "--prod"], "exit_code": 1}),
        ]
    );
    assert!(!tools_called(&srv).contains(&"get_credential".to_owned()), "{:?}", tools_called(&srv));
    assert!(!srv.requests().iter().any(|r| r.url == "/v1/session/commands"));
    // The report came before the agent went on.
    let urls: Vec<String> = srv.requests().iter().map(|r| r.url.clone()).collect();
    let reported = urls.iter().position(|u| u == "/v1/runner/commands").unwrap();
    let went_on =
        srv.requests().iter().position(|r| r.url == "/v1/runner/events" && r.body.contains("exit=0")).unwrap();
    assert!(reported < went_on, "{urls:?}");
    // The channel's folder went with the turn; nothing of the turn is left.
    assert_eq!(std::fs::read_dir(scratch.0.join("tmp")).unwrap().count(), 0);
}

#[test]
fn a_cli_the_agent_puts_on_its_path_is_not_what_the_runner_runs() {
    let (srv, _scratch, outcome) = run(
        "mkdir fake && printf '#!/bin/sh\\necho fake vercel\\n' > fake/vercel && chmod +x fake/vercel; \
         PATH=\"$AGENTSKY_SHIM_DIR:$PWD/fake:$PATH\" vercel deploy --prod",
        "granted-fake",
    );
    assert_eq!(outcome, Outcome::Completed);
    let said = said(&srv);
    assert!(said.contains("vercel ran: deploy --prod") && !said.contains("fake vercel"), "{said}");
}

/// On Linux the agent holds no secret at all: the channel admits only what the kernel says is this
/// runner's own `sky`, run by its user, descending from it. Anything else the agent runs that speaks the
/// protocol is refused, and nothing runs.
#[cfg(target_os = "linux")]
#[test]
fn only_the_runners_own_shim_may_use_the_channel_and_the_agent_holds_no_secret() {
    if std::process::Command::new("python3").arg("-V").output().is_err() {
        eprintln!("skipped: no python3 to play an impostor");
        return;
    }
    let impostor = r#"import json, os, socket
s = socket.socket(socket.AF_UNIX)
s.connect(os.environ["AGENTSKY_RUNNER_SOCKET"])
s.sendall(json.dumps({"secret": "", "cli": "vercel", "args": ["deploy", "--prod"], "grant_id": "gr_new", "cwd": os.getcwd()}).encode() + b"\n")
data = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
print("impostor heard:", data.decode("utf-8", "replace").replace("\x00", ""))
"#;
    let script = format!(
        "python3 -c '{}'; vercel deploy --prod; echo \"exit=$?\"; \
         echo \"agent env: $(env | grep -c RUNNER_SECRET) secret vars; socket ${{AGENTSKY_RUNNER_SOCKET:+set}}\"; \
         grep -rl -- '{CREDENTIAL}' . \"$AGENTSKY_SHIM_DIR\" \"$(dirname \"$AGENTSKY_GRANTS_FILE\")\" 2>/dev/null | sed 's/^/credential in /'",
        impostor.replace('\'', "'\\''")
    );
    let (srv, _scratch, outcome) = run(&script, "granted-peer");
    assert_eq!(outcome, Outcome::Completed);
    let said = said(&srv);
    assert!(said.contains("agent env: 0 secret vars; socket set"), "{said}");
    assert!(!said.contains("credential in"), "the credential is in no file the agent can see: {said}");
    assert!(said.contains("impostor heard:") && said.contains("is not agentsky's shim"), "{said}");
    // The shim itself is admitted: the command ran once, through it.
    assert_eq!(said.matches("vercel ran:").count(), 1, "{said}");
    assert!(said.contains("exit=0"), "{said}");
    assert_eq!(bodies(&srv, "/v1/runner/credential").len(), 1, "the impostor got no credential fetched");
    assert_eq!(bodies(&srv, "/v1/runner/commands").len(), 1);
}

/// A revoked grant ends the command running under it at once (`grant_forget`), and an expiring grant ends
/// it when its time is up: the runner holds no credential past its grant.
#[test]
fn a_revoked_or_expired_grant_ends_the_command_running_under_it() {
    let slow =
        "vercel deploy slow --prod & n=0; while [ ! -s slow.pid ] && [ $n -lt 100 ]; do n=$((n+1)); sleep 0.1; done; \
                echo \"pid=$(cat slow.pid)\"";
    let (srv, _scratch, outcome) = run_on(
        server_with(None, None),
        &format!("{slow}; echo FORGET_NOW; wait $!; echo \"shim=$?\""),
        "granted-revoke",
    );
    assert_eq!(outcome, Outcome::Completed);
    let heard = said(&srv);
    assert!(heard.contains("was revoked: the command was ended"), "{heard}");
    let results = bodies(&srv, "/v1/runner/jobs/result");
    assert_eq!(results[0]["result"], json!({"ok": true, "commands_ended": 1, "agent_ended": false}), "{results:?}");
    let reports = bodies(&srv, "/v1/runner/commands");
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert_ne!(reports[0]["exit_code"], 0);

    let started = std::time::Instant::now();
    let (srv, _scratch, outcome) =
        run_on(server_with(None, Some(1)), &format!("{slow}; wait $!; echo \"shim=$?\""), "granted-expire");
    assert_eq!(outcome, Outcome::Completed);
    let heard = said(&srv);
    assert!(heard.contains("expired: the command was ended with it"), "{heard}");
    assert!(started.elapsed() < Duration::from_secs(20), "ended long before its 30 s sleep");
    assert_ne!(bodies(&srv, "/v1/runner/commands")[0]["exit_code"], 0);
}

/// A revocation that arrives while the command's credential is being fetched is not missed: the command
/// is not run with it.
#[test]
fn a_grant_revoked_while_its_command_is_starting_ends_it_before_it_runs() {
    let (srv, _scratch, outcome) = run_on(
        server_slow(None, None, Duration::from_secs(3)),
        "vercel deploy --prod & sleep 0.3; echo FORGET_NOW; wait $!; echo \"shim=$?\"",
        "granted-revoke-starting",
    );
    assert_eq!(outcome, Outcome::Completed);
    let heard = said(&srv);
    assert!(heard.contains("was revoked: nothing was run"), "{heard}");
    assert!(!heard.contains("vercel ran") && !heard.contains(CREDENTIAL), "{heard}");
    let results = bodies(&srv, "/v1/runner/jobs/result");
    assert_eq!(results[0]["result"], json!({"ok": true, "commands_ended": 1, "agent_ended": false}), "{results:?}");
}

#[test]
fn a_shim_that_is_ended_ends_its_command() {
    let (srv, _scratch, outcome) = run(
        "vercel deploy slow --prod & n=0; while [ ! -s slow.pid ] && [ $n -lt 100 ]; do n=$((n+1)); sleep 0.1; done; \
         echo \"pid=$(cat slow.pid)\"; kill $!; wait $!; echo \"shim=$?\"",
        "granted-kill",
    );
    assert_eq!(outcome, Outcome::Completed);
    let said = said(&srv);
    let pid = said.split("pid=").nth(1).and_then(|r| r.split_whitespace().next()).expect("the slow command started");
    let alive = || {
        std::path::Path::new(&format!("/proc/{pid}")).exists()
            && !std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default().contains(") Z ")
    };
    assert!(!alive(), "the command outlived its shim (the turn waited for its report): {said}");
    let reports = bodies(&srv, "/v1/runner/commands");
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert_ne!(reports[0]["exit_code"], 0, "{reports:?}");
}

#[test]
fn an_ssh_command_runs_with_the_key_in_the_turns_own_agent() {
    let on_path = |tool: &str| {
        std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {tool}"))
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !["ssh-agent", "ssh-add", "ssh-keygen"].iter().all(|t| on_path(t)) {
        eprintln!("skipped: ssh-agent, ssh-add or ssh-keygen is not on PATH");
        return;
    }
    let keys = Scratch::new("granted-ssh-key");
    let key = keys.0.join("id");
    let made = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "granted-test", "-f"])
        .arg(&key)
        .status()
        .unwrap();
    assert!(made.success());
    let listed = std::process::Command::new("ssh-keygen").arg("-lf").arg(key.with_extension("pub")).output().unwrap();
    let fingerprint = String::from_utf8_lossy(&listed.stdout).split_whitespace().nth(1).unwrap().to_owned();
    let private_key = std::fs::read_to_string(&key).unwrap();
    let (srv, scratch, outcome) =
        run_with("ssh deploy@box uptime; echo \"exit=$?\"", "granted-ssh", Some(private_key.clone()));
    assert_eq!(outcome, Outcome::Completed);
    let said = said(&srv);
    assert!(said.contains("ssh ran: deploy@box uptime") && said.contains(&fingerprint), "{said}");
    assert!(said.contains("exit=0") && !said.contains("PRIVATE KEY"), "{said}");
    assert_eq!(
        bodies(&srv, "/v1/runner/commands")[0]["argv"],
        json!(["ssh", "deploy@box", "uptime"]),
        "the runner reports the ssh it ran"
    );
    assert!(!tools_called(&srv).contains(&"get_credential".to_owned()));
    assert_eq!(std::fs::read_dir(scratch.0.join("tmp")).unwrap().count(), 0, "the agent's socket went with the turn");
}

/// Checks run in a fresh checkout: what the runner knows that the command could print (its token, the
/// checkout's lease) is masked in the output it posts.
#[test]
fn a_checkouts_output_is_posted_with_the_runners_own_secrets_masked() {
    let srv = StandIn::start(|req| {
        let path = req.url.split('?').next().unwrap();
        match path {
            "/v1/runner/files" => (200, "application/json", json!({"files": []}).to_string()),
            _ => (200, "application/json", json!({"ok": true}).to_string()),
        }
    });
    let scratch = Scratch::new("granted-checkout-mask");
    std::fs::create_dir_all(scratch.0.join("tmp")).unwrap();
    let r = runner(&srv.url, &scratch, "true");
    let lease = "ckl_checkoutlease42";
    let c: sky::runner_client::Checkout = serde_json::from_value(json!({
        "job_id": "job_ck", "lease_id": lease, "session_id": "ses_1",
        "command": format!("echo \"lease {lease} token {RUNNER_TOKEN}\"; exit 1"), "timeout_s": 20,
    }))
    .unwrap();
    r.run_checkout(&c, &mut Vec::new()).unwrap();
    let posted = bodies(&srv, "/v1/runner/jobs/result");
    let output = posted[0]["result"]["output"].as_str().unwrap().to_owned();
    assert!(output.starts_with("lease ckl_checkout… token"), "{output}");
    assert!(!output.contains(lease) && !output.contains(RUNNER_TOKEN), "{output}");
}
