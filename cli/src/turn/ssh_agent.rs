//! The turn's own ssh-agent: started on the first `ssh_agent` job, loaded with keys on their way from
//! the server (never on disk), ended with the turn or when its grant is revoked (`grant_forget`).

use super::describe_exit;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a new ssh-agent may take to make its socket.
const AGENT_START: Duration = Duration::from_secs(5);
/// How long `ssh-add` may take (a key with a passphrase would wait for one forever).
const ADD_KEY_LIMIT: Duration = Duration::from_secs(10);

/// The turn's own ssh-agent, started on first need and shared by the job channel and the granted
/// commands ([`super::granted`]).
#[derive(Clone, Default)]
pub(super) struct TurnAgent(Arc<Mutex<Option<SshAgent>>>);

impl TurnAgent {
    /// Loads `key` (for `ttl_s` seconds, or as long as the agent lives) into the turn's agent, starting it
    /// first when there is none: the agent's socket.
    pub fn load(
        &self,
        sky: &Path,
        path: Option<&OsString>,
        meta: &Path,
        key: &str,
        ttl_s: Option<u64>,
    ) -> Result<PathBuf, String> {
        let mut slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let agent = match slot.take() {
            Some(a) => a,
            None => SshAgent::start(sky, path, meta)?,
        };
        let agent = slot.insert(agent);
        agent.add(key, ttl_s, path)?;
        Ok(agent.socket.clone())
    }

    /// Ends the agent, its socket and every key it held; `true` when there was one.
    pub fn forget(&self) -> bool {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take().is_some()
    }
}

/// The turn's own ssh-agent (`ssh-agent -D -a <meta>/ssh/agent.sock`), a child of the runner under a
/// supervisor — not in the agent's process group, and gone with the runner even when it is killed. When
/// dropped it is ended (which removes its socket) and its owner-only folder is removed.
pub(super) struct SshAgent {
    child: Child,
    lifeline: Option<ChildStdin>,
    dir: PathBuf,
    pub socket: PathBuf,
}

impl SshAgent {
    fn start(sky: &Path, path: Option<&OsString>, meta: &Path) -> Result<Self, String> {
        if !cfg!(unix) {
            return Err("ssh_agent jobs need a runner on Unix".into());
        }
        let dir = std::path::absolute(meta.join("ssh")).map_err(|e| format!("cannot make the agent's folder: {e}"))?;
        crate::files::create_private_dir(&dir).map_err(|e| format!("cannot make the agent's folder: {e}"))?;
        let socket = dir.join("agent.sock");
        // Unix socket paths hold about 104 bytes.
        if socket.as_os_str().len() > 100 {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(format!(
                "the agent's socket path {} is too long for a Unix socket; run the runner with a shorter TMPDIR",
                socket.display()
            ));
        }
        let mut cmd = Command::new(sky);
        cmd.args(["__supervise", "/dev/null", "ssh-agent", "-D", "-a"])
            .arg(&socket)
            .env_remove("SSH_AUTH_SOCK")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(p) = path {
            cmd.env("PATH", p);
        }
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(format!("cannot start ssh-agent: {e}"));
            }
        };
        let lifeline = child.stdin.take();
        let mut agent = SshAgent { child, lifeline, dir, socket };
        let deadline = Instant::now() + AGENT_START;
        while !agent.socket.exists() {
            if let Ok(Some(status)) = agent.child.try_wait() {
                return Err(match status.code() {
                    Some(127) => "ssh-agent is not installed on this runner".into(),
                    _ => format!("ssh-agent {}", describe_exit(&status)),
                });
            }
            if Instant::now() >= deadline {
                return Err(format!("ssh-agent made no socket within {} s", AGENT_START.as_secs()));
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        Ok(agent)
    }

    /// Loads a private key — written to `ssh-add`'s stdin, never to disk — for `ttl_s` seconds, or for
    /// as long as the agent lives.
    fn add(&self, key: &str, ttl_s: Option<u64>, path: Option<&OsString>) -> Result<(), String> {
        let mut cmd = Command::new("ssh-add");
        if let Some(t) = ttl_s {
            cmd.arg("-t").arg(t.to_string());
        }
        cmd.arg("-")
            .env("SSH_AUTH_SOCK", &self.socket)
            .env_remove("SSH_AGENT_PID")
            .env("SSH_ASKPASS_REQUIRE", "never")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(p) = path {
            cmd.env("PATH", p);
        }
        // Off the runner's terminal: a passphrase prompt cannot take it over.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = cmd.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => "ssh-add is not installed on this runner".to_owned(),
            _ => format!("cannot run ssh-add: {e}"),
        })?;
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(key.as_bytes());
            if !key.ends_with('\n') {
                let _ = stdin.write_all(b"\n");
            }
        }
        let mut stderr = child.stderr.take();
        let said = std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(e) = stderr.as_mut() {
                let _ = e.read_to_string(&mut s);
            }
            s
        });
        let deadline = Instant::now() + ADD_KEY_LIMIT;
        let status = loop {
            match child.try_wait() {
                Ok(Some(s)) => break s,
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(25)),
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!(
                        "ssh-add did not finish within {} s (does the key want a passphrase?)",
                        ADD_KEY_LIMIT.as_secs()
                    ));
                }
            }
        };
        if status.success() {
            return Ok(());
        }
        let said = said.join().unwrap_or_default();
        Err(format!("ssh-add refused the key ({}): {}", describe_exit(&status), said.trim()))
    }
}

impl Drop for SshAgent {
    fn drop(&mut self) {
        // The supervisor sends SIGTERM (ssh-agent removes its socket), SIGKILL 3 s later.
        drop(self.lifeline.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
