//! `sky runner` against a stand-in server: a turn's command runs in a folder with the task's files and the
//! session's environment, its output arrives as keyed events (retried with the same keys, tokens masked),
//! changed files are uploaded, the turn ends completed or failed; a stop or a lost lease ends the
//! command's whole process group, and so does the runner's death (the supervisor's lifeline). Jobs from
//! the server: `sync` uploads and refreshes mid-turn, `run` reports its status and masked output while the
//! agent runs, `ssh_agent` serves a key from the turn's own agent, which ends with the turn; the goal's
//! criteria run after the command and ride on the final post; `push` commits the task's files to a bare
//! repository and reports a moved branch or a declined push. The binary registers once, keeps its token
//! private and reuses it and the command, and never reuses one workspace's registration for another's key.

mod support;

use serde_json::{json, Value};
use sky::runner_client::{Client, Turn};
use sky::turn::{Outcome, TurnRunner};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::{mode, Scratch, Seen, StandIn};

const RUNNER_TOKEN: &str = "srt_RunnerToken0123456789abcdefghijklmnop";
const SESSION_TOKEN: &str = "sst_SessionToken0123456789abcdefghijklmno";

/// How the stand-in answers heartbeats.
#[derive(Clone, Copy, PartialEq)]
enum Beat {
    Fine,
    Stop,
    /// Only the turn was cancelled.
    Cancel,
    Lost,
}

/// A runner face: files to hand out, heartbeats answered as `beat`, the first `fail_posts` event posts
/// answered 503.
fn runner_server(beat: Beat, fail_posts: usize) -> StandIn {
    let posts = Arc::new(AtomicUsize::new(0));
    StandIn::start(move |req| {
        let reply = |status: u16, v: Value| (status, "application/json", v.to_string());
        if req.header("authorization") != Some(&format!("Bearer {RUNNER_TOKEN}")) {
            return reply(401, json!({"error": {"code": "unauthorized", "message": "unknown runner token"}}));
        }
        match (req.method.as_str(), req.url.split('?').next().unwrap()) {
            ("GET", "/v1/runner/files") => reply(
                200,
                json!({"files": [
                    {"path": "input.txt", "version": 1, "content": "from the task\n"},
                    {"path": "docs/keep.md", "version": 2, "content": "kept"},
                ]}),
            ),
            ("PUT", "/v1/runner/files") => reply(200, json!({"path": "x", "version": 1})),
            ("DELETE", "/v1/runner/files") => reply(200, json!({"path": "x", "deleted": true, "version": 3})),
            ("POST", "/v1/runner/events") => {
                if posts.fetch_add(1, Ordering::SeqCst) < fail_posts {
                    return reply(503, json!({"error": {"code": "unavailable", "message": "try again"}}));
                }
                let n = serde_json::from_str::<Value>(&req.body).unwrap()["events"].as_array().unwrap().len();
                reply(200, json!({"accepted": n, "stop": false}))
            }
            ("POST", "/v1/runner/heartbeat") => match beat {
                Beat::Fine => reply(200, json!({"lease_expires_ms": 1, "stop": false})),
                Beat::Stop => reply(200, json!({"lease_expires_ms": 1, "stop": true})),
                Beat::Cancel => reply(200, json!({"lease_expires_ms": 1, "stop": true, "reason": "cancelled"})),
                Beat::Lost => reply(409, json!({"error": {"code": "conflict", "message": "this lease has expired"}})),
            },
            _ => reply(404, json!({"error": {"code": "not_found", "message": "no route"}})),
        }
    })
}

fn turn(server: &str) -> Turn {
    serde_json::from_value::<Turn>(json!({
        "lease_id": "lease_abc", "lease_expires_ms": 0, "attempt": 1, "session_id": "ses_1", "task_id": "ses_1",
        "message_id": "msg_1", "message": "add a README",
        "history": [{"role": "user", "text": "add a README"}],
        "agent": {"agent_id": "ag_1", "name": "Coder", "model": "script", "instructions": "Write code."},
        "session_token": SESSION_TOKEN, "session_server": format!("{server}/v1/session/mcp"),
    }))
    .unwrap()
}

fn runner(server: &str, scratch: &Scratch, script: &str) -> TurnRunner {
    TurnRunner {
        client: Client::new(server, RUNNER_TOKEN),
        command: vec!["sh".into(), "-c".into(), script.into()],
        sky_exe: env!("CARGO_BIN_EXE_sky").into(),
        path: std::env::var_os("PATH"),
        scratch: scratch.0.clone(),
        push_roots: vec![],
        timing: support::quick_timing(),
        grants: Default::default(),
        conversations: Default::default(),
    }
}

fn posts(srv: &StandIn, method: &str, path: &str) -> Vec<Value> {
    srv.requests()
        .iter()
        .filter(|r| r.method == method && r.url.starts_with(path))
        .map(|r| serde_json::from_str(&r.body).unwrap_or(Value::Null))
        .collect()
}

/// Every event posted, in order (a retried post counted once).
fn events(srv: &StandIn) -> Vec<Value> {
    let mut seen = Vec::<Value>::new();
    for p in posts(srv, "POST", "/v1/runner/events") {
        for e in p["events"].as_array().unwrap() {
            if !seen.iter().any(|s| s["key"] == e["key"]) {
                seen.push(e.clone());
            }
        }
    }
    seen
}

fn no_secret_in(seen: &[Seen]) {
    for r in seen {
        assert!(!r.body.contains(SESSION_TOKEN), "the session token was sent in {}: {}", r.url, r.body);
        assert!(!r.body.contains(RUNNER_TOKEN), "the runner token was sent in {}", r.url);
    }
}

fn alive(pid: &str) -> bool {
    std::path::Path::new(&format!("/proc/{}", pid.trim())).exists()
        && !std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default().contains(") Z ")
}

#[test]
fn a_turn_runs_with_the_session_environment_streams_its_output_and_uploads_what_changed() {
    let srv = runner_server(Beat::Fine, 0);
    let scratch = Scratch::new("runner-turn");
    let script = r##"
        echo "hello: $AGENTSKY_MESSAGE"
        read -r first; echo "stdin: $first"
        echo "env: $AGENTSKY_SESSION_ID $AGENTSKY_TASK_ID $AGENTSKY_MESSAGE_ID $AGENTSKY_AGENT_NAME $AGENTSKY_MODEL $AGENTSKY_ATTEMPT ${AGENTSKY_API_KEY:-nokey} ${GH_TOKEN:-nogh}"
        echo "server: $AGENTSKY_SERVER"
        echo "leak: $AGENTSKY_SESSION_TOKEN"
        echo "working" >&2
        case "$PATH" in "$AGENTSKY_SHIM_DIR":*) echo "shims first";; esac
        grep -q '"add a README"' "$AGENTSKY_HISTORY_FILE" && echo "history ok"
        grep -q '"mcp"' "$AGENTSKY_MCP_CONFIG" && grep -q "\"url\": \"$AGENTSKY_HELP_SERVER\"" "$AGENTSKY_MCP_CONFIG" \
          && case "$AGENTSKY_HELP_SERVER" in */v1/help/mcp) echo "mcp config ok";; esac
        test "$(cat "$AGENTSKY_INSTRUCTIONS_FILE")" = "Write code." && echo "instructions ok"
        cat input.txt
        echo "# README" > README.md
        mkdir -p src && echo "fn main() {}" > src/main.rs
        printf '\377\376' > blob.bin
    "##;
    let r = runner(&srv.url, &scratch, script);
    let mut log = Vec::new();
    let outcome = r.run_turn(&turn(&srv.url), &mut log).unwrap();
    let log = String::from_utf8(log).unwrap();
    assert_eq!(outcome, Outcome::Completed, "{log}");

    let evs = events(&srv);
    let text = |kind: &str| -> String {
        evs.iter()
            .filter(|e| e["type"] == kind)
            .map(|e| e["text"].as_str().unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let said = text("agent_message");
    for want in [
        "hello: add a README",
        "stdin: add a README",
        "env: ses_1 ses_1 msg_1 Coder script 1 nokey nogh",
        &format!("server: {}", srv.url),
        "leak: sst_SessionT…",
        "shims first",
        "history ok",
        "mcp config ok",
        "instructions ok",
        "from the task",
    ] {
        assert!(said.contains(want), "{want:?} not in {said:?}");
    }
    assert!(text("status").contains("working"), "stderr lines are status events: {evs:?}");
    let notes = text("status");
    assert!(notes.contains("Uploaded 2 files: README.md, src/main.rs."), "{notes}");
    assert!(notes.contains("blob.bin (not UTF-8 text)"), "{notes}");
    let keys: Vec<&str> = evs.iter().map(|e| e["key"].as_str().unwrap()).collect();
    assert!(keys.iter().all(|k| k.starts_with("lease_abc-")), "{keys:?}");
    let mut unique = keys.clone();
    unique.dedup();
    assert_eq!(unique.len(), keys.len());

    let puts = posts(&srv, "PUT", "/v1/runner/files");
    let put_paths: Vec<&str> = puts.iter().map(|p| p["path"].as_str().unwrap()).collect();
    assert_eq!(put_paths, ["README.md", "src/main.rs"], "unchanged files are not uploaded");
    assert_eq!(puts[0]["content"], "# README\n");
    assert!(puts.iter().all(|p| p["lease_id"] == "lease_abc"));
    let all = posts(&srv, "POST", "/v1/runner/events");
    assert_eq!(all.last().unwrap()["done"], "completed");
    assert!(all[..all.len() - 1].iter().all(|p| p.get("done").is_none()));
    no_secret_in(&srv.requests());
    assert!(!log.contains(SESSION_TOKEN) && !log.contains(RUNNER_TOKEN), "{log}");
    assert_eq!(std::fs::read_dir(&scratch.0).unwrap().count(), 0, "the turn's folder is removed");
}

#[test]
fn a_file_the_agent_removed_is_deleted_from_the_task_folder_and_named() {
    let srv = runner_server(Beat::Fine, 0);
    let scratch = Scratch::new("runner-delete");
    let r = runner(&srv.url, &scratch, "rm docs/keep.md && echo removed");
    let outcome = r.run_turn(&turn(&srv.url), &mut Vec::new()).unwrap();
    assert_eq!(outcome, Outcome::Completed);
    let deletes: Vec<String> = srv
        .requests()
        .iter()
        .filter(|q| q.method == "DELETE")
        .map(|q| q.url.split_once('?').unwrap().1.to_owned())
        .collect();
    assert_eq!(deletes, ["lease_id=lease_abc&path=docs%2Fkeep.md"], "only the removed file, once");
    assert!(posts(&srv, "PUT", "/v1/runner/files").is_empty(), "nothing else changed");
    let notes: Vec<String> = events(&srv)
        .iter()
        .filter(|e| e["type"] == "status")
        .map(|e| e["text"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(notes.iter().any(|n| n.contains("Deleted 1 file: docs/keep.md.")), "{notes:?}");
}

#[test]
fn a_failing_command_fails_the_turn_with_an_error_event() {
    let srv = runner_server(Beat::Fine, 0);
    let scratch = Scratch::new("runner-fail");
    let r = runner(&srv.url, &scratch, "echo partial; exit 3");
    let outcome = r.run_turn(&turn(&srv.url), &mut Vec::new()).unwrap();
    assert!(matches!(&outcome, Outcome::Failed(why) if why.contains("exited with status 3")), "{outcome:?}");
    let evs = events(&srv);
    assert_eq!(evs[0]["text"], "partial");
    let err = evs.iter().find(|e| e["type"] == "error").expect("an error event");
    assert_eq!(err["message"], "the agent's command exited with status 3");
    assert_eq!(posts(&srv, "POST", "/v1/runner/events").last().unwrap()["done"], "failed");

    let missing = runner(&srv.url, &scratch, "");
    let missing = TurnRunner { command: vec!["/nonexistent/agent-cli".into()], ..missing };
    let srv2 = runner_server(Beat::Fine, 0);
    let missing = TurnRunner { client: Client::new(&srv2.url, RUNNER_TOKEN), ..missing };
    let outcome = missing.run_turn(&turn(&srv2.url), &mut Vec::new()).unwrap();
    assert!(matches!(&outcome, Outcome::Failed(why) if why.contains("127")), "{outcome:?}");
    let said: Vec<String> = events(&srv2).iter().map(|e| e.to_string()).collect();
    assert!(said.iter().any(|e| e.contains("cannot run `/nonexistent/agent-cli`: not found")), "{said:?}");
}

#[test]
fn output_whose_post_failed_is_sent_again_with_the_same_keys() {
    let srv = runner_server(Beat::Fine, 2);
    let scratch = Scratch::new("runner-retry");
    let r = runner(&srv.url, &scratch, "echo one; sleep 1; echo two");
    assert_eq!(r.run_turn(&turn(&srv.url), &mut Vec::new()).unwrap(), Outcome::Completed);
    let all = posts(&srv, "POST", "/v1/runner/events");
    let first_keys: Vec<Value> = all[0]["events"].as_array().unwrap().iter().map(|e| e["key"].clone()).collect();
    let second_keys: Vec<Value> = all[1]["events"].as_array().unwrap().iter().map(|e| e["key"].clone()).collect();
    assert_eq!(first_keys, second_keys[..first_keys.len()], "the retry repeats the keys");
    let evs = events(&srv);
    let said: Vec<&str> = evs.iter().filter_map(|e| e["text"].as_str()).collect();
    assert_eq!(said.iter().filter(|t| **t == "one").count(), 1, "{said:?}");
    assert!(said.contains(&"two"));
    // A server without the job channel or criteria (404): asked once each, and the turn is as before.
    let asked = |path: &str| srv.requests().iter().filter(|r| r.url.starts_with(path)).count();
    assert_eq!((asked("/v1/runner/jobs"), asked("/v1/runner/criteria")), (1, 1));
    assert!(all.iter().all(|p| p.get("checks").is_none()));
}

fn ends_the_group(beat: Beat, tag: &str) -> Outcome {
    let srv = runner_server(beat, 0);
    let scratch = Scratch::new(tag);
    let pidfile = scratch.0.join("bg.pid");
    let script = format!("sleep 60 & echo $! > '{}'; echo started; wait", pidfile.display());
    let r = runner(&srv.url, &scratch, &script);
    let started = Instant::now();
    let outcome = r.run_turn(&turn(&srv.url), &mut Vec::new()).unwrap();
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    let pid = std::fs::read_to_string(&pidfile).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(&pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!alive(&pid), "the command's background process {pid} outlived the turn");
    let done: Vec<Value> =
        posts(&srv, "POST", "/v1/runner/events").into_iter().filter(|p| p.get("done").is_some()).collect();
    assert!(done.is_empty(), "a stopped or lost turn is not ended by this runner: {done:?}");
    assert!(posts(&srv, "PUT", "/v1/runner/files").is_empty());
    outcome
}

#[test]
fn a_stopped_session_ends_the_commands_whole_process_group() {
    assert_eq!(ends_the_group(Beat::Stop, "runner-stop"), Outcome::Stopped);
}

#[test]
fn a_cancelled_turn_ends_the_commands_whole_process_group_and_says_so() {
    assert_eq!(ends_the_group(Beat::Cancel, "runner-cancel"), Outcome::Cancelled);
    assert!(Outcome::Cancelled.describe().starts_with("cancelled: the turn was cancelled"));
}

#[test]
fn a_lost_lease_ends_the_command() {
    assert!(matches!(ends_the_group(Beat::Lost, "runner-lost"), Outcome::LeaseLost(_)));
}

#[test]
fn the_supervisor_passes_stdin_and_status_through_and_dies_with_its_lifeline() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let scratch = Scratch::new("supervise");
    let input = scratch.0.join("message.txt");
    std::fs::write(&input, "the message").unwrap();
    let mut sup = Command::new(env!("CARGO_BIN_EXE_sky"))
        .args(["__supervise", input.to_str().unwrap(), "sh", "-c", "cat; exit 7"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let lifeline = sup.stdin.take();
    let mut said = String::new();
    std::io::Read::read_to_string(&mut sup.stdout.take().unwrap(), &mut said).unwrap();
    assert_eq!((sup.wait().unwrap().code(), said.as_str()), (Some(7), "the message"));
    drop(lifeline);

    let pidfile = scratch.0.join("pid");
    let script = format!("sleep 60 & echo $! > '{}'; wait", pidfile.display());
    let mut sup = Command::new(env!("CARGO_BIN_EXE_sky"))
        .args(["__supervise", input.to_str().unwrap(), "sh", "-c", &script])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lifeline = sup.stdin.take().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !pidfile.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = lifeline.write_all(b"x");
    std::thread::sleep(Duration::from_millis(300));
    assert!(sup.try_wait().unwrap().is_none(), "bytes on the lifeline are not an end");
    drop(lifeline);
    let started = Instant::now();
    let status = sup.wait().unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(status.code(), Some(143));
    let pid = std::fs::read_to_string(&pidfile).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(!alive(&pid), "the group's background process survived");
}

/// The binary: registers with the key, keeps the token 0600 and never prints it, then reuses the
/// token and the remembered command.
#[test]
fn sky_runner_registers_once_and_runs_a_turn() {
    const KEY: &str = "ast_WorkspaceKey0123456789abcdefghijklmnop";
    let registered = Arc::new(AtomicUsize::new(0));
    let claims = Arc::new(AtomicUsize::new(0));
    let (reg2, claims2) = (registered.clone(), claims.clone());
    let url = Arc::new(Mutex::new(String::new()));
    let url2 = url.clone();
    let srv = StandIn::start(move |req| {
        let reply = |status: u16, v: Value| (status, "application/json", v.to_string());
        match (req.method.as_str(), req.url.split('?').next().unwrap()) {
            ("POST", "/v1/runners") => {
                assert_eq!(req.header("authorization"), Some(&*format!("Bearer {KEY}")));
                assert_eq!(serde_json::from_str::<Value>(&req.body).unwrap()["name"], "e2e box");
                reg2.fetch_add(1, Ordering::SeqCst);
                reply(200, json!({"runner_id": "run_1", "token": RUNNER_TOKEN, "workspace": "ada"}))
            }
            _ if req.header("authorization") != Some(&format!("Bearer {RUNNER_TOKEN}")) => {
                reply(401, json!({"error": {"code": "unauthorized", "message": "unknown runner token"}}))
            }
            ("POST", "/v1/runner/claim") => {
                // Every other claim finds nothing.
                if claims2.fetch_add(1, Ordering::SeqCst) % 2 == 0 {
                    return (204, "", String::new());
                }
                let base = url2.lock().unwrap().clone();
                let mut t = json!({
                    "lease_id": "lease_bin", "lease_expires_ms": 0, "attempt": 1, "session_id": "ses_9", "task_id": "ses_9",
                    "message_id": "msg_9", "message": "hi", "history": [], "agent": {"name": "Coder"},
                    "session_token": SESSION_TOKEN, "session_server": format!("{base}/v1/session/mcp"),
                });
                t["agent"]["model"] = json!("m");
                reply(200, t)
            }
            ("GET", "/v1/runner/files") => reply(200, json!({"files": []})),
            ("POST", "/v1/runner/events") => reply(200, json!({"accepted": 1, "stop": false})),
            ("POST", "/v1/runner/heartbeat") => reply(200, json!({"stop": false})),
            _ => reply(404, json!({})),
        }
    });
    *url.lock().unwrap() = srv.url.clone();
    let home = Scratch::new("runner-bin");
    // The runner's own key and a provider token in its environment never reach the command.
    let sky = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_sky"))
            .args(args)
            .env("HOME", &home.0)
            .env_remove("XDG_CONFIG_HOME")
            .env("AGENTSKY_API_KEY", "ast_FromTheEnvironment0123456789abcdefgh")
            .env("GH_TOKEN", "ghp_runner_users_own_token")
            .env_remove("AGENTSKY_URL")
            .output()
            .unwrap()
    };
    let out = sky(&[
        "runner",
        "--server",
        &srv.url,
        "--key",
        KEY,
        "--name",
        "e2e box",
        "--once",
        "--",
        "sh",
        "-c",
        "echo \"replied gh=${GH_TOKEN:-none} key=${AGENTSKY_API_KEY:-none}\"",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("registered \"e2e box\" (run_1) in workspace ada") && stderr.contains("srt_RunnerTo…"),
        "{stderr}"
    );
    assert!(stderr.contains("turn msg_9: completed"), "{stderr}");
    assert!(!stderr.contains(RUNNER_TOKEN) && !stderr.contains(SESSION_TOKEN) && !stderr.contains(KEY), "{stderr}");
    let stored = home.0.join(".config/agentsky/runners.json");
    assert_eq!(mode(&stored), 0o600);
    let regs: Value = serde_json::from_str(&std::fs::read_to_string(&stored).unwrap()).unwrap();
    assert_eq!(regs["runners"][0]["token"], RUNNER_TOKEN);
    assert_eq!(regs["runners"][0]["command"][2], "echo \"replied gh=${GH_TOKEN:-none} key=${AGENTSKY_API_KEY:-none}\"");

    // Again, without key or command: the stored token and command are used.
    let out = sky(&["runner", "--server", &srv.url, "--name", "e2e box", "--once"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(registered.load(Ordering::SeqCst), 1, "registered once");
    let said: Vec<String> =
        srv.requests().iter().filter(|r| r.url == "/v1/runner/events").map(|r| r.body.clone()).collect();
    assert_eq!(said.iter().filter(|b| b.contains("replied gh=none key=none")).count(), 2, "{said:?}");

    // Another name without a key cannot register.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sky"))
        .args(["runner", "--server", &srv.url, "--name", "other", "--once", "--", "true"])
        .env("HOME", &home.0)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("AGENTSKY_API_KEY")
        .env_remove("AGENTSKY_URL")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("registers with a workspace key"));
    assert_eq!(registered.load(Ordering::SeqCst), 1);
}

/// A runner registered in one workspace and started with another workspace's key does not run that
/// workspace's turns under the first registration: it registers there too and says so; without a key it
/// says which workspaces the name is registered in, and `--workspace` picks one.
#[test]
fn a_key_of_another_workspace_never_reuses_this_workspaces_registration() {
    const KEY_A: &str = "ast_WorkspaceAda0123456789abcdefghijklmnop";
    const KEY_B: &str = "ast_WorkspaceBob0123456789abcdefghijklmnop";
    const TOKEN_A: &str = "srt_RunnerOfAda0123456789abcdefghijklmnopq";
    const TOKEN_B: &str = "srt_RunnerOfBob0123456789abcdefghijklmnopq";
    let claimed_by = Arc::new(Mutex::new(Vec::<String>::new()));
    let claims = claimed_by.clone();
    let srv = StandIn::start(move |req| {
        let reply = |status: u16, v: Value| (status, "application/json", v.to_string());
        let auth = req.header("authorization").map(|h| h.trim_start_matches("Bearer ").to_owned()).unwrap_or_default();
        let (slug, token) = match auth.as_str() {
            KEY_A | TOKEN_A => ("ada", TOKEN_A),
            KEY_B | TOKEN_B => ("bob", TOKEN_B),
            _ => return reply(401, json!({"error": {"code": "unauthorized", "message": "unknown"}})),
        };
        match (req.method.as_str(), req.url.split('?').next().unwrap()) {
            ("GET", "/v1/workspaces") => reply(200, json!({"workspaces": [{"slug": slug, "is_current": true}]})),
            ("POST", "/v1/runners") => {
                reply(200, json!({"runner_id": format!("run_{slug}"), "token": token, "workspace": slug}))
            }
            ("POST", "/v1/runner/claim") => {
                claims.lock().unwrap().push(slug.to_owned());
                let base = req.header("host").map(|h| format!("http://{h}")).unwrap_or_default();
                reply(
                    200,
                    json!({"lease_id": format!("lease_{slug}"), "attempt": 1, "session_id": "ses_w", "task_id": "ses_w",
                        "message_id": "msg_w", "message": "hi", "history": [], "agent": {"name": "Coder", "model": "m"},
                        "session_token": SESSION_TOKEN, "session_server": format!("{base}/v1/session/mcp")}),
                )
            }
            ("GET", "/v1/runner/files") => reply(200, json!({"files": []})),
            ("POST", "/v1/runner/events") => reply(200, json!({"accepted": 1, "stop": false})),
            ("POST", "/v1/runner/heartbeat") => reply(200, json!({"stop": false})),
            _ => reply(404, json!({"error": {"code": "not_found", "message": "no route"}})),
        }
    });
    let home = Scratch::new("runner-workspaces");
    let sky = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_sky"))
            .args(["runner", "--server", &srv.url, "--name", "shared box", "--once"])
            .args(args)
            .env("HOME", &home.0)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("AGENTSKY_API_KEY")
            .env_remove("AGENTSKY_URL")
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (code, said) = sky(&["--key", KEY_A, "--", "true"]);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("registered \"shared box\" (run_ada) in workspace ada"), "{said}");

    let (code, said) = sky(&["--key", KEY_B]);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("is registered in workspace ada, not in bob (this key's)"), "{said}");
    assert!(said.contains("(run_bob) in workspace bob on"), "{said}");
    assert_eq!(*claimed_by.lock().unwrap(), ["ada", "bob"], "bob's key claimed with bob's registration");

    // With a key again: each workspace's own registration, nothing registered anew.
    let (code, said) = sky(&["--key", KEY_A]);
    assert_eq!(code, Some(0), "{said}");
    assert!(!said.contains("registered \"") && said.contains("(run_ada) in workspace ada on"), "{said}");

    // Without a key it cannot tell which: it says so, and --workspace picks.
    let (code, said) = sky(&[]);
    assert_eq!(code, Some(1));
    assert!(said.contains("registered on") && said.contains("ada, bob") && said.contains("--workspace"), "{said}");
    let (code, said) = sky(&["--workspace", "bob"]);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("(run_bob) in workspace bob on"), "{said}");
    assert_eq!(*claimed_by.lock().unwrap(), ["ada", "bob", "ada", "bob"]);
    let regs: Value =
        serde_json::from_str(&std::fs::read_to_string(home.0.join(".config/agentsky/runners.json")).unwrap()).unwrap();
    assert_eq!(regs["runners"].as_array().unwrap().len(), 2, "{regs}");
}

/// A stand-in with the job channel: task files that PUTs change, `jobs` handed out (each once it is
/// released by an event whose text contains its trigger) through a long poll, their results recorded
/// and dropped into `mailbox/<job_id>.done` (the socket path, or the result) for the agent's script to
/// wait on, an ssh key, and the goal's criteria.
struct Face {
    files: Mutex<BTreeMap<String, String>>,
    /// `(trigger, job)`.
    jobs: Vec<(&'static str, Value)>,
    /// Applied to `files` when the first job is handed out: someone else's edits, and deletes.
    edits: Vec<(&'static str, &'static str)>,
    drops: Vec<&'static str>,
    criteria: Option<Value>,
    /// `GET /v1/runner/skills`'s answer (404 when `None`: a server without skills).
    skills: Option<Value>,
    ssh_key: Option<String>,
    /// The job poll answers `stop: true` (the session was stopped).
    stop: bool,
    mailbox: PathBuf,
    said: Mutex<String>,
    results: Mutex<Vec<Value>>,
}

impl Face {
    fn new(mailbox: &Scratch) -> Self {
        Face {
            files: Mutex::new(
                [("input.txt", "from the task\n"), ("docs/keep.md", "kept")]
                    .map(|(p, c)| (p.to_owned(), c.to_owned()))
                    .into(),
            ),
            jobs: vec![],
            edits: vec![],
            drops: vec![],
            criteria: None,
            skills: None,
            ssh_key: None,
            stop: false,
            mailbox: mailbox.0.clone(),
            said: Mutex::default(),
            results: Mutex::default(),
        }
    }

    fn result(&self, job_id: &str) -> Value {
        let all = self.results.lock().unwrap();
        all.iter().find(|r| r["job_id"] == job_id).map(|r| r["result"].clone()).unwrap_or(Value::Null)
    }

    /// The jobs released, not done and not in `seen`; the first hand-out applies `edits`.
    fn waiting(&self, seen: &Value) -> Vec<Value> {
        let said = self.said.lock().unwrap().clone();
        let done: Vec<Value> = self.results.lock().unwrap().iter().map(|r| r["job_id"].clone()).collect();
        let out: Vec<Value> = self
            .jobs
            .iter()
            .filter(|(trigger, job)| {
                said.contains(trigger)
                    && !done.contains(&job["job_id"])
                    && !seen.as_array().is_some_and(|s| s.contains(&job["job_id"]))
            })
            .map(|(_, job)| job.clone())
            .collect();
        if !out.is_empty() {
            let mut files = self.files.lock().unwrap();
            for (p, c) in &self.edits {
                files.insert(p.to_string(), c.to_string());
            }
            for p in &self.drops {
                files.remove(*p);
            }
        }
        out
    }

    fn serve(self) -> (StandIn, Arc<Face>) {
        let face = Arc::new(self);
        let f = face.clone();
        let srv = StandIn::start(move |req| {
            let reply = |status: u16, v: Value| (status, "application/json", v.to_string());
            if req.header("authorization") != Some(&format!("Bearer {RUNNER_TOKEN}")) {
                return reply(401, json!({"error": {"code": "unauthorized", "message": "unknown runner token"}}));
            }
            let body: Value = serde_json::from_str(&req.body).unwrap_or(Value::Null);
            match (req.method.as_str(), req.url.split('?').next().unwrap()) {
                ("GET", "/v1/runner/files") => {
                    let files = f.files.lock().unwrap();
                    let list: Vec<Value> =
                        files.iter().map(|(p, c)| json!({"path": p, "version": 1, "content": c})).collect();
                    reply(200, json!({ "files": list }))
                }
                ("PUT", "/v1/runner/files") => {
                    let (p, c) = (body["path"].as_str().unwrap(), body["content"].as_str().unwrap());
                    f.files.lock().unwrap().insert(p.to_owned(), c.to_owned());
                    reply(200, json!({"path": p, "version": 2}))
                }
                ("DELETE", "/v1/runner/files") => {
                    let path = req.url.split("path=").nth(1).unwrap_or_default().replace("%2F", "/");
                    let had = f.files.lock().unwrap().remove(&path).is_some();
                    reply(200, json!({"path": path, "deleted": had}))
                }
                ("POST", "/v1/runner/events") => {
                    let events = body["events"].as_array().unwrap();
                    for e in events {
                        f.said.lock().unwrap().push_str(&format!("{}\n", e["text"].as_str().unwrap_or_default()));
                    }
                    reply(200, json!({"accepted": events.len(), "stop": false}))
                }
                ("POST", "/v1/runner/heartbeat") => reply(200, json!({"stop": false})),
                ("POST", "/v1/runner/jobs") => {
                    assert_eq!(body["lease_id"], "lease_abc");
                    assert_eq!(body["wait_seconds"], 20);
                    if f.stop {
                        return reply(200, json!({"jobs": [], "stop": true}));
                    }
                    // A short long poll.
                    let until = Instant::now() + Duration::from_millis(400);
                    loop {
                        let jobs = f.waiting(&body["seen"]);
                        if !jobs.is_empty() || Instant::now() >= until {
                            return reply(200, json!({ "jobs": jobs, "stop": false }));
                        }
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
                ("POST", "/v1/runner/jobs/result") => {
                    let id = body["job_id"].as_str().unwrap().to_owned();
                    f.results.lock().unwrap().push(body.clone());
                    let note = body["result"]["socket_path"].as_str().map(str::to_owned);
                    let tmp = f.mailbox.join(format!(".{id}.tmp"));
                    std::fs::write(&tmp, note.unwrap_or_else(|| body["result"].to_string())).unwrap();
                    std::fs::rename(&tmp, f.mailbox.join(format!("{id}.done"))).unwrap();
                    reply(200, json!({"ok": true}))
                }
                ("POST", "/v1/runner/credential") => {
                    assert_eq!(body["scopes"], json!(["write"]), "a push needs write");
                    reply(
                        200,
                        json!({"kind": "env", "env": {"GIT_TOKEN": PUSH_TOKEN}, "scopes": ["write"], "ttl_s": 600}),
                    )
                }
                ("POST", "/v1/runner/ssh-key") => match &f.ssh_key {
                    Some(k) => reply(200, json!({ "private_key": k })),
                    None => reply(403, json!({"error": {"code": "forbidden", "message": "no key for this job"}})),
                },
                ("GET", "/v1/runner/skills") => match &f.skills {
                    Some(s) => reply(200, s.clone()),
                    None => reply(404, json!({"error": {"code": "not_found", "message": "no route"}})),
                },
                ("GET", "/v1/runner/criteria") => match &f.criteria {
                    Some(c) => reply(200, c.clone()),
                    None => reply(404, json!({"error": {"code": "not_found", "message": "no route"}})),
                },
                _ => reply(404, json!({"error": {"code": "not_found", "message": "no route"}})),
            }
        });
        (srv, face)
    }
}

/// The token a push job's grant gives.
const PUSH_TOKEN: &str = "ghp_PushToken0123456789abcdefghijklmnopqr";

fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git").arg("--git-dir").arg(dir).args(args).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A `push` job: the task's files become one commit on the remote's branch, with the message `land`
/// gave; a branch that moved since agentsky's last push is not overwritten (non-fast-forward), a push the
/// remote declines says why, and the grant's token is in no answer.
#[test]
fn a_push_job_commits_the_task_to_a_bare_repository_and_reports_refusals() {
    let mailbox = Scratch::new("jobs-push-box");
    let repos = Scratch::new("jobs-push-repos");
    let (remote, hooked) = (repos.0.join("remote.git"), repos.0.join("hooked.git"));
    // Outside the runner's --push-root: refused, though the runner user could write it.
    let outside = mailbox.0.join("outside.git");
    for bare in [&remote, &hooked, &outside] {
        let made = std::process::Command::new("git").args(["init", "-q", "--bare"]).arg(bare).status().unwrap();
        assert!(made.success());
    }
    let hook = hooked.join("hooks/pre-receive");
    std::fs::write(
        &hook,
        "#!/bin/sh
echo 'protected branch: pushes need review' >&2
exit 1
",
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut face = Face::new(&mailbox);
    let job = |id: &str, url: &std::path::Path, expected: Value| {
        json!({"job_id": id, "kind": "push", "url": url.display().to_string(), "branch": "main", "grant_id": "gr_git",
            "message": format!("{id}: the landed work\n\nagentsky commit cmt_1"), "expected_head": expected})
    };
    face.jobs = vec![
        ("ready1", job("push1", &remote, Value::Null)),
        ("ready2", job("push2", &remote, json!("0".repeat(40)))),
        ("ready3", job("push3", &hooked, Value::Null)),
        ("ready4", job("push4", &outside, Value::Null)),
    ];
    let (srv, face) = face.serve();
    let scratch = Scratch::new("jobs-push");
    let script = format!(
        r#"{WAIT_FOR}
        echo ready1; wait_for '{box}/push1.done'
        echo ready2; wait_for '{box}/push2.done'
        echo ready3; wait_for '{box}/push3.done'
        echo ready4; wait_for '{box}/push4.done'"#,
        box = mailbox.0.display()
    );
    let mut r = runner(&srv.url, &scratch, &script);
    r.push_roots = vec![repos.0.clone()];
    let mut log = Vec::new();
    let outcome = r.run_turn(&turn(&srv.url), &mut log).unwrap();
    assert_eq!(outcome, Outcome::Completed, "{}", String::from_utf8_lossy(&log));

    let first = face.result("push1");
    assert_eq!(first["ok"], true, "{first}");
    let head = first["head"].as_str().unwrap();
    assert_eq!(git(&remote, &["rev-parse", "main"]), head);
    assert_eq!(git(&remote, &["show", "main:input.txt"]), "from the task");
    assert_eq!(git(&remote, &["show", "main:docs/keep.md"]), "kept");
    assert_eq!(
        git(&remote, &["log", "-1", "--format=%s%n%b", "main"]),
        "push1: the landed work
agentsky commit cmt_1"
    );

    let moved = face.result("push2");
    assert_eq!(moved["ok"], false);
    assert!(moved["error"].as_str().unwrap().contains("non-fast-forward"), "{moved}");
    assert_eq!(git(&remote, &["rev-parse", "main"]), head, "the remote's branch is untouched");

    let declined = face.result("push3");
    assert_eq!(declined["ok"], false);
    assert!(declined["error"].as_str().unwrap().contains("protected branch: pushes need review"), "{declined}");
    let outside_root = face.result("push4");
    assert_eq!(outside_root["ok"], false);
    assert!(outside_root["error"].as_str().unwrap().contains("--push-root"), "{outside_root}");
    assert!(git(&outside, &["for-each-ref"]).is_empty(), "nothing pushed outside the roots");
    let all = face.results.lock().unwrap();
    assert!(!format!("{all:?}").contains(PUSH_TOKEN), "{all:?}");
    assert!(!String::from_utf8_lossy(&log).contains(PUSH_TOKEN));
}

/// A shell function for agent scripts: waits (up to 20 s) for a file.
const WAIT_FOR: &str = r#"wait_for() { n=0; while [ ! -f "$1" ]; do n=$((n+1)); [ $n -gt 200 ] && { echo "no $1" >&2; exit 9; }; sleep 0.1; done; }"#;

fn agent_output(srv: &StandIn, kind: &str) -> String {
    events(srv).iter().filter(|e| e["type"] == kind).filter_map(|e| e["text"].as_str()).collect::<Vec<_>>().join("\n")
}

#[test]
fn a_sync_job_uploads_the_agents_changes_and_refreshes_what_it_left_alone() {
    let mailbox = Scratch::new("jobs-sync-box");
    let mut face = Face::new(&mailbox);
    face.jobs = vec![("ready", json!({"job_id": "sync1", "kind": "sync"}))];
    face.edits = vec![("docs/keep.md", "kept v2")];
    let (srv, face) = face.serve();
    let scratch = Scratch::new("jobs-sync");
    let script = format!(
        r#"{WAIT_FOR}
        echo "agent's notes" > notes.md
        echo ready
        wait_for '{box}/sync1.done'
        echo "keep: $(cat docs/keep.md)"
        echo late > late.md"#,
        box = mailbox.0.display()
    );
    let r = runner(&srv.url, &scratch, &script);
    let mut log = Vec::new();
    let outcome = r.run_turn(&turn(&srv.url), &mut log).unwrap();
    assert_eq!(outcome, Outcome::Completed, "{}", String::from_utf8_lossy(&log));
    assert_eq!(
        face.result("sync1"),
        json!({"ok": true, "uploaded": ["notes.md"], "deleted": [], "refreshed": ["docs/keep.md"], "removed": [],
            "skipped": []})
    );
    assert!(agent_output(&srv, "agent_message").contains("keep: kept v2"), "{:?}", events(&srv));
    let puts: Vec<String> =
        posts(&srv, "PUT", "/v1/runner/files").iter().map(|p| p["path"].as_str().unwrap().to_owned()).collect();
    assert_eq!(puts, ["notes.md", "late.md"], "the end-of-turn upload sends neither the synced nor the refreshed");
    assert_eq!(face.files.lock().unwrap()["notes.md"], "agent's notes\n");
}

#[test]
fn a_sync_job_deletes_what_the_agent_removed_and_removes_what_the_lane_deleted() {
    let mailbox = Scratch::new("jobs-sync-del-box");
    let mut face = Face::new(&mailbox);
    face.jobs = vec![("ready", json!({"job_id": "sync1", "kind": "sync"}))];
    // The lane took the base's delete of docs/keep.md (a land's merge) while the agent worked.
    face.drops = vec!["docs/keep.md"];
    let (srv, face) = face.serve();
    let scratch = Scratch::new("jobs-sync-del");
    let script = format!(
        r#"{WAIT_FOR}
        rm input.txt
        echo ready
        wait_for '{box}/sync1.done'
        test -e docs/keep.md && echo "keep: still here" || echo "keep: removed""#,
        box = mailbox.0.display()
    );
    let r = runner(&srv.url, &scratch, &script);
    let mut log = Vec::new();
    let outcome = r.run_turn(&turn(&srv.url), &mut log).unwrap();
    assert_eq!(outcome, Outcome::Completed, "{}", String::from_utf8_lossy(&log));
    assert_eq!(
        face.result("sync1"),
        json!({"ok": true, "uploaded": [], "deleted": ["input.txt"], "refreshed": [], "removed": ["docs/keep.md"],
            "skipped": []})
    );
    assert!(agent_output(&srv, "agent_message").contains("keep: removed"), "{:?}", events(&srv));
    let deletes = srv.requests().iter().filter(|q| q.method == "DELETE").count();
    assert_eq!(deletes, 1, "the end of the turn does not delete again what the sync deleted");
    assert!(face.files.lock().unwrap().is_empty());
}

#[test]
fn a_sync_keeps_the_turns_skills_and_nothing_the_agent_left_alone_is_deleted() {
    let mailbox = Scratch::new("jobs-sync-keep-box");
    let mut face = Face::new(&mailbox);
    face.jobs = vec![("ready", json!({"job_id": "sync1", "kind": "sync"}))];
    // A task file under a folder the scan skips: written, never scanned, so never "deleted by the agent".
    face.files.lock().unwrap().insert("node_modules/dep.js".into(), "dep".into());
    face.skills = Some(json!({"skills": [{"name": "release-notes", "skill_md": "---\nname: release-notes\n---\n"}]}));
    let (srv, face) = face.serve();
    let scratch = Scratch::new("jobs-sync-keep");
    let script = format!(
        r#"{WAIT_FOR}
        echo ready
        wait_for '{box}/sync1.done'
        test -e .claude/skills/release-notes/SKILL.md && echo "skill: kept" || echo "skill: removed""#,
        box = mailbox.0.display()
    );
    let r = runner(&srv.url, &scratch, &script);
    let mut log = Vec::new();
    let outcome = r.run_turn(&turn(&srv.url), &mut log).unwrap();
    assert_eq!(outcome, Outcome::Completed, "{}", String::from_utf8_lossy(&log));
    assert_eq!(
        face.result("sync1"),
        json!({"ok": true, "uploaded": [], "deleted": [], "refreshed": [], "removed": [], "skipped": []})
    );
    assert!(agent_output(&srv, "agent_message").contains("skill: kept"), "{:?}", events(&srv));
    let deletes: Vec<String> = srv.requests().iter().filter(|q| q.method == "DELETE").map(|q| q.url.clone()).collect();
    assert!(deletes.is_empty(), "{deletes:?}");
    assert!(!face.said.lock().unwrap().contains("Deleted"));
    assert_eq!(face.files.lock().unwrap()["node_modules/dep.js"], "dep");
}

#[test]
fn a_run_job_reports_its_status_and_masked_output_while_the_agent_keeps_running() {
    let mailbox = Scratch::new("jobs-run-box");
    let mut face = Face::new(&mailbox);
    let run1 = r#"echo out; echo err >&2; echo "token $AGENTSKY_SESSION_TOKEN"; case "$PATH" in "$AGENTSKY_SHIM_DIR":*) echo "shims first";; esac; cat input.txt; exit 4"#;
    face.jobs = vec![
        ("ready", json!({"job_id": "run1", "kind": "run", "command": run1})),
        ("ready", json!({"job_id": "run2", "kind": "run", "command": "echo started; sleep 30", "timeout_s": 1})),
        ("ready", json!({"job_id": "run3", "kind": "run", "command": "touch run3.started; sleep 30"})),
    ];
    let (srv, face) = face.serve();
    let scratch = Scratch::new("jobs-run");
    let script = format!(
        "{WAIT_FOR}\necho ready\nwait_for '{box}/run2.done'\necho 'agent still here'\nwait_for run3.started",
        box = mailbox.0.display()
    );
    let r = runner(&srv.url, &scratch, &script);
    let started = Instant::now();
    let outcome = r.run_turn(&turn(&srv.url), &mut Vec::new()).unwrap();
    assert_eq!(outcome, Outcome::Completed);
    assert!(started.elapsed() < Duration::from_secs(15), "took {:?}", started.elapsed());
    assert_eq!(
        face.result("run1"),
        json!({"exit_code": 4, "timed_out": false,
            "output": "out\nerr\ntoken sst_SessionT…\nshims first\nfrom the task\n"})
    );
    assert_eq!(face.result("run2"), json!({"exit_code": null, "timed_out": true, "output": "started\n"}));
    // Still going when the agent's command exits: ended, and answered.
    assert_eq!(
        face.result("run3"),
        json!({"exit_code": null, "timed_out": false, "output": "",
            "error": "ended: the turn or the agent's command ended first"})
    );
    assert!(agent_output(&srv, "agent_message").contains("agent still here"));
    // The results came while the agent's command ran: before the turn's last post.
    let order: Vec<String> = srv.requests().iter().map(|r| r.url.clone()).collect();
    let last_result = order.iter().rposition(|u| u == "/v1/runner/jobs/result").unwrap();
    let done = order.iter().rposition(|u| u == "/v1/runner/events").unwrap();
    assert!(last_result < done);
    no_secret_in(&srv.requests());
}

#[test]
fn the_goals_criteria_run_after_the_command_and_ride_on_the_final_post() {
    let mailbox = Scratch::new("criteria-box");
    let mut face = Face::new(&mailbox);
    face.criteria = Some(json!({"commands": ["test -f done.txt", "false"]}));
    let (srv, _face) = face.serve();
    let scratch = Scratch::new("criteria");
    let r = runner(&srv.url, &scratch, "touch done.txt; exit 2");
    let outcome = r.run_turn(&turn(&srv.url), &mut Vec::new()).unwrap();
    assert!(matches!(outcome, Outcome::Failed(_)), "{outcome:?}");
    let all = posts(&srv, "POST", "/v1/runner/events");
    let last = all.last().unwrap();
    assert_eq!(last["done"], "failed");
    assert_eq!(
        last["checks"],
        json!([
            {"command": "test -f done.txt", "exit_code": 0, "timed_out": false, "output": ""},
            {"command": "false", "exit_code": 1, "timed_out": false, "output": ""},
        ])
    );
    assert!(all[..all.len() - 1].iter().all(|p| p.get("checks").is_none()));
    let notes = agent_output(&srv, "status");
    assert!(notes.contains("Goal criteria: `test -f done.txt` exited 0; `false` exited 1."), "{notes}");
    assert!(notes.contains("Uploaded 1 file: done.txt."), "{notes}");
}

fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
}

/// The processes whose command line names `needle`: `(pid, argv[0])`.
fn processes_naming(needle: &str) -> Vec<(String, String)> {
    let mut found = vec![];
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let pid = e.file_name().to_string_lossy().into_owned();
        if !pid.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let argv = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let argv: Vec<String> = argv.split(|b| *b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
        if argv.iter().any(|a| a.contains(needle)) {
            found.push((pid, argv[0].clone()));
        }
    }
    found
}

#[test]
fn an_ssh_agent_job_serves_the_key_from_the_turns_own_agent_which_ends_with_the_turn() {
    if !["ssh-agent", "ssh-add", "ssh-keygen"].iter().all(|t| on_path(t)) {
        eprintln!("skipped: ssh-agent, ssh-add or ssh-keygen is not on PATH");
        return;
    }
    let keys = Scratch::new("ssh-key");
    let key = keys.0.join("id");
    let made = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "sky-test", "-f"])
        .arg(&key)
        .status()
        .unwrap();
    assert!(made.success());
    let listed = std::process::Command::new("ssh-keygen").arg("-lf").arg(key.with_extension("pub")).output().unwrap();
    let fingerprint = String::from_utf8(listed.stdout).unwrap().split_whitespace().nth(1).unwrap().to_owned();
    let private_key = std::fs::read_to_string(&key).unwrap();

    let mailbox = Scratch::new("ssh-box");
    let mut face = Face::new(&mailbox);
    face.jobs = vec![
        ("ready", json!({"job_id": "ssh1", "kind": "ssh_agent", "grant_id": "gr_1", "ttl_s": 60})),
        ("again", json!({"job_id": "ssh2", "kind": "ssh_agent", "grant_id": "gr_1", "ttl_s": 60})),
        ("forget", json!({"job_id": "f1", "kind": "grant_forget", "grant_id": "gr_1", "ssh": true})),
    ];
    face.ssh_key = Some(private_key.clone());
    let (srv, face) = face.serve();
    let scratch = Scratch::new("ssh");
    let script = format!(
        "{WAIT_FOR}\necho ready\nwait_for '{box}/ssh1.done'\nSSH_AUTH_SOCK=\"$(cat '{box}/ssh1.done')\" ssh-add -l\nwait_for '{box}/go'\n\
         echo again\nwait_for '{box}/ssh2.done'\necho forget\nwait_for '{box}/f1.done'\n\
         if [ -e \"$(cat '{box}/ssh2.done')\" ]; then echo 'socket kept'; else echo 'socket gone'; fi\nwait_for '{box}/end'",
        box = mailbox.0.display()
    );
    let r = runner(&srv.url, &scratch, &script);
    let (t, url) = (turn(&srv.url), srv.url.clone());
    let turn_thread = std::thread::spawn(move || {
        let _ = url;
        r.run_turn(&t, &mut Vec::new()).unwrap()
    });

    let note = mailbox.0.join("ssh1.done");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !note.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let socket = std::fs::read_to_string(&note).unwrap_or_else(|_| panic!("no result: {:?}", face.result("ssh1")));
    let socket = std::path::PathBuf::from(socket);
    assert!(socket.is_absolute() && socket.ends_with("meta/ssh/agent.sock"), "{}", socket.display());
    assert!(socket.exists());
    assert_eq!(mode(socket.parent().unwrap()), 0o700);
    let agents: Vec<String> = processes_naming(&socket.to_string_lossy())
        .into_iter()
        .filter(|(_, argv0)| argv0.ends_with("ssh-agent"))
        .map(|(pid, _)| pid)
        .collect();
    assert_eq!(agents.len(), 1, "one ssh-agent for the turn");
    std::fs::write(mailbox.0.join("go"), "").unwrap();
    // A second key loads into the same agent; a revoked ssh grant (grant_forget) ends it mid-turn.
    let forgotten = mailbox.0.join("f1.done");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !forgotten.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(face.result("ssh2")["socket_path"], socket.to_string_lossy().as_ref(), "the same agent");
    assert_eq!(face.result("f1"), json!({"ok": true, "commands_ended": 0, "agent_ended": true}));
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(&agents[0]) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!alive(&agents[0]), "the revoked grant's agent still runs");
    std::fs::write(mailbox.0.join("end"), "").unwrap();
    assert_eq!(turn_thread.join().unwrap(), Outcome::Completed);
    assert!(agent_output(&srv, "agent_message").contains("socket gone"), "{:?}", events(&srv));

    assert!(agent_output(&srv, "agent_message").contains(&fingerprint), "{:?}", events(&srv));
    assert!(!socket.exists() && !socket.parent().unwrap().exists(), "the socket is gone with the turn");
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(&agents[0]) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!alive(&agents[0]), "the turn's ssh-agent outlived it");
    let asked = posts(&srv, "POST", "/v1/runner/ssh-key");
    assert_eq!(
        asked,
        [json!({"lease_id": "lease_abc", "job_id": "ssh1"}), json!({"lease_id": "lease_abc", "job_id": "ssh2"})]
    );
    let body = private_key.lines().nth(1).unwrap();
    assert!(srv.requests().iter().all(|r| !r.body.contains(body)), "the key was sent somewhere");
    assert_eq!(std::fs::read_dir(&scratch.0).unwrap().count(), 0, "the turn's folder is removed");
}

#[test]
fn an_ssh_agent_job_whose_key_is_refused_says_so() {
    if !on_path("ssh-agent") {
        eprintln!("skipped: ssh-agent is not on PATH");
        return;
    }
    let mailbox = Scratch::new("ssh-refused-box");
    let mut face = Face::new(&mailbox);
    face.jobs = vec![("ready", json!({"job_id": "ssh1", "kind": "ssh_agent", "grant_id": "gr_1", "ttl_s": null}))];
    let (srv, face) = face.serve();
    let scratch = Scratch::new("ssh-refused");
    let script = format!("{WAIT_FOR}\necho ready\nwait_for '{box}/ssh1.done'", box = mailbox.0.display());
    let r = runner(&srv.url, &scratch, &script);
    assert_eq!(r.run_turn(&turn(&srv.url), &mut Vec::new()).unwrap(), Outcome::Completed);
    let why = face.result("ssh1")["error"].as_str().unwrap_or_default().to_owned();
    assert!(why.contains("did not hand out the key") && why.contains("no key for this job"), "{why}");
}

#[test]
fn a_stop_heard_on_the_job_channel_ends_the_command() {
    let mailbox = Scratch::new("jobs-stop-box");
    let mut face = Face::new(&mailbox);
    face.stop = true;
    let (srv, _face) = face.serve();
    let scratch = Scratch::new("jobs-stop");
    let mut r = runner(&srv.url, &scratch, "echo started; sleep 30");
    // Heartbeats alone would not say it in time.
    r.timing.heartbeat = Duration::from_secs(60);
    let started = Instant::now();
    assert_eq!(r.run_turn(&turn(&srv.url), &mut Vec::new()).unwrap(), Outcome::Stopped);
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    assert!(posts(&srv, "POST", "/v1/runner/events").iter().all(|p| p.get("done").is_none()));
}
