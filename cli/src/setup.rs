//! `sky setup [--dry-run]`: signs in if needed, then registers the server with every Claude Code and
//! Codex it finds and installs the `agentsky` skill, and the workspace's company skills, where each reads
//! skills. The contract is
//! shared/contract/operator-mcp.md, "One command for Claude Code and Codex", "Claude Code", "Codex".
//!
//! Every change is planned in full first ([`plan`]); `--dry-run` prints the plan and writes nothing, a
//! real run writes it. A malformed file stops the run before anything is written. Running it again
//! changes only what differs.

use crate::api::Api;
use crate::auth::{self, KeySource};
use crate::context::Context;
use crate::edit;
use crate::files::{self, Change};
use crate::skill;
use crate::{config, key_prefix, redact, Error, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The server's name in every client's config.
pub const SERVER_NAME: &str = "agentsky";
/// The variable Codex reads the key from (`bearer_token_env_var`).
pub const KEY_ENV: &str = "AGENTSKY_API_KEY";

#[derive(Debug, Clone, Default)]
pub struct Options {
    pub auth: auth::Options,
    pub dry_run: bool,
}

/// The clients found, each with what gave it away.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    pub claude: Option<String>,
    pub codex: Option<String>,
}

/// Finds Claude Code (its settings file, its folder, or `claude` on `PATH`) and Codex (its folder or
/// `codex` on `PATH`).
pub fn find(ctx: &Context) -> Found {
    let claude = if ctx.claude_json.exists() {
        Some(ctx.show(&ctx.claude_json))
    } else if ctx.claude_dir.is_dir() {
        Some(format!("{}/", ctx.show(&ctx.claude_dir)))
    } else if ctx.on_path("claude") {
        Some("`claude` on PATH".to_owned())
    } else {
        None
    };
    let codex = if ctx.codex_home.is_dir() {
        Some(format!("{}/", ctx.show(&ctx.codex_home)))
    } else if ctx.on_path("codex") {
        Some("`codex` on PATH".to_owned())
    } else {
        None
    };
    Found { claude, codex }
}

fn read(ctx: &Context, path: &Path) -> Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::new(format!("cannot read {}: {e}; nothing was changed", ctx.show(path)))),
    }
}

fn refused(ctx: &Context, path: &Path, why: edit::EditError) -> Error {
    Error::new(format!(
        "{} cannot be updated: {why}. sky setup changed nothing; fix the file (or move it aside) and run it again.",
        ctx.show(path)
    ))
}

fn skill_changes(ctx: &Context, dir: PathBuf, catalog_md: &str, client: &str) -> Result<Vec<Change>> {
    let mut out = Vec::new();
    for (name, text) in [("SKILL.md", skill::skill_md()), ("catalog.md", catalog_md.to_owned())] {
        let path = dir.join(name);
        let before = read(ctx, &path)?;
        let what = match &before {
            None => format!("create the {client} skill's {name}"),
            Some(_) => format!("update the {client} skill's {name}"),
        };
        out.push(Change { path, what, before, after: text, private: false });
    }
    Ok(out)
}

/// Every file setup would write for these clients, server and key, with the catalog already rendered.
pub fn plan(ctx: &Context, found: &Found, server: &str, key: &str, catalog_md: &str) -> Result<Vec<Change>> {
    let mcp_url = format!("{server}/v1/mcp");
    let mut changes = Vec::new();
    if found.claude.is_some() {
        let path = ctx.claude_json.clone();
        let before = read(ctx, &path)?;
        let entry = edit::claude_entry(&mcp_url, key);
        let after = edit::claude_json(before.as_deref(), SERVER_NAME, &entry).map_err(|e| refused(ctx, &path, e))?;
        let had = before
            .as_deref()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
            .is_some_and(|v| v["mcpServers"].get(SERVER_NAME).is_some());
        let what = match (&before, had) {
            (None, _) => "create it with mcpServers.agentsky (Claude Code, user scope)",
            (Some(_), true) => "update mcpServers.agentsky (Claude Code, user scope)",
            (Some(_), false) => "add mcpServers.agentsky (Claude Code, user scope)",
        };
        let after = after.unwrap_or_else(|| before.clone().unwrap_or_default());
        // The file holds the key in its header; a new one is created readable by the owner only.
        changes.push(Change { path, what: what.into(), before, after, private: true });
        changes.extend(skill_changes(ctx, ctx.claude_dir.join("skills").join(skill::NAME), catalog_md, "Claude Code")?);
    }
    if found.codex.is_some() {
        let path = ctx.codex_home.join("config.toml");
        let before = read(ctx, &path)?;
        let after =
            edit::codex_toml(before.as_deref(), SERVER_NAME, &mcp_url, KEY_ENV).map_err(|e| refused(ctx, &path, e))?;
        let had = before.as_deref().is_some_and(|t| {
            t.parse::<toml_edit::DocumentMut>()
                .is_ok_and(|d| d.get("mcp_servers").and_then(|s| s.get(SERVER_NAME)).is_some())
        });
        let what = match (&before, had) {
            (None, _) => "create it with [mcp_servers.agentsky] (Codex)",
            (Some(_), true) => "update [mcp_servers.agentsky] (Codex)",
            (Some(_), false) => "add [mcp_servers.agentsky] (Codex)",
        };
        let after = after.unwrap_or_else(|| before.clone().unwrap_or_default());
        changes.push(Change { path, what: what.into(), before, after, private: false });
        changes.extend(skill_changes(ctx, ctx.codex_home.join("skills").join(skill::NAME), catalog_md, "Codex")?);
        // Codex reads the key from the environment: a file only the owner can read sets it when sourced.
        let path = env_file(ctx);
        let before = read(ctx, &path)?;
        let after = format!(
            "# Written by `sky setup`: the agentsky key for Codex, whose config names {KEY_ENV}\n\
             # (bearer_token_env_var). Source this file from your shell profile.\nexport {KEY_ENV}='{key}'\n"
        );
        let what = if before.is_some() { "update the key for Codex" } else { "create it with the key for Codex" };
        changes.push(Change { path, what: what.into(), before, after, private: true });
    }
    Ok(changes)
}

/// The workspace's company skills beside the `agentsky` skill, for each client found.
fn company_skill_changes(ctx: &Context, found: &Found, skills: &[agentsky_wire::runner::Skill]) -> Result<Vec<Change>> {
    let mut out = Vec::new();
    if found.claude.is_some() {
        out.extend(crate::company_skills::changes(&ctx.claude_dir.join("skills"), skills, "Claude Code")?);
    }
    if found.codex.is_some() {
        out.extend(crate::company_skills::changes(&ctx.codex_home.join("skills"), skills, "Codex")?);
    }
    Ok(out)
}

/// The shell snippet that exports the key for Codex.
pub fn env_file(ctx: &Context) -> PathBuf {
    ctx.sky_dir().join("env")
}

/// `sky setup`.
pub fn run(ctx: &Context, opts: &Options, out: &mut dyn Write) -> Result<()> {
    let stored = config::load(ctx)?;
    let server = auth::server(ctx, &opts.auth, &stored);
    let found = find(ctx);
    let say = |out: &mut dyn Write, s: &str| auth::say(out, s);
    if opts.dry_run {
        say(out, "Dry run: showing what sky setup would change. Nothing is written.");
    }
    say(out, &format!("Server: {server}"));
    if found.claude.is_none() && found.codex.is_none() {
        say(out, "Found neither Claude Code nor Codex (looked for ~/.claude.json, ~/.claude/, ~/.codex/, and `claude` and `codex` on PATH).");
        say(out, "Install one and run `sky setup` again, or add the server by hand:");
        say(out, &format!("  claude mcp add --transport http {SERVER_NAME} {server}/v1/mcp --header \"Authorization: Bearer ast_...\""));
        say(out, &format!("  codex mcp add {SERVER_NAME} --url {server}/v1/mcp --bearer-token-env-var {KEY_ENV}"));
        return Ok(());
    }
    for (client, why) in [("Claude Code", &found.claude), ("Codex", &found.codex)] {
        if let Some(why) = why {
            say(out, &format!("Found {client} ({why})."));
        }
    }

    let (key, source) = match auth::key(ctx, &opts.auth, &stored, &server) {
        Some(k) => k,
        None if opts.dry_run => {
            say(out, "Not signed in: a real run signs in first. The key below stands for the one sign-in brings.");
            let placeholder = "ast_<the key sign-in brings>".to_owned();
            let catalog = "(made from the live catalog after sign-in)\n";
            let changes = plan(ctx, &found, &server, &placeholder, catalog)?;
            show_plan(ctx, &changes, &placeholder, out);
            return Ok(());
        }
        None => {
            say(out, "Not signed in yet: signing in first.");
            (auth::login(ctx, &opts.auth, out)?, KeySource::Stored)
        }
    };
    say(out, &format!("Key: {}… ({})", key_prefix(&key), source.describe()));
    let api = Api::new(&server);
    let workspace = auth::check_key(&api, &key)?;
    let catalog = api.get("/v1/catalog?limit=100", Some(&key))?.into_ok("reading the catalog")?;
    let agents = catalog["agents"].as_array().map_or(0, Vec::len);
    say(out, &format!("Catalog: {agents} agent(s) in workspace {workspace}."));
    let catalog_md = skill::catalog_md(&catalog, &server, Some(&workspace));
    let mut changes = plan(ctx, &found, &server, &key, &catalog_md)?;
    changes.extend(company_skill_changes(ctx, &found, &crate::company_skills::fetch(&api, &key)?)?);

    if opts.dry_run {
        show_plan(ctx, &changes, &key, out);
        return Ok(());
    }
    for (i, c) in changes.iter().enumerate() {
        c.apply().map_err(|e| {
            let written: Vec<String> =
                changes[..i].iter().filter(|c| !c.is_noop()).map(|c| ctx.show(&c.path)).collect();
            Error::new(format!(
                "writing {} failed: {e}{}",
                ctx.show(&c.path),
                if written.is_empty() { String::new() } else { format!(" (already written: {})", written.join(", ")) }
            ))
        })?;
        let verb = if c.is_noop() { "unchanged" } else { "done" };
        say(out, &format!("  {verb:9} {}: {}", ctx.show(&c.path), c.what));
    }
    if found.claude.is_some() {
        say(out, "Claude Code: the `agentsky` server and skill are set up; restart Claude Code to load them.");
    }
    if found.codex.is_some() {
        say(out, &format!("Codex: the `agentsky` server and skill are set up. Codex reads the key from {KEY_ENV}:"));
        if ctx.env_key.as_deref() == Some(key.as_str()) {
            say(out, &format!("  {KEY_ENV} is already set to this key in this shell."));
        }
        say(out, "  add this line to your shell profile (~/.bashrc, ~/.zshrc), then open a new shell:");
        say(out, &format!("    . {}", ctx.show(&env_file(ctx))));
        say(out, &format!("  (it exports {KEY_ENV} as {}… from a file only you can read)", key_prefix(&key)));
    }
    Ok(())
}

/// Prints each planned change: what it is and its diff, with the key shown as its prefix only.
pub fn show_plan(ctx: &Context, changes: &[Change], key: &str, out: &mut dyn Write) {
    for c in changes {
        let path = ctx.show(&c.path);
        if c.is_noop() {
            auth::say(out, &format!("\n{path}: unchanged"));
            continue;
        }
        auth::say(out, &format!("\n{path}: would {}", c.what));
        let body = match &c.before {
            Some(before) => files::diff(before, &c.after),
            None => files::listing(&c.after),
        };
        let _ = write!(out, "{}", redact(&body, key));
    }
    let n = changes.iter().filter(|c| !c.is_noop()).count();
    auth::say(out, &format!("\nDry run: {n} file(s) would change; nothing was written."));
}
