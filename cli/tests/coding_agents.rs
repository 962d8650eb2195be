//! Claude Code and Codex as a runner's agents, with stand-ins for the CLIs: a script named `claude` or
//! `codex` first on the runner's `PATH` records how it was started (arguments, stdin, the MCP config, the
//! thinking budget) and prints the real CLI's stream, captured from the real CLI against a stub model
//! (`fixtures/agents/`). Asserted: the runner needs no command for them, writes their per-turn
//! configuration, turns their streams into typed events, continues the conversation on the next turn, and
//! starts fresh with a summary where it cannot; a missing CLI and a `runner` agent without a command fail
//! the turn saying what to do.

mod support;

use agentsky_wire::runner::AgentView;
use serde_json::{json, Value};
use sky::runner_client::{Client, Turn};
use sky::turn::{Outcome, TurnRunner};
use std::path::{Path, PathBuf};
use support::{Scratch, StandIn};

const RUNNER_TOKEN: &str = "srt_RunnerToken0123456789abcdefghijklmnop";
const SESSION_TOKEN: &str = "sst_SessionToken0123456789abcdefghijklmno";
const CLAUDE_SESSION: &str = "a0876782-95a8-4afc-9f5d-b195a5dcc450";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agents").join(name)
}

/// The runner face, for turns with no files: events accepted, heartbeats fine, everything else 404.
fn server() -> StandIn {
    StandIn::start(move |req| {
        let reply = |status: u16, v: Value| (status, "application/json", v.to_string());
        match (req.method.as_str(), req.url.split('?').next().unwrap()) {
            ("GET", "/v1/runner/files") => reply(200, json!({"files": []})),
            ("POST", "/v1/runner/events") => {
                let n = serde_json::from_str::<Value>(&req.body).unwrap()["events"].as_array().unwrap().len();
                reply(200, json!({"accepted": n, "stop": false}))
            }
            ("POST", "/v1/runner/heartbeat") => reply(200, json!({"lease_expires_ms": 1, "stop": false})),
            _ => reply(404, json!({"error": {"code": "not_found", "message": "no route"}})),
        }
    })
}

/// Every event posted, in order (a retried post counted once).
fn events(srv: &StandIn) -> Vec<Value> {
    let mut seen = Vec::<Value>::new();
    for r in srv.requests().iter().filter(|r| r.url == "/v1/runner/events") {
        let post: Value = serde_json::from_str(&r.body).unwrap();
        for e in post["events"].as_array().unwrap() {
            if !seen.iter().any(|s| s["key"] == e["key"]) {
                seen.push(e.clone());
            }
        }
    }
    seen
}

fn turn(server: &str, harness: &str, message_id: &str, history: Value) -> Turn {
    let message = history.as_array().unwrap().last().unwrap()["text"].clone();
    serde_json::from_value::<Turn>(json!({
        "lease_id": format!("lease_{message_id}"), "attempt": 1, "session_id": "ses_1", "task_id": "ses_1",
        "message_id": message_id, "message": message, "history": history,
        "agent": {"agent_id": "ag_1", "name": "Coder", "harness": harness, "model": "claude-sonnet-4-5",
                  "thinking": "high", "instructions": "Write code."},
        "session_token": SESSION_TOKEN, "session_server": format!("{server}/v1/session/mcp"),
        "help_server": format!("{server}/v1/help/mcp"),
    }))
    .unwrap()
}

/// A stand-in CLI named `name` in `bin`: each run `n` writes `<log>/<n>.args` (one argument a line),
/// `<log>/<n>.stdin`, `<log>/<n>.env` (the thinking budget) and a copy of the `--mcp-config` file, then prints
/// `turn1` or, when resumed, `turn2`.
fn stand_in_cli(bin: &Path, log: &Path, name: &str, turn1: &Path, turn2: &Path) {
    std::fs::create_dir_all(bin).unwrap();
    std::fs::create_dir_all(log).unwrap();
    let script = format!(
        r#"#!/bin/sh
log='{log}'
n=$(ls "$log" | grep -c '\.args$')
n=$((n + 1))
printf '%s\n' "$@" > "$log/$n.args"
cat > "$log/$n.stdin"
printf '%s' "${{MAX_THINKING_TOKENS:-unset}}" > "$log/$n.env"
resumed=no
while [ $# -gt 0 ]; do
  case "$1" in
    --mcp-config) cp "$2" "$log/$n.mcp.json"; shift ;;
    --resume|resume) resumed=yes ;;
  esac
  shift
done
if [ $resumed = yes ]; then cat '{turn2}'; else cat '{turn1}'; fi
"#,
        log = log.display(),
        turn1 = turn1.display(),
        turn2 = turn2.display(),
    );
    let exe = bin.join(name);
    std::fs::write(&exe, script).unwrap();
    #[cfg(unix)]
    std::fs::set_permissions(&exe, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
}

fn runner(server: &str, scratch: &Path, bin: Option<&Path>) -> TurnRunner {
    let mut dirs: Vec<PathBuf> = bin.into_iter().map(Path::to_owned).collect();
    dirs.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap()));
    TurnRunner {
        client: Client::new(server, RUNNER_TOKEN),
        command: vec![],
        sky_exe: env!("CARGO_BIN_EXE_sky").into(),
        path: Some(std::env::join_paths(dirs).unwrap()),
        scratch: scratch.to_owned(),
        push_roots: vec![],
        timing: support::quick_timing(),
        grants: Default::default(),
        conversations: Default::default(),
    }
}

fn read(p: PathBuf) -> String {
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn args(log: &Path, n: usize) -> Vec<String> {
    read(log.join(format!("{n}.args"))).lines().map(str::to_owned).collect()
}

/// The value after `flag` in `argv`.
fn after<'a>(argv: &'a [String], flag: &str) -> Option<&'a str> {
    argv.iter().position(|a| a == flag).and_then(|i| argv.get(i + 1)).map(String::as_str)
}

fn one_message() -> Value {
    json!([{"role": "user", "text": "write out.txt"}])
}

fn two_turns() -> Value {
    json!([
        {"role": "user", "text": "write out.txt"},
        {"role": "agent", "text": "done: 2 tool results, out.txt written"},
        {"role": "user", "text": "and again"},
    ])
}

#[test]
fn claude_code_runs_with_its_own_configuration_and_its_stream_becomes_typed_events() {
    let srv = server();
    let scratch = Scratch::new("claude-code");
    let (bin, log) = (scratch.0.join("bin"), scratch.0.join("log"));
    let turn2 = fixture("claude-code-turn2-resume.jsonl");
    stand_in_cli(&bin, &log, "claude", &fixture("claude-code-turn1.jsonl"), &turn2);
    let r = runner(&srv.url, &scratch.0.join("turns"), Some(&bin));
    std::fs::create_dir_all(scratch.0.join("turns")).unwrap();
    let mut out = Vec::new();
    let outcome = r.run_turn(&turn(&srv.url, "claude-code", "msg_1", one_message()), &mut out).unwrap();
    assert_eq!(outcome, Outcome::Completed, "{}", String::from_utf8_lossy(&out));

    // Started as `claude -p` with a per-turn MCP config naming both servers, and never the person's own.
    let argv = args(&log, 1);
    for flag in ["-p", "--verbose", "--strict-mcp-config"] {
        assert!(argv.contains(&flag.to_owned()), "{argv:?}");
    }
    assert_eq!(after(&argv, "--output-format"), Some("stream-json"));
    assert_eq!(after(&argv, "--model"), Some("claude-sonnet-4-5"));
    assert_eq!(after(&argv, "--append-system-prompt"), Some("Write code."));
    assert_eq!(after(&argv, "--resume"), None, "a first turn starts a conversation");
    let mcp: Value = serde_json::from_str(&read(log.join("1.mcp.json"))).unwrap();
    assert_eq!(mcp["mcpServers"]["agentsky"]["args"], json!(["mcp", "--server", srv.url]));
    assert_eq!(mcp["mcpServers"]["agentsky_help"]["url"], format!("{}/v1/help/mcp", srv.url));
    assert!(!mcp.to_string().contains(SESSION_TOKEN));
    assert_eq!(read(log.join("1.stdin")), "write out.txt");
    assert_eq!(read(log.join("1.env")), "32000", "thinking `high` is Claude Code's budget");

    // The stream, as a person reads it: messages, each tool call with its result, the usage; no JSON lines.
    let evs = events(&srv);
    let kinds: Vec<(&str, String)> = evs
        .iter()
        .map(|e| {
            let what = match e["type"].as_str().unwrap() {
                "tool_call" | "tool_result" => e["name"].as_str().unwrap().to_owned(),
                "error" => e["message"].as_str().unwrap().to_owned(),
                _ => e["text"].as_str().unwrap().chars().take(40).collect(),
            };
            (e["type"].as_str().unwrap(), what)
        })
        .collect();
    let want: Vec<(&str, String)> = vec![
        ("status", "Claude Code started (claude-sonnet-4-5)".into()),
        ("agent_message", "Reporting status and writing the file.".into()),
        ("tool_call", "agentsky.report_status".into()),
        ("tool_call", "Bash".into()),
        ("tool_result", "agentsky.report_status".into()),
        ("tool_result", "Bash".into()),
        ("agent_message", "done: 2 tool results, out.txt written".into()),
        ("status", "usage: 740 input tokens (400 cached), 60".into()),
    ];
    assert_eq!(&kinds[..want.len()], &want[..], "{evs:#?}");
    let call = evs.iter().find(|e| e["type"] == "tool_call" && e["name"] == "Bash").unwrap();
    assert_eq!(call["arguments"]["command"], "echo hi > out.txt");
    let result = evs.iter().find(|e| e["type"] == "tool_result" && e["name"] == "agentsky.report_status").unwrap();
    assert_eq!((result["content"].as_str(), &result["is_error"]), (Some("status noted: starting"), &json!(false)));
    let usage = &evs.iter().find(|e| e["usage"].is_object()).unwrap()["usage"];
    assert_eq!(usage["cost_usd"], 0.002115);
    // The server hears the turn's usage with the events (here the CLI's own figure at its end: the stand-in
    // printed every line at once, and the newest usage replaces an unposted older one).
    let posted: Vec<Value> = srv
        .requests()
        .iter()
        .filter(|r| r.url == "/v1/runner/events")
        .filter_map(|r| serde_json::from_str::<Value>(&r.body).ok()?.get("usage").cloned())
        .collect();
    assert_eq!(posted.last().unwrap()["cost_usd"], 0.002115, "{posted:?}");
    assert_eq!(posted.last().unwrap()["input_tokens"], 740);
    // Each model call's tokens while the turn runs, from the same captured stream.
    let mut stream = sky::harness::mapper(sky::harness::Harness::ClaudeCode, None).unwrap();
    let progress: Vec<i64> = read(fixture("claude-code-turn1.jsonl"))
        .lines()
        .flat_map(|l| stream.line(l))
        .filter_map(|m| match m {
            sky::harness::Mapped::Progress(u) => Some(u.input_tokens),
            _ => None,
        })
        .collect();
    assert_eq!(progress, [370, 740], "once per model call, the turn's total so far");
    assert!(!evs.iter().any(|e| e.to_string().contains("\\\"type\\\":\\\"assistant\\\"")), "no raw lines");

    // The next message continues Claude Code's own conversation, with the message alone.
    let outcome = r.run_turn(&turn(&srv.url, "claude-code", "msg_2", two_turns()), &mut out).unwrap();
    assert_eq!(outcome, Outcome::Completed);
    assert_eq!(after(&args(&log, 2), "--resume"), Some(CLAUDE_SESSION));
    assert_eq!(read(log.join("2.stdin")), "and again");

    // A runner that never ran the session starts a new conversation, given the session so far.
    let fresh = runner(&srv.url, &scratch.0.join("turns"), Some(&bin));
    let outcome = fresh.run_turn(&turn(&srv.url, "claude-code", "msg_3", two_turns()), &mut out).unwrap();
    assert_eq!(outcome, Outcome::Completed);
    assert_eq!(after(&args(&log, 3), "--resume"), None);
    let prompt = read(log.join("3.stdin"));
    assert!(prompt.contains("you: done: 2 tool results, out.txt written"), "{prompt}");
    assert!(prompt.ends_with("The new message:\n\nand again"), "{prompt}");
    assert!(events(&srv)
        .iter()
        .any(|e| e["text"].as_str().is_some_and(|t| t.contains("summary of the session so far"))));
}

#[test]
fn a_missing_cli_or_a_runner_agent_without_a_command_fails_the_turn_saying_what_to_do() {
    let srv = server();
    let scratch = Scratch::new("no-cli");
    let r = runner(&srv.url, &scratch.0, None);
    let mut out = Vec::new();
    // `claude` is not on this PATH (the stand-in is not there): the turn fails naming the package.
    let r = TurnRunner { path: Some(scratch.0.as_os_str().to_owned()), ..r };
    let outcome = r.run_turn(&turn(&srv.url, "claude-code", "msg_1", one_message()), &mut out).unwrap();
    assert!(matches!(outcome, Outcome::Failed(_)), "{outcome:?}");
    let said = events(&srv).iter().map(|e| e.to_string()).collect::<String>();
    assert!(said.contains("npm install -g @anthropic-ai/claude-code"), "{said}");
    let outcome = r.run_turn(&turn(&srv.url, "runner", "msg_2", one_message()), &mut out).unwrap();
    assert!(matches!(outcome, Outcome::Failed(_)));
    let said = events(&srv).iter().map(|e| e.to_string()).collect::<String>();
    assert!(said.contains("sky runner -- <command…>"), "{said}");
}

#[test]
fn codex_runs_with_overrides_its_items_become_typed_events_and_its_thread_continues() {
    let srv = server();
    let scratch = Scratch::new("codex");
    let (bin, log) = (scratch.0.join("bin"), scratch.0.join("log"));
    stand_in_cli(&bin, &log, "codex", &fixture("codex-turn1.jsonl"), &fixture("codex-turn2-resume.jsonl"));
    let r = runner(&srv.url, &scratch.0, Some(&bin));
    let mut out = Vec::new();
    let outcome = r.run_turn(&turn(&srv.url, "codex", "msg_1", one_message()), &mut out).unwrap();
    assert_eq!(outcome, Outcome::Completed, "{}", String::from_utf8_lossy(&out));

    let argv = args(&log, 1);
    assert_eq!(&argv[..3], ["exec", "--json", "--skip-git-repo-check"], "{argv:?}");
    assert_eq!(argv.last().map(String::as_str), Some("-"), "the message on stdin");
    let overrides: Vec<&str> =
        argv.iter().zip(&argv[1..]).filter(|(a, _)| *a == "-c").map(|(_, v)| v.as_str()).collect();
    let sky = env!("CARGO_BIN_EXE_sky");
    for want in [
        format!("mcp_servers.agentsky.command=\"{sky}\""),
        format!("mcp_servers.agentsky_help.url=\"{}/v1/help/mcp\"", srv.url),
        "mcp_servers.agentsky.default_tools_approval_mode=\"approve\"".to_owned(),
        "model_reasoning_effort=\"high\"".to_owned(),
        "developer_instructions=\"Write code.\"".to_owned(),
    ] {
        assert!(overrides.contains(&want.as_str()), "{want} not in {overrides:?}");
    }
    assert_eq!(read(log.join("1.stdin")), "write out.txt");

    let evs = events(&srv);
    let seq: Vec<String> = evs
        .iter()
        .map(|e| format!("{} {}", e["type"].as_str().unwrap(), e["name"].as_str().or(e["text"].as_str()).unwrap_or("")))
        .collect();
    assert_eq!(
        &seq[..6],
        [
            "tool_call agentsky.report_status",
            "tool_result agentsky.report_status",
            "tool_call shell",
            "tool_result shell",
            "agent_message done: 2 tool outputs, out.txt written",
            "status usage: 3600 input tokens (2400 cached), 120 output tokens",
        ],
        "{evs:#?}"
    );
    let result = evs.iter().find(|e| e["type"] == "tool_result" && e["name"] == "agentsky.report_status").unwrap();
    assert_eq!(result["content"], "status noted: starting");

    // The thread goes on; the usage shown is this turn's, not the thread's total.
    r.run_turn(&turn(&srv.url, "codex", "msg_2", two_turns()), &mut out).unwrap();
    let argv = args(&log, 2);
    assert_eq!(&argv[..3], ["exec", "resume", "01a2489c-d48a-76a3-99b6-2c744744fe06"], "{argv:?}");
    assert_eq!(read(log.join("2.stdin")), "and again");
    let usage = events(&srv).into_iter().rev().find(|e| e["usage"].is_object()).unwrap();
    assert_eq!(usage["usage"]["input_tokens"], 1200);
}

/// A first turn's setup on a fixed server and `sky`, so the golden file does not depend on this machine.
fn setup<'a>(agent: &'a AgentView, meta: &'a Path) -> sky::harness::Setup<'a> {
    sky::harness::Setup {
        agent,
        meta,
        sky_exe: Path::new("/opt/sky/bin/sky"),
        server: "https://agentsky.example",
        help_server: "https://agentsky.example/v1/help/mcp",
        resume: None,
    }
}

/// What each CLI is started with for each `tool_approval`, compared with the golden files in
/// `fixtures/agents/` (`UPDATE_GOLDEN=1` rewrites them): the Claude Code MCP config and arguments, and
/// Codex's arguments with its `-c` overrides.
#[test]
fn each_clis_configuration_matches_its_golden_file() {
    use sky::harness::{codex, launch, Harness, Setup};
    let scratch = Scratch::new("golden");
    let mut out = String::new();
    for approval in ["outside_folder", "every_change", "none"] {
        let agent: AgentView = serde_json::from_value(json!({
            "harness": "claude-code", "model": "claude-sonnet-4-5", "thinking": "medium",
            "instructions": "Write code.", "tool_approval": approval,
        }))
        .unwrap();
        let meta = scratch.0.join(approval);
        std::fs::create_dir_all(&meta).unwrap();
        let setup = setup(&agent, &meta);
        let claude = launch(Harness::ClaudeCode, Path::new("/usr/bin/claude"), &setup).unwrap();
        let argv = claude.argv.join("\n").replace(&meta.display().to_string(), "<meta>");
        let env: Vec<String> = claude.env.iter().map(|(k, v)| format!("{k}={}", v.to_string_lossy())).collect();
        out.push_str(&format!(
            "## claude-code, tool_approval {approval}\n\nargv:\n{argv}\n\nenv:\n{}\n\n",
            env.join("\n")
        ));
        if approval == "outside_folder" {
            out.push_str(&format!("claude-mcp.json:\n{}\n", read(meta.join("claude-mcp.json"))));
        }
        let resumed = Setup { resume: Some("01a2489c"), ..setup };
        for (name, s) in [("first turn", &setup), ("resumed", &resumed)] {
            let mut argv = codex::launch(Path::new("/usr/bin/codex"), s).unwrap().argv;
            // The runner's own `OPENAI_BASE_URL` is not part of the golden file: the overrides with one are.
            argv.retain(|a| !a.contains("agentsky_openai"));
            out.push_str(&format!("## codex, tool_approval {approval}, {name}\n\nargv:\n{}\n\n", argv.join("\n")));
        }
    }
    let agent: AgentView = serde_json::from_value(json!({"harness": "codex", "model": "gpt-5-codex"})).unwrap();
    let meta = scratch.0.join("provider");
    let with_provider = codex::overrides(&setup(&agent, &meta), Some("http://127.0.0.1:4000/v1"));
    out.push_str(&format!("## codex, OPENAI_BASE_URL set, -c overrides\n\n{}\n", with_provider.join("\n")));
    let golden = fixture("launch.golden.md");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &out).unwrap();
    }
    assert_eq!(out, read(golden), "a launch changed: rerun with UPDATE_GOLDEN=1 and read the diff");
}
