//! A `push` job: `land` asks the runner of the landing session to push the task's base to the task's git
//! remote, with the session's grant on the remote's connector (the server's `src/agent/pushing.rs`).
//!
//! In a fresh private folder the runner makes one commit whose tree is the base as the server has it and
//! whose parent is the commit agentsky last pushed (`expected_head`; the branch's head at the first push),
//! and pushes it without force. If the branch moved since agentsky last pushed, nothing is pushed and the
//! answer says so (non-fast-forward): the other work is never overwritten. The grant's token (for an
//! `https://` remote) reaches only the `git` processes, as an `Authorization` header in their environment
//! (`GIT_CONFIG_*`), never in a URL, an argument or a file; what git prints is masked before it is
//! reported. The https host must resolve to a public address, which git is then held to. A local remote
//! gets no token and must be under a folder the runner's owner allows (`--push-root`).
//!
//! git runs with none of the runner user's configuration (no system or global file, no credential helper,
//! hooks or redirects; only the https and local transports), and its own folder is kept apart from the
//! work tree the task's files are written into, which never take a name git's folder could have.

use super::SCRUBBED_ENV;
use crate::runner_client::{Client, GrantCredential, Job, Scope};
use agentsky_wire::runner::{to_value, PushResult};
use base64::Engine;
use serde_json::Value;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Variables a grant's credential may hold a git token in, most specific first.
const TOKEN_VARS: &[&str] = &["GIT_TOKEN", "GH_TOKEN", "GITHUB_TOKEN", "GITLAB_TOKEN"];
/// How much of git's complaint goes back to `land`.
const ERROR_CHARS: usize = 800;

/// Runs a `push` job: `{ok: true, head}` or `{ok: false, error}`.
pub(super) fn push(
    client: &Client,
    lease: &str,
    scratch: &Path,
    path: Option<&OsString>,
    roots: &[PathBuf],
    job: &Job,
) -> Value {
    match try_push(client, lease, scratch, path, roots, job) {
        Ok(head) => to_value(&PushResult { ok: true, head: Some(head), error: None }),
        Err(why) => to_value(&PushResult { ok: false, head: None, error: Some(why) }),
    }
}

fn try_push(
    client: &Client,
    lease: &str,
    scratch: &Path,
    path: Option<&OsString>,
    roots: &[PathBuf],
    job: &Job,
) -> Result<String, String> {
    let need = |v: &Option<String>, k: &str| v.clone().filter(|s| !s.is_empty()).ok_or(format!("the job has no `{k}`"));
    let (url, branch, grant_id) =
        (need(&job.spec.url, "url")?, need(&job.spec.branch, "branch")?, need(&job.spec.grant_id, "grant_id")?);
    if url.starts_with('-') || branch.starts_with('-') {
        return Err("the remote or branch starts with `-`".into());
    }
    let mut auth: Vec<(String, String)> = vec![];
    let mut secrets: Vec<String> = vec![];
    let mut pin = None;
    if url.starts_with("https://") {
        pin = Some(public_address(&url)?);
        let vars = match client.credential(lease, &grant_id, &[Scope::Write]) {
            Ok(GrantCredential::Env { vars, .. }) => vars,
            Ok(GrantCredential::Ssh { .. }) => {
                return Err("pushing with an ssh key is not supported yet; use an https:// remote with a token".into())
            }
            Err(e) => return Err(format!("the grant's credential could not be fetched: {e}")),
        };
        secrets = vars.iter().map(|(_, v)| v.clone()).filter(|v| v.len() >= 6).collect();
        let Some(token) = TOKEN_VARS
            .iter()
            .find_map(|k| vars.iter().find(|(n, v)| n.as_str() == *k && !v.is_empty()))
            .map(|(_, v)| v.clone())
        else {
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
    } else if local_path(&url).is_some() {
        // A repository on this machine: no token goes with it, and only under the roots the owner allows.
        allowed_local(&url, roots)?;
    } else {
        return Err("the remote is neither an https:// URL nor a local repository".into());
    }
    let files = client.files(lease).map_err(|e| format!("the task's files could not be fetched: {e}"))?;
    let push = Push {
        url: &url,
        branch: &branch,
        expected_head: job.spec.expected_head.as_deref(),
        message: job.spec.message.as_deref(),
    };
    let git_dir =
        crate::files::private_temp_dir(scratch, "sky-push-git-").map_err(|e| format!("no scratch folder: {e}"))?;
    let work = crate::files::private_temp_dir(scratch, "sky-push-").map_err(|e| format!("no scratch folder: {e}"))?;
    let git =
        Git { git_dir: git_dir.path(), work: work.path(), path, auth: &auth, secrets: &secrets, pin, env: vec![] };
    push_tree(&git, &push, &files)
}

/// Where the owner of a runner may list the folders local remotes may be under, besides
/// `sky runner --push-root DIR` (several are separated like `PATH`).
pub const PUSH_ROOTS_VAR: &str = "AGENTSKY_PUSH_ROOTS";

/// What one push is.
struct Push<'a> {
    url: &'a str,
    branch: &'a str,
    expected_head: Option<&'a str>,
    message: Option<&'a str>,
}

/// Builds the commit of `files` on what agentsky pushed last and pushes it without force: the new head.
fn push_tree(git: &Git, p: &Push, files: &[(String, String)]) -> Result<String, String> {
    let (url, branch) = (p.url, p.branch);
    git.run(&["init", "-q"])?;
    let listed = git.run(&["ls-remote", "--heads", "--", url, &format!("refs/heads/{branch}")])?;
    let remote_head = listed.split_whitespace().next().map(str::to_owned);
    let parent = match (p.expected_head, remote_head.as_deref()) {
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
        git.run(&["fetch", "-q", "--no-tags", "--", url, &format!("refs/heads/{branch}")])?;
    }
    for (file, content) in files {
        // The task-file rule keeps paths relative and normal; git's own folder (in any spelling a file
        // system may take for it) is never the task's.
        if !agentsky_wire::paths::is_normal(file) || file.split('/').any(git_alias) {
            continue;
        }
        let to = git.work.join(file);
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
    let message = p.message.unwrap_or("agentsky: landed work");
    let mut commit = vec!["commit-tree", tree.as_str(), "-m", message];
    if let Some(p) = &parent {
        commit.extend(["-p", p.as_str()]);
    }
    let head = git.run(&commit)?.trim().to_owned();
    git.run(&["push", "-q", "--", url, &format!("{head}:refs/heads/{branch}")])?;
    Ok(head)
}

/// Whether a path segment names git's folder on some file system: `.git` in any case, with trailing dots
/// or spaces (Windows drops them), or its 8.3 short name `git~1`.
fn git_alias(segment: &str) -> bool {
    let name = segment.trim_end_matches(['.', ' ']).to_ascii_lowercase();
    name == ".git" || name == "git~1"
}

/// The absolute path of a local remote (`file:///abs` or `/abs`).
fn local_path(url: &str) -> Option<&Path> {
    let path = url.strip_prefix("file://").unwrap_or(url);
    path.starts_with('/').then(|| Path::new(path))
}

/// A local remote must be, once its links are resolved, under one of the runner owner's `roots`.
fn allowed_local(url: &str, roots: &[PathBuf]) -> Result<(), String> {
    let refuse = || {
        format!(
            "this runner pushes to local repositories only under the folders its owner allows (`sky runner --push-root DIR`); {url} is not under one"
        )
    };
    let path = local_path(url).ok_or_else(refuse)?;
    let real = path.canonicalize().map_err(|_| format!("the local repository {url} does not exist on this runner"))?;
    if roots.iter().filter_map(|r| r.canonicalize().ok()).any(|r| real.starts_with(r)) {
        Ok(())
    } else {
        Err(refuse())
    }
}

/// The host of an `https://` remote resolved to a public address, which git is then held to (no
/// resolving again to somewhere else): `host:443:addr`.
fn public_address(url: &str) -> Result<String, String> {
    use std::net::ToSocketAddrs;
    let authority = url.strip_prefix("https://").and_then(|r| r.split(['/', '?', '#']).next()).unwrap_or_default();
    let host = authority.strip_suffix(":443").unwrap_or(authority);
    if host.is_empty() || host.contains(['@', ':', '[', ']']) {
        return Err("the remote's host is not a plain host name".into());
    }
    let addrs: Vec<_> = (host, 443).to_socket_addrs().map_err(|_| format!("cannot resolve {host}"))?.collect();
    let Some(first) = addrs.first() else { return Err(format!("cannot resolve {host}")) };
    if addrs.iter().any(|a| !is_public(a.ip())) {
        return Err(format!("{host} resolves to a private address; not pushed"));
    }
    Ok(match first.ip() {
        std::net::IpAddr::V6(ip) => format!("{host}:443:[{ip}]"),
        ip => format!("{host}:443:{ip}"),
    })
}

/// Whether an address is on the public internet (not loopback, private, link-local, shared or reserved).
fn is_public(ip: std::net::IpAddr) -> bool {
    use std::net::IpAddr;
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_documentation()
                || v4.is_multicast()
                || o[0] == 0
                || (o[0] == 100 && (64..128).contains(&o[1]))
                || (o[0] == 192 && o[1] == 0 && o[2] == 0)
                || (o[0] == 198 && (18..20).contains(&o[1]))
                || o[0] >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let s = v6.segments();
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                || (s[0] == 0x2001 && s[1] == 0x0db8)
                || (s[0] == 0x64 && s[1] == 0xff9b))
        }
    }
}

/// Settings given to every `git` the push runs, whatever the runner user's own configuration says: no
/// credential helper (the grant's header is the only credential), no redirects (the token stays on the
/// remote's host), no hooks, and only the https and local transports.
const GIT_SETTINGS: &[&str] = &[
    "init.defaultBranch=main",
    "credential.helper=",
    "http.followRedirects=false",
    "core.hooksPath=/dev/null",
    "protocol.allow=never",
    "protocol.https.allow=always",
    "protocol.file.allow=always",
    "core.fsmonitor=false",
];

/// `git` on the push's own git folder (kept apart from the work tree, which task files fill), with the
/// runner's `PATH` and the push's auth only; no system, global or user configuration.
struct Git<'a> {
    git_dir: &'a Path,
    work: &'a Path,
    path: Option<&'a OsString>,
    auth: &'a [(String, String)],
    secrets: &'a [String],
    /// `host:443:addr` the https remote resolved to.
    pin: Option<String>,
    /// Set first (tests give a `HOME` here), then overridden by the push's own.
    env: Vec<(String, OsString)>,
}

impl Git<'_> {
    /// Runs `git args…`; its stdout, or what it said (masked) when it failed.
    fn run(&self, args: &[&str]) -> Result<String, String> {
        let mut cmd = Command::new("git");
        for name in SCRUBBED_ENV {
            cmd.env_remove(name);
        }
        for (k, _) in std::env::vars_os() {
            if k.to_str().is_some_and(|k| k.starts_with("GIT_")) {
                cmd.env_remove(k);
            }
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        match self.path {
            Some(p) => cmd.env("PATH", p),
            None => cmd.env_remove("PATH"),
        };
        cmd.env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_ASKPASS", "")
            .env("SSH_ASKPASS", "")
            .env("GIT_AUTHOR_NAME", "agentsky")
            .env("GIT_AUTHOR_EMAIL", "agentsky@users.noreply.invalid")
            .env("GIT_COMMITTER_NAME", "agentsky")
            .env("GIT_COMMITTER_EMAIL", "agentsky@users.noreply.invalid")
            .envs(self.auth.iter().map(|(k, v)| (k, v)));
        for setting in GIT_SETTINGS {
            cmd.args(["-c", setting]);
        }
        if let Some(pin) = &self.pin {
            cmd.args(["-c", &format!("http.curloptResolve={pin}")]);
        }
        cmd.arg(format!("--git-dir={}", self.git_dir.display()))
            .arg(format!("--work-tree={}", self.work.display()))
            .args(args)
            .current_dir(self.work)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn git_in(dir: &Path, args: &[&str]) -> String {
        let out =
            Command::new("git").args(args).current_dir(dir).env("GIT_CONFIG_GLOBAL", "/dev/null").output().unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// Pushes `files` to `url` with a `HOME` whose `.gitconfig` is the given text.
    fn push_with_home(root: &Path, gitconfig: &str, url: &str, files: &[(&str, &str)]) -> Result<String, String> {
        let home = root.join("home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join(".gitconfig"), gitconfig).unwrap();
        let (git_dir, work) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let path = std::env::var_os("PATH");
        let env = vec![("HOME".to_owned(), home.into_os_string())];
        let git = Git {
            git_dir: git_dir.path(),
            work: work.path(),
            path: path.as_ref(),
            auth: &[],
            secrets: &[],
            pin: None,
            env,
        };
        let files: Vec<(String, String)> = files.iter().map(|(p, c)| (p.to_string(), c.to_string())).collect();
        let push = Push { url, branch: "main", expected_head: None, message: Some("m") };
        let head = push_tree(&git, &push, &files);
        assert_eq!(std::fs::read_to_string(git_dir.path().join("HEAD")).unwrap(), "ref: refs/heads/main\n");
        head
    }

    #[test]
    fn the_runner_users_git_configuration_is_ignored() {
        let root = tempfile::tempdir().unwrap();
        let (real, decoy) = (root.path().join("real.git"), root.path().join("decoy.git"));
        for r in [&real, &decoy] {
            git_in(root.path(), &["init", "-q", "--bare", r.to_str().unwrap()]);
        }
        let marker = root.path().join("helper-ran");
        let hooks = root.path().join("hooks");
        std::fs::create_dir_all(&hooks).unwrap();
        std::fs::write(hooks.join("pre-push"), format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::PermissionsExt::set_mode(
            &mut std::fs::metadata(hooks.join("pre-push")).unwrap().permissions(),
            0o755,
        );
        let gitconfig = format!(
            "[url \"{decoy}\"]\n\tinsteadOf = {real}\n[credential]\n\thelper = \"!touch {marker}\"\n[core]\n\thooksPath = {hooks}\n",
            decoy = decoy.display(),
            real = real.display(),
            marker = marker.display(),
            hooks = hooks.display()
        );
        let head = push_with_home(root.path(), &gitconfig, real.to_str().unwrap(), &[("a.txt", "a")]).unwrap();
        assert_eq!(
            git_in(&real, &["rev-parse", "main"]),
            head,
            "pushed where the job said, not where insteadOf points"
        );
        assert!(git_in(&decoy, &["for-each-ref"]).is_empty());
        assert!(!marker.exists(), "no helper or hook of the user's ran");
    }

    #[test]
    fn task_files_never_reach_gits_own_folder() {
        let root = tempfile::tempdir().unwrap();
        let real = root.path().join("real.git");
        git_in(root.path(), &["init", "-q", "--bare", real.to_str().unwrap()]);
        let evil = "[core]\n\tfsmonitor = touch /tmp/owned\n";
        let files = [
            ("ok.txt", "ok"),
            (".git/config", evil),
            (".GIT/config", evil),
            ("Git~1/config", evil),
            ("sub/.Git/hooks/pre-commit", evil),
            ("sub/git~1/x", evil),
        ];
        let head = push_with_home(root.path(), "", real.to_str().unwrap(), &files).unwrap();
        assert_eq!(git_in(&real, &["ls-tree", "-r", "--name-only", &head]), "ok.txt");
        for alias in [".git", ".GIT", ".git.", ".git. .", "GIT~1", "git~1 "] {
            assert!(git_alias(alias), "{alias}");
        }
        for name in ["git", ".github", ".gitignore", "git~2", "x.git"] {
            assert!(!git_alias(name), "{name}");
        }
    }

    #[test]
    fn local_remotes_only_under_the_owners_roots() {
        let root = tempfile::tempdir().unwrap();
        let (allowed, other) = (root.path().join("allowed"), root.path().join("other"));
        for d in [&allowed, &other] {
            std::fs::create_dir_all(d.join("r.git")).unwrap();
        }
        let inside = format!("file://{}/r.git", allowed.display());
        let roots = std::slice::from_ref(&allowed);
        assert!(allowed_local(&inside, roots).is_ok());
        assert!(allowed_local(&format!("{}/r.git", allowed.display()), roots).is_ok());
        let e = allowed_local(&format!("{}/r.git", other.display()), roots).unwrap_err();
        assert!(e.contains("--push-root"), "{e}");
        assert!(allowed_local(&inside, &[]).unwrap_err().contains("--push-root"));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(other.join("r.git"), allowed.join("link.git")).unwrap();
            let e = allowed_local(&format!("{}/link.git", allowed.display()), roots).unwrap_err();
            assert!(e.contains("--push-root"), "a link out of the root is followed: {e}");
        }
    }

    #[test]
    fn https_remotes_must_resolve_to_public_addresses() {
        for url in
            ["https://127.0.0.1/r.git", "https://localhost/r.git", "https://10.1.2.3/r.git", "https://[::1]/r.git"]
        {
            let e = public_address(url).unwrap_err();
            assert!(e.len() < 80 && (e.contains("private") || e.contains("plain host")), "{url}: {e}");
        }
        for ip in ["169.254.169.254", "100.64.0.1", "192.168.1.1", "::ffff:127.0.0.1", "fd00::1", "fe80::1", "0.0.0.0"]
        {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["140.82.112.3", "2606:4700::1"] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
    }
}
