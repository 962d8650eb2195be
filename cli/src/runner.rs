//! `sky runner`: runs the turns of the workspace's `runner` agents on this machine, over the server's
//! runner protocol (`/v1/runner/*`, see the server's `src/runner/`; its client is [`crate::runner_client`]):
//!
//! 1. **Register** once with a workspace key (`POST /v1/runners`, owners and admins): the runner token
//!    (`srt_…`) is kept in `<config>/agentsky/runners.json` (0600, one entry per server and runner name)
//!    and used from then on; output shows its prefix only. A token the server no longer knows is replaced
//!    by registering again, when a key is at hand.
//! 2. **Claim** turns with a long wait (`POST /v1/runner/claim`, 25 s); 204 means none waited. A claim
//!    may hand over a checkout instead: a session's checks, run in a fresh checkout of its lane.
//! 3. **Run** each turn ([`crate::turn`]): a fresh folder with the task's files, the agent's command run
//!    there, its output streamed as events, the lease renewed, the server's jobs for the turn handled
//!    (`sync`, `run`, `ssh_agent`), the changed files uploaded, the goal's criteria commands run, the turn
//!    ended.
//!
//! The command is the runner's, not the agent's: `sky runner -- <command…>` or `--command "<shell line>"`;
//! it is remembered with the registration, so the next `sky runner --name <same>` needs none.
//! Exit: `--once` returns after one turn (an error when it did not complete); otherwise it runs until
//! stopped. Network failures are retried with a growing pause.
//!
//! `sky runner --hosted` is the same loop inside a hosted sandbox (a container the server starts for one
//! session): no registration and no config folder; the server, the runner token and how long to wait idle
//! before exiting (which lets the container sleep) come from the environment the sandbox was started
//! with ([`HOSTED_VARS`]); a hosted `runner` agent's command comes with each of its turns.

use crate::api::{normalize_server, Api};
use crate::auth::{self, say};
use crate::context::Context;
use crate::runner_client::{CallError, Claimed, Client};
use crate::turn::{Outcome, Timing, TurnRunner};
use crate::{config, key_prefix, Error, Result};
use agentsky_wire::argv::show as show_command;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// `sky runner`'s flags.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--server` and `--key` (the key is needed only to register).
    pub auth: auth::Options,
    /// `--name`: which runner of this machine; `sky on <host>` by default.
    pub name: Option<String>,
    /// `--workspace`: register in this workspace instead of the key's own.
    pub workspace: Option<String>,
    /// The agent's command: `-- <argv…>`, or `--command` as `sh -c <line>`.
    pub command: Option<Vec<String>>,
    /// `--once`: run one turn, then exit.
    pub once: bool,
    /// `--push-root`: where a task's local git remote may be pushed to.
    pub push_roots: Vec<PathBuf>,
}

/// One registered runner, as `runners.json` keeps it.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct Registration {
    pub server: String,
    pub name: String,
    pub runner_id: String,
    /// The runner's bearer (`srt_…`). Never printed in full.
    pub token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// The command last given for this runner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("server", &self.server)
            .field("name", &self.name)
            .field("runner_id", &self.runner_id)
            .field("token", &format!("{}…", key_prefix(&self.token)))
            .field("workspace", &self.workspace)
            .field("command", &self.command)
            .finish()
    }
}

/// Every runner registered from this machine's config folder.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Registrations {
    #[serde(default)]
    pub runners: Vec<Registration>,
}

impl Registrations {
    pub fn find(&self, server: &str, name: &str) -> Option<&Registration> {
        self.runners.iter().find(|r| normalize_server(&r.server) == server && r.name == name)
    }

    /// Every entry of this server and name (one per workspace it was registered in).
    pub fn all(&self, server: &str, name: &str) -> Vec<&Registration> {
        self.runners.iter().filter(|r| normalize_server(&r.server) == server && r.name == name).collect()
    }

    /// Adds or replaces the entry of `reg`'s server, name and workspace.
    pub fn put(&mut self, reg: Registration) {
        let server = normalize_server(&reg.server);
        self.runners
            .retain(|r| !(normalize_server(&r.server) == server && r.name == reg.name && r.workspace == reg.workspace));
        self.runners.push(reg);
    }
}

pub fn registrations_path(ctx: &Context) -> PathBuf {
    ctx.sky_dir().join("runners.json")
}

pub fn load_registrations(ctx: &Context) -> Result<Registrations> {
    let p = registrations_path(ctx);
    match std::fs::read_to_string(&p) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| {
            Error::new(format!("{} is not valid ({e}); delete it and `sky runner` registers again", ctx.show(&p)))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Registrations::default()),
        Err(e) => Err(Error::new(format!("cannot read {}: {e}", ctx.show(&p)))),
    }
}

/// Writes the registrations, 0600 in a 0700 folder.
pub fn save_registrations(ctx: &Context, regs: &Registrations) -> Result<()> {
    let p = registrations_path(ctx);
    let text = serde_json::to_string_pretty(regs).map_err(|e| Error::new(e.to_string()))? + "\n";
    crate::files::write_private(&p, &text).map_err(|e| Error::new(format!("cannot write {}: {e}", ctx.show(&p))))
}

/// Registers a runner with a workspace key.
pub fn register(api: &Api, key: &str, name: &str, workspace: Option<&str>) -> Result<Registration> {
    let mut body = json!({ "name": name });
    if let Some(w) = workspace {
        body["workspace"] = json!(w);
    }
    let r = api.post_json("/v1/runners", Some(key), &body)?;
    if r.status == 401 || r.status == 403 {
        return Err(Error::new(format!(
            "{} refused to register a runner with the key {}… ({}); registering needs an owner's or admin's key",
            api.base,
            key_prefix(key),
            r.error_message()
        )));
    }
    let b = r.into_ok("registering the runner (POST /v1/runners)")?;
    let (Some(runner_id), Some(token)) = (b["runner_id"].as_str(), b["token"].as_str()) else {
        return Err(Error::new(format!("{} answered the registration without a runner token", api.base)));
    };
    Ok(Registration {
        server: api.base.clone(),
        name: name.to_owned(),
        runner_id: runner_id.to_owned(),
        token: token.to_owned(),
        workspace: b["workspace"].as_str().map(str::to_owned).or_else(|| workspace.map(str::to_owned)),
        command: None,
    })
}

/// Finds or makes the registration for this server and name (re-registering when `fresh` is set), with
/// `command` remembered on it.
fn registration(
    ctx: &Context,
    opts: &Options,
    server: &str,
    name: &str,
    fresh: bool,
    out: &mut dyn Write,
) -> Result<Registration> {
    let mut regs = load_registrations(ctx)?;
    let stored = config::load(ctx).unwrap_or_default();
    let key = auth::key(ctx, &opts.auth, &stored, server).map(|(k, _)| k);
    // The workspace this start is for: `--workspace`, else the key's own as the server says, so a key of
    // another workspace never runs that workspace's turns under this one's registration.
    let wanted = match (&opts.workspace, &key) {
        (Some(w), _) => Some(w.clone()),
        (None, Some(k)) => match auth::check_key(&Api::new(server), k) {
            Ok(w) if w != "?" => Some(w),
            Ok(_) => None,
            Err(e) => {
                say(out, &format!("sky runner: the key's workspace could not be checked ({e})"));
                None
            }
        },
        (None, None) => None,
    };
    let mine = regs.all(server, name);
    let existing = match &wanted {
        _ if fresh => None,
        // An entry of an older sky does not say its workspace: it is taken as it is.
        Some(w) => mine.iter().find(|r| r.workspace.as_deref() == Some(w.as_str()) || r.workspace.is_none()),
        None if mine.len() > 1 => {
            let places: Vec<&str> = mine.iter().map(|r| r.workspace.as_deref().unwrap_or("?")).collect();
            return Err(Error::new(format!(
                "\"{name}\" is registered on {server} in the workspaces {}; pick one with --workspace",
                places.join(", ")
            )));
        }
        None => mine.first(),
    }
    .map(|r| (*r).clone());
    let elsewhere: Vec<String> =
        mine.iter().filter_map(|r| r.workspace.clone()).filter(|w| wanted.as_ref().is_some_and(|x| x != w)).collect();
    let mut reg = match existing {
        Some(r) => r,
        None => {
            let Some(key) = key else {
                return Err(Error::new(format!(
                    "sky runner registers with a workspace key first: sign in with `sky auth login --server {server}` (or pass --key / set AGENTSKY_API_KEY)"
                )));
            };
            if !fresh && !elsewhere.is_empty() {
                say(
                    out,
                    &format!(
                        "sky runner: \"{name}\" is registered in workspace {}, not in {} (this key's): registering it there too; the other registration stays for that workspace's key.",
                        elsewhere.join(", "),
                        wanted.as_deref().unwrap_or("?")
                    ),
                );
            }
            let mut reg = register(&Api::new(server), &key, name, opts.workspace.as_deref())?;
            reg.command = regs.find(server, name).and_then(|r| r.command.clone());
            say(
                out,
                &format!(
                    "sky runner: registered \"{name}\" ({}) in workspace {} on {server}; its token {}… is kept in {} (readable by you only).",
                    reg.runner_id,
                    reg.workspace.as_deref().unwrap_or("?"),
                    key_prefix(&reg.token),
                    ctx.show(&registrations_path(ctx))
                ),
            );
            reg
        }
    };
    if let Some(c) = &opts.command {
        reg.command = Some(c.clone());
    }
    if !regs.runners.contains(&reg) {
        regs.put(reg.clone());
        save_registrations(ctx, &regs)?;
    }
    Ok(reg)
}

/// A runner's turn runner, on `server` with `token`, running `command` for `runner` agents; its scratch
/// folder lives as long as the returned guard.
fn turn_runner(
    ctx: &Context,
    server: &str,
    token: &str,
    command: Vec<String>,
    push_roots: Vec<PathBuf>,
) -> Result<(TurnRunner, tempfile::TempDir)> {
    let sky_exe = std::env::current_exe().map_err(|e| Error::new(format!("cannot tell where sky is: {e}")))?;
    // The runner's own owner-only folder: turn folders inside it may have names a session keeps.
    let scratch = crate::files::private_temp_dir(&std::env::temp_dir(), "sky-runner-")
        .map_err(|e| Error::new(format!("cannot make the runner's folder: {e}")))?;
    let turns = TurnRunner {
        client: Client::new(server, token),
        command,
        sky_exe,
        path: ctx.path.clone(),
        scratch: scratch.path().to_owned(),
        push_roots,
        timing: Timing::default(),
        grants: Default::default(),
        conversations: Default::default(),
    };
    Ok((turns, scratch))
}

pub use agentsky_wire::runner::HOSTED_VARS;

/// `sky runner --hosted`: claims and runs the sandbox's session's turns (and checkouts) until none came
/// for the idle time, then exits 0 so the container stops; the next turn starts it again.
pub fn run_hosted(ctx: &Context, out: &mut dyn Write) -> Result<()> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let [server_var, token_var, idle_var] = HOSTED_VARS;
    let (Some(server), Some(token)) = (var(server_var), var(token_var)) else {
        return Err(Error::new(format!(
            "sky runner --hosted runs in a hosted sandbox, which sets {server_var} and {token_var}"
        )));
    };
    let idle = Duration::from_secs(var(idle_var).and_then(|s| s.parse().ok()).unwrap_or(300));
    let (mut turns, _scratch) = turn_runner(ctx, &server, &token, vec![], vec![])?;
    say(out, &format!("sky runner: hosted, on {server}; exits after {} s without work.", idle.as_secs()));
    let mut last_work = std::time::Instant::now();
    let mut pause = Duration::from_secs(1);
    loop {
        match turns.client.claim(turns.timing.claim_wait_s) {
            Ok(None) if last_work.elapsed() >= idle => {
                // One last look that does not wait: a turn that came just now is run, and the server hears
                // when this sandbox stops (its time is charged until this runner's last call).
                if let Ok(Some(claimed)) = turns.client.claim(0) {
                    run_claimed(&mut turns, claimed, out)?;
                    last_work = std::time::Instant::now();
                    continue;
                }
                say(out, "sky runner: idle; exiting so the sandbox sleeps.");
                return Ok(());
            }
            Ok(None) => pause = Duration::from_secs(1),
            Ok(Some(claimed)) => {
                pause = Duration::from_secs(1);
                run_claimed(&mut turns, claimed, out)?;
                last_work = std::time::Instant::now();
            }
            Err(CallError::Network(why)) => {
                say(out, &format!("sky runner: {why}; trying again in {} s", pause.as_secs()));
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_secs(30));
            }
            Err(e) => return Err(Error::new(format!("claiming a turn failed: {e}"))),
        }
    }
}

/// Runs what a claim handed over: a turn (its outcome) or a checkout's checks (`None`).
fn run_claimed(turns: &mut TurnRunner, claimed: Claimed, out: &mut dyn Write) -> Result<Option<Outcome>> {
    match claimed {
        Claimed::Checkout(c) => {
            if let Err(e) = turns.run_checkout(&c, out) {
                say(out, &format!("sky runner: the checks' result for session {} was not taken: {e}", c.session_id));
            }
            Ok(None)
        }
        Claimed::Turn(turn) => turns.run_turn(&turn, out).map(Some),
    }
}

/// `sky runner`: registers if needed, then claims and runs turns until stopped (or one, with `--once`).
pub fn run(ctx: &Context, opts: &Options, out: &mut dyn Write) -> Result<()> {
    let stored = config::load(ctx).unwrap_or_default();
    let server = auth::server(ctx, &opts.auth, &stored);
    let name = opts.name.clone().unwrap_or_else(auth::default_device_name);
    let mut reg = registration(ctx, opts, &server, &name, false, out)?;
    let command = reg.command.clone().unwrap_or_default();
    let (mut turns, _scratch) = turn_runner(ctx, &server, &reg.token, command, opts.push_roots.clone())?;
    let runs = match turns.command.is_empty() {
        true => "Claude Code and Codex agents (`runner` agents need `sky runner -- <command…>`)".to_owned(),
        false => format!("`{}` for `runner` agents, Claude Code and Codex for theirs", show_command(&turns.command)),
    };
    say(
        out,
        &format!(
            "sky runner: \"{name}\" ({}) in workspace {} on {server} runs {runs}; waiting for turns{}.",
            reg.runner_id,
            reg.workspace.as_deref().unwrap_or("? (registered by an older sky)"),
            if opts.once { " (one, --once)" } else { "; Ctrl-C stops it" }
        ),
    );
    let mut reregistered = false;
    let mut pause = Duration::from_secs(1);
    loop {
        match turns.client.claim(turns.timing.claim_wait_s) {
            Ok(None) => pause = Duration::from_secs(1),
            Ok(Some(claimed)) => {
                pause = Duration::from_secs(1);
                if let (Some(outcome), true) = (run_claimed(&mut turns, claimed, out)?, opts.once) {
                    return match outcome {
                        Outcome::Completed => Ok(()),
                        other => Err(Error::new(format!("the turn did not complete: {}", other.describe()))),
                    };
                }
            }
            Err(CallError::Unauthorized(why)) if !reregistered => {
                say(out, &format!("sky runner: {why}; registering \"{name}\" again"));
                reg = registration(ctx, opts, &server, &name, true, out)?;
                turns.client = Client::new(&server, &reg.token);
                reregistered = true;
            }
            Err(CallError::Network(why)) => {
                say(out, &format!("sky runner: {why}; trying again in {} s", pause.as_secs()));
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_secs(30));
            }
            Err(e) => return Err(Error::new(format!("claiming a turn failed: {e}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registrations_are_kept_per_server_and_name_and_never_debug_printed() {
        let reg = |server: &str, name: &str, token: &str| Registration {
            server: server.into(),
            name: name.into(),
            runner_id: "run_1".into(),
            token: token.into(),
            workspace: None,
            command: None,
        };
        let mut regs = Registrations::default();
        regs.put(reg("http://a/", "laptop", "srt_one_0123456789abcdef"));
        regs.put(reg("http://b", "laptop", "srt_two_0123456789abcdef"));
        regs.put(reg("http://a", "laptop", "srt_three_0123456789abcdef"));
        assert_eq!(regs.runners.len(), 2);
        assert_eq!(regs.find("http://a", "laptop").unwrap().token, "srt_three_0123456789abcdef");
        assert!(regs.find("http://a", "server").is_none());
        let shown = format!("{:?}", regs);
        assert!(!shown.contains("srt_three_0123456789abcdef") && shown.contains("srt_three_01…"), "{shown}");
    }
}
