//! Company skills in a runner's turn: the workspace's skills (`GET /v1/runner/skills`) are in the turn's
//! folder where Claude Code and Codex read project skills, and are not uploaded back as the agent's work.

mod support;

use serde_json::{json, Value};
use sky::runner_client::{Client, Turn};
use sky::turn::{Outcome, TurnRunner};
use support::{Scratch, StandIn};

const RUNNER_TOKEN: &str = "srt_RunnerToken0123456789abcdefghijklmnop";
const SKILL_MD: &str = "---\nname: release-notes\ndescription: Write release notes.\n---\nGroup by area.\n";

fn server() -> StandIn {
    StandIn::start(move |req| {
        let reply = |status: u16, v: Value| (status, "application/json", v.to_string());
        match (req.method.as_str(), req.url.split('?').next().unwrap()) {
            ("GET", "/v1/runner/files") => reply(200, json!({"files": []})),
            ("GET", "/v1/runner/skills") => reply(
                200,
                json!({"skills": [
                    {"name": "release-notes", "skill_md": SKILL_MD, "files": {"templates/entry.md": "- {title}"}},
                    {"name": "../escape", "skill_md": "x", "files": {}},
                ]}),
            ),
            ("PUT", "/v1/runner/files") => reply(200, json!({"path": "x", "version": 1})),
            ("POST", "/v1/runner/events") => {
                let n = serde_json::from_str::<Value>(&req.body).unwrap()["events"].as_array().unwrap().len();
                reply(200, json!({"accepted": n, "stop": false}))
            }
            ("POST", "/v1/runner/heartbeat") => reply(200, json!({"lease_expires_ms": 1, "stop": false})),
            _ => reply(404, json!({"error": {"code": "not_found", "message": "no route"}})),
        }
    })
}

#[test]
fn the_workspaces_skills_are_where_claude_code_and_codex_read_them_and_are_not_uploaded() {
    let srv = server();
    let scratch = Scratch::new("runner-skills");
    let script = r##"
        test "$(cat .claude/skills/release-notes/SKILL.md)" = "$(printf -- '---\nname: release-notes\ndescription: Write release notes.\n---\nGroup by area.')" && echo "claude ok"
        cmp -s .claude/skills/release-notes/SKILL.md .codex/skills/release-notes/SKILL.md && echo "codex ok"
        test "$(cat .codex/skills/release-notes/templates/entry.md)" = "- {title}" && echo "files ok"
        test -e ../escape || test -e .claude/escape || echo "no escape"
        echo "# notes" > NOTES.md
    "##;
    let r = TurnRunner {
        client: Client::new(&srv.url, RUNNER_TOKEN),
        command: vec!["sh".into(), "-c".into(), script.into()],
        sky_exe: env!("CARGO_BIN_EXE_sky").into(),
        path: std::env::var_os("PATH"),
        scratch: scratch.0.clone(),
        push_roots: vec![],
        timing: support::quick_timing(),
        grants: Default::default(),
        conversations: Default::default(),
    };
    let turn = serde_json::from_value::<Turn>(json!({
        "lease_id": "lease_abc", "lease_expires_ms": 0, "attempt": 1, "session_id": "ses_1", "task_id": "ses_1",
        "message_id": "msg_1", "message": "notes", "history": [],
        "agent": {"agent_id": "ag_1", "name": "Coder", "model": "script", "instructions": ""},
        "session_token": "sst_x", "session_server": format!("{}/v1/session/mcp", srv.url),
    }))
    .unwrap();
    let mut log = Vec::new();
    assert_eq!(r.run_turn(&turn, &mut log).unwrap(), Outcome::Completed, "{}", String::from_utf8_lossy(&log));
    let requests = srv.requests();
    let said: String =
        requests.iter().filter(|q| q.url.starts_with("/v1/runner/events")).map(|q| q.body.clone()).collect();
    for want in ["claude ok", "codex ok", "files ok", "no escape", "left out"] {
        assert!(said.contains(want), "{want:?} not in {said}");
    }
    let puts: Vec<Value> = requests
        .iter()
        .filter(|q| q.method == "PUT")
        .map(|q| serde_json::from_str::<Value>(&q.body).unwrap()["path"].clone())
        .collect();
    assert_eq!(puts, [json!("NOTES.md")], "the skills are not uploaded as the agent's work");
}
