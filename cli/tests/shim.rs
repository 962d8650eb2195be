//! The provider CLI shims against a stand-in session server and stand-in CLIs, outside a runner's turn (in
//! one the runner runs the command: `tests/granted.rs`): a granted command runs the real CLI with the
//! credential's variables; a remembered grant is reused (also one the agent got through
//! `sky mcp`); denied, pending, ambiguous and missing-CLI cases do not run it and exit with their codes;
//! commands that need no account run at once; ssh to a project's ssh target runs with the runner's
//! ssh-agent socket, the target picked by the destination host.

mod support;

use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use support::{Scratch, StandIn};

const SESSION_TOKEN: &str = "sst_ShimSession0123456789abcdefghijklmnopq";

/// A session server whose `request_access` answers `answer` (`active`, `denied` or `pending`).
fn session_server(answer: &'static str) -> StandIn {
    StandIn::start(move |req| {
        if req.header("authorization") != Some(&format!("Bearer {SESSION_TOKEN}")) {
            return (401, "application/json", json!({"error": {"code": "unauthorized", "message": "no"}}).to_string());
        }
        let msg: Value = serde_json::from_str(&req.body).unwrap();
        let args = &msg["params"]["arguments"];
        let result = match msg["params"]["name"].as_str().unwrap_or_default() {
            "list_targets" => {
                let mut t = json!([
                    {"id": "con_web", "name": "web", "provider": "vercel", "env": "prod", "lockState": "locked", "scopes": []},
                    {"id": "con_pre", "name": "web-preview", "provider": "vercel", "env": "preview", "lockState": "locked", "scopes": []},
                    {"id": "con_db", "name": "db", "provider": "supabase", "env": "prod", "lockState": "unconnected", "scopes": []},
                ]);
                if answer == "with-ssh" {
                    for name in ["box", "web-1"] {
                        t.as_array_mut().unwrap().push(json!({"id": format!("con_{name}"), "name": name, "provider": "ssh", "env": "prod", "lockState": "locked", "scopes": []}));
                    }
                }
                t
            }
            "request_access" => match answer {
                "active" | "with-ssh" => json!({"status": "active", "grantId": "gr_new", "scope": args["scope"], "expiresAt": null, "decidedBy": "user"}),
                "denied" => json!({"status": "denied", "grantId": "gr_new"}),
                _ => json!({"status": "pending", "grantId": "gr_new", "queuePosition": 1}),
            },
            "check_grant" => {
                json!({"status": "active", "grantId": args["grantId"], "scope": ["read", "deploy"], "expiresAt": null, "decidedBy": "user"})
            }
            "get_credential" if answer == "with-ssh" => {
                json!({"kind": "ssh-agent", "env": {"SSH_AUTH_SOCK": "/tmp/turn/meta/ssh/agent.sock"}, "socketPath": "/tmp/turn/meta/ssh/agent.sock", "expiresAt": null, "scoped": true})
            }
            "get_credential" => {
                json!({"kind": "env", "env": {"VERCEL_TOKEN": "vt-123", "VERCEL_ORG_ID": "team_1"}, "socketPath": null, "expiresAt": null, "scoped": false})
            }
            other => {
                return (
                    200,
                    "application/json",
                    json!({"jsonrpc": "2.0", "id": msg["id"], "result": {"content": [{"type": "text", "text": format!("unknown tool {other} (code -32601)")}], "isError": true}}).to_string(),
                )
            }
        };
        let body = json!({"jsonrpc": "2.0", "id": msg["id"], "result": {"content": [{"type": "text", "text": result.to_string()}], "isError": false}});
        (200, "application/json", body.to_string())
    })
}

struct Setup {
    dir: Scratch,
}

impl Setup {
    /// A shim directory, and a `bin` with a stand-in `vercel` that prints what it got.
    fn new(tag: &str) -> Self {
        let dir = Scratch::new(tag);
        std::fs::create_dir_all(dir.0.join("shims")).unwrap();
        std::fs::create_dir_all(dir.0.join("bin")).unwrap();
        sky::shim::install(Path::new(env!("CARGO_BIN_EXE_sky")), &dir.0.join("shims")).unwrap();
        for (name, script) in [
            ("vercel", "echo \"vercel ran: $*\"\necho \"VERCEL_TOKEN=${VERCEL_TOKEN:-none} VERCEL_ORG_ID=${VERCEL_ORG_ID:-none}\"\n[ \"$2\" != fail ]"),
            ("ssh", "echo \"ssh ran: $*\"\necho \"SSH_AUTH_SOCK=${SSH_AUTH_SOCK:-none}\""),
        ] {
            let cli = dir.0.join("bin").join(name);
            std::fs::write(&cli, format!("#!/bin/sh\n{script}\n")).unwrap();
            #[cfg(unix)]
            std::fs::set_permissions(&cli, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        }
        Self { dir }
    }

    fn run(&self, server: Option<&str>, cli: &str, args: &[&str], extra: &[(&str, &str)]) -> Output {
        let d = &self.dir.0;
        let mut cmd = Command::new(d.join("shims").join(cli));
        cmd.args(args)
            .env_clear()
            .env("PATH", format!("{}:{}", d.join("shims").display(), d.join("bin").display()))
            .env("AGENTSKY_SHIM_DIR", d.join("shims"))
            .env("AGENTSKY_GRANTS_FILE", d.join("grants.json"))
            .stdin(Stdio::null());
        if let Some(s) = server {
            cmd.env("AGENTSKY_SERVER", s)
                .env("AGENTSKY_SESSION_ID", "ses_1")
                .env("AGENTSKY_SESSION_TOKEN", SESSION_TOKEN);
        }
        cmd.envs(extra.iter().copied());
        cmd.output().unwrap()
    }
}

fn tools_called(srv: &StandIn) -> Vec<(String, Value)> {
    srv.requests()
        .iter()
        .filter(|r| r.url == "/v1/session/mcp")
        .map(|r| {
            let m: Value = serde_json::from_str(&r.body).unwrap();
            (m["params"]["name"].as_str().unwrap_or_default().to_owned(), m["params"]["arguments"].clone())
        })
        .collect()
}

/// Requests to anything but the session server: outside a runner's turn, a shim reports nothing (only a
/// runner's report proves a command; `tests/granted.rs`).
fn elsewhere(srv: &StandIn) -> Vec<String> {
    srv.requests().iter().filter(|r| r.url != "/v1/session/mcp").map(|r| r.url.clone()).collect()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn a_granted_command_runs_the_real_cli_with_the_credential_and_the_grant_is_reused() {
    let srv = session_server("active");
    let s = Setup::new("shim-active");
    let out = s.run(Some(&srv.url), "vercel", &["deploy", "--prod"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "vercel ran: deploy --prod\nVERCEL_TOKEN=vt-123 VERCEL_ORG_ID=team_1\n");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("asking for deploy on `web` (vercel:prod)") && stderr.contains("using grant gr_new"),
        "{stderr}"
    );
    assert!(!stderr.contains("vt-123"), "no credential on stderr");
    let called = tools_called(&srv);
    let names: Vec<&str> = called.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["list_targets", "request_access", "get_credential"]);
    assert_eq!(called[1].1["target"], "web");
    assert_eq!(called[1].1["scope"], json!(["deploy"]));
    assert_eq!(called[1].1["reason"], "Run `vercel deploy` (through agentsky's vercel shim).");
    let grants = std::fs::read_to_string(s.dir.0.join("grants.json")).unwrap();
    assert!(grants.contains("\"gr_new\"") && grants.contains("con_web") && !grants.contains("vt-123"), "{grants}");
    let failed = s.run(Some(&srv.url), "vercel", &["deploy", "fail", "--prod"], &[]);
    assert_eq!(failed.status.code(), Some(1), "the real CLI's status: {}", text(&failed.stderr));
    assert_eq!(elsewhere(&srv), Vec::<String>::new(), "no exit status is reported outside a runner");

    // Again: the remembered grant is checked and used; no new request.
    let srv2 = session_server("denied");
    let out = s.run(Some(&srv2.url), "vercel", &["deploy", "--prod"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let names: Vec<String> = tools_called(&srv2).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["list_targets", "check_grant", "get_credential"]);
    // A command needing more than the grant covers asks anew.
    let out = s.run(Some(&srv2.url), "vercel", &["rm", "app", "--prod"], &[]);
    assert_eq!(out.status.code(), Some(77));
    assert!(tools_called(&srv2).iter().any(|(n, a)| n == "request_access" && a["scope"] == json!(["delete"])));
}

#[test]
fn denied_and_pending_requests_do_not_run_the_cli() {
    let srv = session_server("denied");
    let s = Setup::new("shim-denied");
    let out = s.run(Some(&srv.url), "vercel", &["deploy", "--prod"], &[]);
    assert_eq!(out.status.code(), Some(77));
    assert!(out.stdout.is_empty(), "the real CLI was run: {}", text(&out.stdout));
    assert!(text(&out.stderr)
        .contains("access to `web` (vercel:prod) for deploy was denied (grant gr_new); `vercel` was not run"));
    assert!(!tools_called(&srv).iter().any(|(n, _)| n == "get_credential"));

    let srv = session_server("pending");
    let s = Setup::new("shim-pending");
    let out = s.run(Some(&srv.url), "vercel", &["deploy", "--prod"], &[]);
    assert_eq!(out.status.code(), Some(75));
    assert!(out.stdout.is_empty());
    assert!(
        text(&out.stderr).contains("not answered yet (grant gr_new); run the command again"),
        "{}",
        text(&out.stderr)
    );
    // Run again: it waits on the same request (check_grant) instead of opening another.
    let srv2 = session_server("pending");
    let out = s.run(Some(&srv2.url), "vercel", &["deploy", "--prod"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let names: Vec<String> = tools_called(&srv2).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["list_targets", "check_grant", "get_credential"]);
}

#[test]
fn targets_must_be_unambiguous_connected_and_the_cli_installed() {
    let srv = session_server("active");
    let s = Setup::new("shim-targets");
    // `vercel ls` has no env: two vercel targets.
    let out = s.run(Some(&srv.url), "vercel", &["ls"], &[]);
    assert_eq!(out.status.code(), Some(69));
    assert!(text(&out.stderr).contains("set AGENTSKY_TARGET=<name>"), "{}", text(&out.stderr));
    let out = s.run(Some(&srv.url), "vercel", &["ls"], &[("AGENTSKY_TARGET", "web-preview")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(tools_called(&srv).iter().any(|(n, a)| n == "request_access" && a["target"] == "web-preview"));
    // A preview deploy picks the preview target.
    let out = s.run(Some(&srv.url), "vercel", &["deploy"], &[]);
    assert_eq!(out.status.code(), Some(0));
    assert!(tools_called(&srv)
        .iter()
        .any(|(n, a)| n == "request_access" && a["target"] == "web-preview" && a["scope"] == json!(["deploy"])));

    // The real CLI is missing: said before anything is asked.
    let before = srv.requests().len();
    let out = s.run(Some(&srv.url), "gh", &["pr", "list"], &[]);
    assert_eq!(out.status.code(), Some(127));
    assert!(text(&out.stderr).contains("the real `gh` is not installed here"), "{}", text(&out.stderr));
    assert_eq!(srv.requests().len(), before);
}

#[test]
fn commands_needing_no_account_and_shells_without_a_session_run_directly() {
    let srv = session_server("denied");
    let s = Setup::new("shim-local");
    let out = s.run(Some(&srv.url), "vercel", &["--version"], &[]);
    assert_eq!((out.status.code(), text(&out.stdout).lines().next()), (Some(0), Some("vercel ran: --version")));
    assert!(text(&out.stdout).contains("VERCEL_TOKEN=none"));
    let out = s.run(None, "vercel", &["deploy", "--prod"], &[]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains("VERCEL_TOKEN=none"));
    assert!(srv.requests().is_empty(), "nothing was asked");
}

#[test]
fn a_grant_the_agent_got_through_sky_mcp_is_used_by_the_shim() {
    let srv = session_server("active");
    let s = Setup::new("shim-relay");
    let grants = s.dir.0.join("grants.json");
    let mut mcp = Command::new(env!("CARGO_BIN_EXE_sky"))
        .args(["mcp", "--server", &srv.url])
        .env("AGENTSKY_SESSION_ID", "ses_1")
        .env("AGENTSKY_SESSION_TOKEN", SESSION_TOKEN)
        .env("AGENTSKY_GRANTS_FILE", &grants)
        .env("HOME", &s.dir.0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "request_access",
        "arguments": {"target": "vercel:prod", "scope": ["read", "deploy"], "reason": "ship it"}}});
    std::io::Write::write_all(mcp.stdin.as_mut().unwrap(), format!("{call}\n").as_bytes()).unwrap();
    drop(mcp.stdin.take());
    let out = mcp.wait_with_output().unwrap();
    assert!(text(&out.stdout).contains("gr_new"));
    let known = std::fs::read_to_string(&grants).unwrap();
    assert!(known.contains("\"vercel:prod\"") && known.contains("\"deploy\""), "{known}");

    let srv2 = session_server("denied");
    let out = s.run(Some(&srv2.url), "vercel", &["deploy", "--prod"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let names: Vec<String> = tools_called(&srv2).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["list_targets", "check_grant", "get_credential"], "the agent's grant is used");
}

#[test]
fn ssh_passes_through_unless_the_project_has_ssh_targets() {
    let s = Setup::new("shim-ssh");
    let srv = session_server("active");
    let out = s.run(Some(&srv.url), "ssh", &["git@github.com", "git-upload-pack"], &[]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "ssh ran: git@github.com git-upload-pack\nSSH_AUTH_SOCK=none\n");
    let names: Vec<String> = tools_called(&srv).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["list_targets"], "nobody was asked");
}

#[test]
fn ssh_to_a_target_uses_the_runners_agent_picked_by_the_destination_host() {
    let s = Setup::new("shim-ssh-agent");
    let srv = session_server("with-ssh");
    let out = s.run(Some(&srv.url), "ssh", &["-p", "22", "deploy@web-1", "uptime"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "ssh ran: -p 22 deploy@web-1 uptime\nSSH_AUTH_SOCK=/tmp/turn/meta/ssh/agent.sock\n",
        "the socket, never a key file"
    );
    let called = tools_called(&srv);
    let names: Vec<&str> = called.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["list_targets", "request_access", "get_credential"]);
    assert_eq!(called[1].1["target"], "web-1");
    assert_eq!(called[1].1["scope"], json!(["read", "write", "deploy", "delete"]));
    assert_eq!(called[1].1["reason"], "Run `ssh deploy@web-1 uptime` (through agentsky's ssh shim).");
    assert!(text(&out.stderr).contains("using grant gr_new (read write deploy delete on `web-1` (ssh:prod))"));

    // A host that names no target, with two ssh targets: AGENTSKY_TARGET decides.
    let srv = session_server("with-ssh");
    let s = Setup::new("shim-ssh-agent-2");
    let out = s.run(Some(&srv.url), "ssh", &["10.0.0.7", "uptime"], &[]);
    assert_eq!(out.status.code(), Some(69));
    assert!(out.stdout.is_empty());
    assert!(text(&out.stderr).contains("several ssh targets"), "{}", text(&out.stderr));
    let out = s.run(Some(&srv.url), "ssh", &["10.0.0.7", "uptime"], &[("AGENTSKY_TARGET", "box")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(tools_called(&srv).iter().any(|(n, a)| n == "request_access" && a["target"] == "box"));
}
