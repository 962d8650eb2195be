//! A `push` job: `land` asks the runner of the landing session to push the task's base to the task's git
//! remote, with the session's grant on the remote's connector (the server's `src/agent/pushing.rs`).
//!
//! In a fresh private folder the runner makes one commit whose tree is the base as the server has it and
//! whose parent is the commit agentsky last pushed (`expected_head`; the branch's head at the first push),
//! and pushes it without force. If the branch moved since agentsky last pushed, nothing is pushed and the
//! answer says so (non-fast-forward): the other work is never overwritten. The grant's token (for an
//! `https://` remote) reaches only the `git` processes, as an `Authorization` header in their environment
//! (`GIT_CONFIG_*`), never in a URL, an argument or a file; what git prints is masked before it is
//! reported.

use super::SCRUBBED_ENV;
use crate::runner::{Client, GrantCredential, Job};
use base64::Engine;
use serde_json::{json, Value};
use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, Stdio};

/// Variables a grant's credential may hold a git token in, most specific first.
const TOKEN_VARS: &[&str] = &["GIT_TOKEN", "GH_TOKEN", "GITHUB_TOKEN", "GITLAB_TOKEN"];
/// How much of git's complaint goes back to `land`.
const ERROR_CHARS: usize = 800;

/// Runs a `push` job: `{ok: true, head}` or `{ok: false, error}`.
pub(super) fn push(client: &Client, lease: &str, scratch: &Path, path: Option<&OsString>, job: &Job) -> Value {
    match try_push(client, lease, scratch, path, job) {
        Ok(head) => json!({ "ok": true, "head": head }),
        Err(why) => json!({ "ok": false, "error": why }),
    }
}

fn try_push(
    client: &Client,
    lease: &str,
    scratch: &Path,
    path: Option<&OsString>,
    job: &Job,
) -> Result<String, String> {
    let need = |v: &Option<String>, k: &str| v.clone().filter(|s| !s.is_empty()).ok_or(format!("the job has no `{k}`"));
    let (url, branch, grant_id) =
        (need(&job.url, "url")?, need(&job.branch, "branch")?, need(&job.grant_id, "grant_id")?);
    if url.starts_with('-') || branch.starts_with('-') {
        return Err("the remote or branch starts with `-`".into());
    }
    let vars = match client.credential(lease, &grant_id, &["write"]) {
        Ok(GrantCredential::Env { vars, .. }) => vars,
        Ok(GrantCredential::Ssh { .. }) => {
            return Err("pushing with an ssh key is not supported yet; use an https:// remote with a token".into())
        }
        Err(e) => return Err(format!("the grant's credential could not be fetched: {e}")),
    };
    let token = TOKEN_VARS
        .iter()
        .find_map(|k| vars.iter().find(|(n, v)| n.as_str() == *k && !v.is_empty()))
        .map(|(_, v)| v.clone());
    let mut auth: Vec<(String, String)> = vec![];
    let mut secrets: Vec<String> = vars.iter().map(|(_, v)| v.clone()).filter(|v| v.len() >= 6).collect();
    if url.starts_with("https://") || url.starts_with("http://") {
        let Some(token) = token else {
            return Err(format!(
                "the grant's credential holds no token git can push with (one of {})",
                TOKEN_VARS.join(", ")
            ));
        };
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{token}"));
        secrets.push(basic.clone());
        auth = vec![
            ("GIT_CONFIG_COUNT".into(), "1".into()),
            ("GIT_CONFIG_KEY_0".into(), "http.extraHeader".into()),
            ("GIT_CONFIG_VALUE_0".into(), format!("Authorization: Basic {basic}")),
        ];
    }
    drop(vars);
    let files = client.files(lease).map_err(|e| format!("the task's files could not be fetched: {e}"))?;
    let dir = crate::files::private_temp_dir(scratch, "sky-push-").map_err(|e| format!("no scratch folder: {e}"))?;
    let git = Git { dir: dir.path(), path, auth: &auth, secrets: &secrets };
    git.run(&["init", "-q"])?;
    let listed = git.run(&["ls-remote", "--heads", "--", &url, &format!("refs/heads/{branch}")])?;
    let remote_head = listed.split_whitespace().next().map(str::to_owned);
    let parent = match (job.expected_head.as_deref(), remote_head.as_deref()) {
        (Some(expected), Some(now)) if expected != now => {
            return Err(format!(
                "rejected (non-fast-forward): {branch} on the remote is at {now}, not at {expected}, which agentsky pushed last; someone else pushed there. Bring that work into the task (or set the remote again to start over) and land again"
            ))
        }
        (Some(expected), None) => {
            return Err(format!(
                "rejected: {branch} no longer exists on the remote (agentsky pushed {expected} there last); set the remote again to start it anew"
            ))
        }
        (_, now) => now.map(str::to_owned),
    };
    if parent.is_some() {
        git.run(&["fetch", "-q", "--no-tags", "--", &url, &format!("refs/heads/{branch}")])?;
    }
    for (file, content) in &files {
        // The task-file rule keeps paths relative and normal; `.git` is git's own, never the task's.
        if file
            .split('/')
            .any(|part| part.is_empty() || part == "." || part == ".." || part.eq_ignore_ascii_case(".git"))
        {
            continue;
        }
        let to = dir.path().join(file);
        if let Some(up) = to.parent() {
            std::fs::create_dir_all(up).map_err(|e| format!("cannot write {file}: {e}"))?;
        }
        std::fs::write(&to, content).map_err(|e| format!("cannot write {file}: {e}"))?;
    }
    git.run(&["add", "-A", "."])?;
    let tree = git.run(&["write-tree"])?.trim().to_owned();
    if let Some(p) = &parent {
        if git.run(&["rev-parse", &format!("{p}^{{tree}}")])?.trim() == tree {
            // Nothing new for the remote: its head already holds this tree.
            return Ok(p.clone());
        }
    }
    let message = job.message.clone().unwrap_or_else(|| "agentsky: landed work".into());
    let mut commit = vec!["commit-tree", tree.as_str(), "-m", message.as_str()];
    if let Some(p) = &parent {
        commit.extend(["-p", p.as_str()]);
    }
    let head = git.run(&commit)?.trim().to_owned();
    git.run(&["push", "-q", "--", &url, &format!("{head}:refs/heads/{branch}")])?;
    Ok(head)
}

/// `git` in the push folder, with the runner's `PATH` and the push's auth only.
struct Git<'a> {
    dir: &'a Path,
    path: Option<&'a OsString>,
    auth: &'a [(String, String)],
    secrets: &'a [String],
}

impl Git<'_> {
    /// Runs `git args…`; its stdout, or what it said (masked) when it failed.
    fn run(&self, args: &[&str]) -> Result<String, String> {
        let mut cmd = Command::new("git");
        for name in SCRUBBED_ENV {
            cmd.env_remove(name);
        }
        match self.path {
            Some(p) => cmd.env("PATH", p),
            None => cmd.env_remove("PATH"),
        };
        cmd.env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_AUTHOR_NAME", "agentsky")
            .env("GIT_AUTHOR_EMAIL", "agentsky@users.noreply.invalid")
            .env("GIT_COMMITTER_NAME", "agentsky")
            .env("GIT_COMMITTER_EMAIL", "agentsky@users.noreply.invalid")
            .envs(self.auth.iter().map(|(k, v)| (k, v)))
            .args(["-c", "init.defaultBranch=main"])
            .args(args)
            .current_dir(self.dir)
            .stdin(Stdio::null());
        let out = cmd.output().map_err(|e| format!("cannot run git on the runner: {e}"))?;
        if out.status.success() {
            return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
        }
        let said = format!("{}{}", String::from_utf8_lossy(&out.stderr), String::from_utf8_lossy(&out.stdout));
        let said = agentsky_wire::redact::mask(said.trim(), self.secrets);
        let tail: String = said.chars().rev().take(ERROR_CHARS).collect::<Vec<_>>().into_iter().rev().collect();
        Err(format!("`git {}` failed: {tail}", args.first().copied().unwrap_or("")))
    }
}
