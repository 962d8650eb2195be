//! `sky setup` on realistic existing files: other servers and settings kept byte for byte, idempotent,
//! `--dry-run` writes nothing, malformed files refused with a clear error and left untouched.

mod support;

use serde_json::{json, Value};
use sky::context::Context;
use sky::setup::{self, Options};
use std::path::Path;
use support::{mode, Scratch, StandIn};

const KEY: &str = "ast_Test0123456789abcdefghijklmnopqrstuvwxyzABCD";

/// A server that knows one key, one workspace and two agents.
fn server() -> StandIn {
    StandIn::start(|req| {
        if req.header("authorization") != Some(&format!("Bearer {KEY}")) {
            return (
                401,
                "application/json",
                json!({"error": {"code": "unauthorized", "message": "unknown or revoked API key"}}).to_string(),
            );
        }
        match req.url.split('?').next().unwrap() {
            "/v1/workspaces" => (200, "application/json", json!({"workspaces": [
                {"slug": "ada", "name": "Ada", "role": "owner", "is_personal": true, "is_current": true}]}).to_string()),
            "/v1/catalog" => (200, "application/json", json!({"agents": [
                {"handle": "@scribe", "agent_id": "ag_1", "name": "Scribe", "description": "Writes release notes",
                 "categories": ["writing"], "source": "own", "harness": "echo", "model": "echo",
                 "pricing": {"per_run_cents": 0, "usage": "free"}, "requirements": [], "score": 1.0},
                {"handle": "@reviewer", "agent_id": "ag_2", "name": "Reviewer", "description": "Reviews Rust pull requests",
                 "categories": ["code"], "source": "public", "harness": "openai", "model": "gpt-4.1",
                 "pricing": {"per_run_cents": 25, "usage": "per token"}, "requirements": ["wallet credit"], "score": 1.0}
            ]}).to_string()),
            _ => (404, "application/json", "{}".into()),
        }
    })
}

/// What Claude Code's `~/.claude.json` looks like after some use: many top-level settings, other user
/// servers, and per-project servers that must not be touched.
const CLAUDE_JSON: &str = r#"{
  "numStartups": 42,
  "installMethod": "npm-global",
  "autoUpdates": true,
  "tipsHistory": {
    "new-user-warmup": 1,
    "memory-command": 7
  },
  "mcpServers": {
    "github": {
      "type": "stdio",
      "command": "npx",
      "args": [
        "-y",
        "@modelcontextprotocol/server-github"
      ],
      "env": {
        "GITHUB_TOKEN": "ghp_example"
      }
    },
    "linear": {
      "type": "http",
      "url": "https://mcp.linear.app/mcp"
    }
  },
  "projects": {
    "/home/ada/src/app": {
      "allowedTools": [],
      "mcpServers": {
        "agentsky": {
          "type": "http",
          "url": "http://project-scoped.example/v1/mcp"
        }
      },
      "hasTrustDialogAccepted": true
    }
  },
  "userID": "0f3c9a",
  "firstStartTime": "2026-01-02T03:04:05.678Z"
}
"#;

/// A Codex `config.toml` with comments, a profile, a stdio server and a trusted project.
const CODEX_TOML: &str = r#"# Codex settings
model = "gpt-5-codex"  # the default model
approval_policy = "on-request"

[profiles.fast]
model = "gpt-5-mini"

# Local tools
[mcp_servers.files]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/home/ada"]

[projects."/home/ada/src/app"]
trust_level = "trusted"
"#;

fn home_with_both(s: &Scratch) -> Context {
    std::fs::write(s.0.join(".claude.json"), CLAUDE_JSON).unwrap();
    std::fs::create_dir_all(s.0.join(".codex")).unwrap();
    std::fs::write(s.0.join(".codex/config.toml"), CODEX_TOML).unwrap();
    Context::in_home(&s.0)
}

fn opts(server: &StandIn, dry_run: bool) -> Options {
    Options {
        auth: sky::auth::Options { server: Some(server.url.clone()), key: Some(KEY.into()), ..Default::default() },
        dry_run,
    }
}

fn run(ctx: &Context, o: &Options) -> (sky::Result<()>, String) {
    let mut out = Vec::new();
    let r = setup::run(ctx, o, &mut out);
    (r, String::from_utf8(out).unwrap())
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

/// Every line of `original` appears in `edited`, in order.
fn keeps_every_line(original: &str, edited: &str) {
    let mut lines = edited.lines();
    for want in original.lines() {
        assert!(lines.any(|l| l == want), "line {want:?} was lost or moved:\n{edited}");
    }
}

/// Snapshot of every file under a folder: path → bytes.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((p.display().to_string(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn setup_registers_both_clients_and_keeps_everything_else() {
    let s = Scratch::new("both");
    let ctx = home_with_both(&s);
    let srv = server();
    let (r, out) = run(&ctx, &opts(&srv, false));
    r.unwrap();
    assert!(!out.contains(KEY), "the key is never printed in full:\n{out}");

    // Claude Code: the user-scope entry, and every other byte as it was.
    let claude = read(&s.0.join(".claude.json"));
    keeps_every_line(CLAUDE_JSON, &claude);
    let v: Value = serde_json::from_str(&claude).unwrap();
    assert_eq!(
        v["mcpServers"]["agentsky"],
        json!({"type": "http", "url": format!("{}/v1/mcp", srv.url), "headers": {"Authorization": format!("Bearer {KEY}")}})
    );
    let mut expected: Value = serde_json::from_str(CLAUDE_JSON).unwrap();
    expected["mcpServers"]["agentsky"] = v["mcpServers"]["agentsky"].clone();
    assert_eq!(v, expected, "nothing else changed");
    assert_eq!(
        v["projects"]["/home/ada/src/app"]["mcpServers"]["agentsky"]["url"],
        "http://project-scoped.example/v1/mcp"
    );
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert!(claude.find("\"numStartups\"").unwrap() < claude.find("\"firstStartTime\"").unwrap(), "{keys:?}");
    assert!(
        claude.contains("    \"agentsky\": {\n      \"type\": \"http\",\n"),
        "laid out like its siblings:\n{claude}"
    );

    // Codex: the table, the comments and the other tables as they were.
    let codex = read(&s.0.join(".codex/config.toml"));
    keeps_every_line(CODEX_TOML, &codex);
    let doc: toml_edit::DocumentMut = codex.parse().unwrap();
    assert_eq!(doc["mcp_servers"]["agentsky"]["url"].as_str(), Some(format!("{}/v1/mcp", srv.url).as_str()));
    assert_eq!(doc["mcp_servers"]["agentsky"]["bearer_token_env_var"].as_str(), Some("AGENTSKY_API_KEY"));
    assert!(!codex.contains(KEY), "Codex's file never holds the key");
    assert!(codex.contains("\n[mcp_servers.agentsky]\n"), "{codex}");
    assert!(!codex.contains("\n[mcp_servers]\n"), "no empty parent table: {codex}");

    // The skill, for both, with the live catalog.
    for dir in [".claude/skills/agentsky", ".codex/skills/agentsky"] {
        let skill = read(&s.0.join(dir).join("SKILL.md"));
        assert!(skill.starts_with("---\nname: agentsky\n"), "{skill}");
        let catalog = read(&s.0.join(dir).join("catalog.md"));
        assert!(catalog.contains("`@scribe`") && catalog.contains("`@reviewer`"), "{catalog}");
        assert!(catalog.find("Your workspace's agents").unwrap() < catalog.find("Public agents").unwrap());
    }

    // Codex's key, in a file only the owner can read, and the user is told to source it.
    let env = s.0.join(".config/agentsky/env");
    assert!(read(&env).contains(&format!("export AGENTSKY_API_KEY='{KEY}'")));
    assert_eq!(mode(&env), 0o600);
    assert!(out.contains(". ~/.config/agentsky/env"), "{out}");
    assert!(out.contains("AGENTSKY_API_KEY"), "{out}");
}

#[test]
fn running_setup_again_changes_nothing() {
    let s = Scratch::new("again");
    let ctx = home_with_both(&s);
    let srv = server();
    run(&ctx, &opts(&srv, false)).0.unwrap();
    let first = tree(&s.0);
    let (r, out) = run(&ctx, &opts(&srv, false));
    r.unwrap();
    assert_eq!(tree(&s.0), first);
    assert!(!out.contains(" done "), "{out}");
    let (r, out) = run(&ctx, &opts(&srv, true));
    r.unwrap();
    assert!(out.contains("0 file(s) would change"), "{out}");
}

#[test]
fn dry_run_prints_the_changes_and_writes_nothing() {
    let s = Scratch::new("dry");
    let ctx = home_with_both(&s);
    let before = tree(&s.0);
    let srv = server();
    let (r, out) = run(&ctx, &opts(&srv, true));
    r.unwrap();
    assert_eq!(tree(&s.0), before, "nothing written");
    assert!(!s.0.join(".claude/skills").exists() && !s.0.join(".config").exists());
    assert!(out.contains("~/.claude.json: would add mcpServers.agentsky"), "{out}");
    assert!(out.contains(" +     \"agentsky\": {"), "{out}");
    assert!(out.contains("~/.codex/config.toml: would add [mcp_servers.agentsky]"), "{out}");
    assert!(out.contains(" + [mcp_servers.agentsky]"), "{out}");
    assert!(out.contains("~/.claude/skills/agentsky/SKILL.md: would create"), "{out}");
    assert!(out.contains(&format!("Bearer {}…", &KEY[..12])), "the key shows as its prefix: {out}");
    assert!(!out.contains(KEY), "{out}");
    assert!(out.contains("nothing was written"), "{out}");
}

#[test]
fn an_existing_entry_is_updated_in_place() {
    let s = Scratch::new("update");
    let old = CLAUDE_JSON.replace(
        "    \"linear\": {",
        "    \"agentsky\": {\n      \"type\": \"http\",\n      \"url\": \"https://old.example/v1/mcp\",\n      \"headers\": {\n        \"Authorization\": \"Bearer ast_old\"\n      }\n    },\n    \"linear\": {",
    );
    std::fs::write(s.0.join(".claude.json"), &old).unwrap();
    std::fs::create_dir_all(s.0.join(".codex")).unwrap();
    let old_toml = format!("{CODEX_TOML}\n[mcp_servers.agentsky]\ncommand = \"old-shim\"\nurl = \"https://old.example/v1/mcp\" # moved\nstartup_timeout_sec = 20\n");
    std::fs::write(s.0.join(".codex/config.toml"), &old_toml).unwrap();
    let ctx = Context::in_home(&s.0);
    let srv = server();
    let (r, out) = run(&ctx, &opts(&srv, false));
    r.unwrap();
    assert!(out.contains("update mcpServers.agentsky") && out.contains("update [mcp_servers.agentsky]"), "{out}");

    let claude = read(&s.0.join(".claude.json"));
    let v: Value = serde_json::from_str(&claude).unwrap();
    assert_eq!(v["mcpServers"]["agentsky"]["url"], format!("{}/v1/mcp", srv.url));
    let names: Vec<&str> = v["mcpServers"].as_object().unwrap().keys().map(String::as_str).collect();
    // serde_json without preserve_order sorts keys; the text keeps the file's own order.
    assert_eq!(names.len(), 3);
    let (g, a, l) = (
        claude.find("\"github\"").unwrap(),
        claude.find("\"agentsky\": {\n      \"type\"").unwrap(),
        claude.find("\"linear\"").unwrap(),
    );
    assert!(g < a && a < l, "the entry stays where it was:\n{claude}");
    assert_eq!(claude.lines().count(), old.lines().count());

    let codex = read(&s.0.join(".codex/config.toml"));
    let doc: toml_edit::DocumentMut = codex.parse().unwrap();
    let t = &doc["mcp_servers"]["agentsky"];
    assert_eq!(t["url"].as_str(), Some(format!("{}/v1/mcp", srv.url).as_str()));
    assert!(t.get("command").is_none(), "a remote server has no command: {codex}");
    assert_eq!(t["startup_timeout_sec"].as_integer(), Some(20), "the user's own setting stays");
    assert!(codex.contains("# moved"), "the comment on the line stays: {codex}");
    keeps_every_line(CODEX_TOML, &codex);
}

#[test]
fn malformed_files_are_refused_and_nothing_is_written() {
    let s = Scratch::new("malformed");
    let ctx = home_with_both(&s);
    let broken = CLAUDE_JSON.replace("\"autoUpdates\": true,", "\"autoUpdates\": true,,");
    std::fs::write(s.0.join(".claude.json"), &broken).unwrap();
    let before = tree(&s.0);
    let srv = server();
    for dry_run in [false, true] {
        let (r, _) = run(&ctx, &opts(&srv, dry_run));
        let e = r.unwrap_err().to_string();
        assert!(e.contains("~/.claude.json cannot be updated: it is not valid JSON (line 4"), "{e}");
        assert!(e.contains("changed nothing"), "{e}");
        assert_eq!(tree(&s.0), before, "untouched, Codex's file too");
    }

    std::fs::write(s.0.join(".claude.json"), CLAUDE_JSON).unwrap();
    std::fs::write(s.0.join(".codex/config.toml"), "model = \"x\"\n[mcp_servers.files\ncommand = 1\n").unwrap();
    let before = tree(&s.0);
    let e = run(&ctx, &opts(&srv, false)).0.unwrap_err().to_string();
    assert!(e.contains("~/.codex/config.toml cannot be updated: it is not valid TOML (line 2"), "{e}");
    assert_eq!(tree(&s.0), before);

    for (text, why) in [("[1, 2]\n", "not an object"), ("{\"mcpServers\": []}\n", "`mcpServers` is not an object")] {
        std::fs::write(s.0.join(".claude.json"), text).unwrap();
        std::fs::write(s.0.join(".codex/config.toml"), CODEX_TOML).unwrap();
        let e = run(&ctx, &opts(&srv, false)).0.unwrap_err().to_string();
        assert!(e.contains(why), "{e}");
        assert_eq!(read(&s.0.join(".claude.json")), text);
    }
}

#[test]
fn only_the_clients_found_are_set_up_and_new_files_are_private() {
    let s = Scratch::new("codex-only");
    std::fs::create_dir_all(s.0.join(".codex")).unwrap();
    let ctx = Context::in_home(&s.0);
    let srv = server();
    run(&ctx, &opts(&srv, false)).0.unwrap();
    assert!(!s.0.join(".claude.json").exists() && !s.0.join(".claude").exists());
    let codex = read(&s.0.join(".codex/config.toml"));
    assert!(codex.starts_with("[mcp_servers.agentsky]\nurl = "), "{codex}");

    let s = Scratch::new("claude-only");
    std::fs::create_dir_all(s.0.join(".claude")).unwrap();
    let ctx = Context::in_home(&s.0);
    run(&ctx, &opts(&srv, false)).0.unwrap();
    let claude = s.0.join(".claude.json");
    assert_eq!(mode(&claude), 0o600, "a new file holding the key is the owner's only");
    let v: Value = serde_json::from_str(&read(&claude)).unwrap();
    assert_eq!(v["mcpServers"]["agentsky"]["type"], "http");
    assert!(!s.0.join(".codex").exists());

    let s = Scratch::new("none");
    let ctx = Context::in_home(&s.0);
    let (r, out) = run(&ctx, &opts(&srv, false));
    r.unwrap();
    assert!(out.contains("Found neither Claude Code nor Codex"), "{out}");
    assert_eq!(tree(&s.0), vec![]);
}

#[test]
fn a_refused_key_stops_setup_before_any_write() {
    let s = Scratch::new("refused");
    let ctx = home_with_both(&s);
    let before = tree(&s.0);
    let srv = server();
    let mut o = opts(&srv, false);
    o.auth.key = Some("ast_not_the_right_one_at_all_0000000000000000000".into());
    let e = run(&ctx, &o).0.unwrap_err().to_string();
    assert!(e.contains("refused the key ast_not_the_…"), "{e}");
    assert!(!e.contains("ast_not_the_right_one"), "{e}");
    assert_eq!(tree(&s.0), before);
}

#[test]
fn a_symlinked_config_is_written_through_the_link() {
    let s = Scratch::new("symlink");
    std::fs::create_dir_all(s.0.join("dotfiles")).unwrap();
    std::fs::write(s.0.join("dotfiles/claude.json"), CLAUDE_JSON).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(s.0.join("dotfiles/claude.json"), s.0.join(".claude.json")).unwrap();
    #[cfg(not(unix))]
    return;
    let ctx = Context::in_home(&s.0);
    let srv = server();
    run(&ctx, &opts(&srv, false)).0.unwrap();
    assert!(std::fs::symlink_metadata(s.0.join(".claude.json")).unwrap().file_type().is_symlink());
    assert!(read(&s.0.join("dotfiles/claude.json")).contains("\"agentsky\": {"));
}
