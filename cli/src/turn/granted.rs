//! The runner's side of granted commands ([`crate::granted`]): the turn's channel, and the provider CLI
//! commands it runs on its shims' behalf.
//!
//! The channel is a Unix socket in an owner-only folder of its own under the runner's scratch folder,
//! outside the turn's folder, made when the turn starts and removed when it ends. Who may use it: on
//! Linux, a process the kernel (`SO_PEERCRED`) says runs as the runner's user, runs the runner's own `sky`
//! (the same file) and descends from the runner process ([`admit`]); the agent's environment then holds
//! only the socket's path. Elsewhere a request must carry the turn's secret (compared in constant time),
//! which the agent's environment holds. A request names a provider CLI, its arguments, a working folder
//! and a grant. The runner then, itself:
//! 1. finds the real CLI on its own `PATH` (never the agent's, and never the shim folder): a CLI the agent
//!    put on its own `PATH` is not what runs;
//! 2. works out the scopes the command needs with the shims' tables, and fetches the grant's credential
//!    for them (`POST /v1/runner/credential`: refused unless the leased session may use that live grant
//!    and it covers them); an ssh key goes into the turn's own ssh-agent;
//! 3. runs the CLI under a supervisor (so it dies with the runner), in the requested folder, with the
//!    runner's `PATH` and the turn's environment plus the credential, in that child's environment only;
//!    stdin is empty (pass `--yes` and the like); stdout and stderr stream back to the shim as they come;
//! 4. watches it exit — or ends it when the shim goes away, the turn ends, the grant is revoked
//!    ([`Channel::forget`]) or the grant's time runs out (`ttl_s`) — and reports the argv and the exit
//!    status it observed (`POST /v1/runner/commands`) before the shim hears it, so a `remember_command`
//!    that follows finds its proof; then tells the shim.
//!
//! **What the peer check is worth.** The agent, its shims and the runner run as one OS user. The check
//! keeps other users, other programs the agent writes (a script speaking the protocol) and leftovers of
//! earlier turns (reparented away from the runner) off the channel, and leaves nothing secret in the
//! agent's environment, files or transcript. It does not stop an agent that runs `sky shim …` itself
//! (which is what its shims do anyway), that injects code into a `sky` it starts (`LD_PRELOAD`, ptrace),
//! or that reads a running CLI's environment through `/proc/<pid>/environ`, which the same user may: the
//! credential lives in that child for as long as it runs. Through the channel an agent can only have the
//! runner run a real provider CLI under a grant it holds. The server's `src/runner/granted.rs` says what
//! the proof is worth.

use super::command::wait_for;
use super::ssh_agent::TurnAgent;
use super::{exit_code, SCRUBBED_ENV};
use crate::granted::{same_secret, write_frame, Frame, Request, MAX_REQUEST_BYTES, SECRET_ENV, SOCKET_ENV};
use crate::runner_client::{CallError, Client, GrantCredential, Scope};
use crate::shim::{self, Need, EXIT_NOT_INSTALLED, EXIT_REFUSED, EXIT_UNREACHABLE};
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a connection may take to send its request.
const REQUEST_WAIT: Duration = Duration::from_secs(10);
/// A granted command has no time limit of its own: the turn's end bounds it.
const NO_LIMIT: Duration = Duration::from_secs(24 * 60 * 60);

/// What a granted command needs from its turn, shared with the threads that serve the channel.
pub(in crate::turn) struct Runs {
    pub client: Client,
    pub lease: String,
    pub sky_exe: PathBuf,
    /// The runner's own `PATH`: where the real CLIs are found, and the `PATH` they run with.
    pub path: Option<OsString>,
    /// The shim folder, never searched for a real CLI.
    pub shims: PathBuf,
    /// Where the turn's ssh-agent keeps its socket.
    pub meta: PathBuf,
    /// The working folder when a request names none that exists.
    pub work: PathBuf,
    /// The turn's environment (as the agent's command gets it, without the channel's variables).
    pub env: Vec<(String, OsString)>,
    pub agent: TurnAgent,
    pub grace: Duration,
}

/// The turn's channel: listening until dropped.
pub(in crate::turn) struct Channel {
    /// The channel's folder, removed when the channel is dropped (after its commands ended).
    _dir: tempfile::TempDir,
    pub socket: PathBuf,
    pub secret: String,
    /// Raised when the turn ends: no more requests, and commands still going are ended.
    over: Arc<AtomicBool>,
    /// Connections being served.
    busy: Arc<AtomicUsize>,
    /// The commands going, by the grant each runs under: ended when that grant is revoked.
    going: Going,
    grace: Duration,
}

/// The commands going and the grant each runs under, with what ends each.
/// Each: the grant, what ends the command, and whether a revocation did.
type Going = Arc<Mutex<Vec<(String, Arc<AtomicBool>, Arc<AtomicBool>)>>>;

impl Channel {
    /// Opens a channel in a new owner-only folder under `scratch` (outside the turn's folder) and serves
    /// it on a thread of its own.
    pub fn open(scratch: &Path, runs: Runs) -> std::io::Result<Self> {
        let dir = crate::files::private_temp_dir(scratch, "sky-granted-")?;
        let socket = dir.path().join("s");
        // Unix socket paths hold about 104 bytes.
        if socket.as_os_str().len() > 100 {
            return Err(std::io::Error::other(format!(
                "the channel's socket path {} is too long; run the runner with a shorter TMPDIR",
                socket.display()
            )));
        }
        let opened = (|| {
            let secret = crate::granted::new_secret()?;
            let listener = UnixListener::bind(&socket)?;
            listener.set_nonblocking(true)?;
            Ok::<_, std::io::Error>((secret, listener))
        })();
        let (secret, listener) = opened?;
        let (over, busy, grace) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)), runs.grace);
        let going = Going::default();
        serve(listener, Arc::new(runs), secret.clone(), over.clone(), busy.clone(), going.clone());
        Ok(Self { _dir: dir, socket, secret, over, busy, going, grace })
    }

    /// Ends every command going under `grant_id` (it was revoked): how many there were.
    pub fn forget(&self, grant_id: &str) -> usize {
        let going = self.going.lock().unwrap_or_else(|e| e.into_inner());
        let ended: Vec<_> = going.iter().filter(|(g, _, _)| g == grant_id).collect();
        for (_, cancel, revoked) in &ended {
            revoked.store(true, Ordering::SeqCst);
            cancel.store(true, Ordering::SeqCst);
        }
        ended.len()
    }

    /// The variables that point the turn's shims at this channel.
    /// On Linux only the socket's path: the kernel's word on the caller ([`admit`]) replaces a secret the
    /// agent's environment would hold. Elsewhere the secret too.
    pub fn env(&self) -> Vec<(String, OsString)> {
        let mut env = vec![(SOCKET_ENV.into(), self.socket.clone().into())];
        if !cfg!(target_os = "linux") {
            env.push((SECRET_ENV.into(), self.secret.clone().into()));
        }
        env
    }
}

impl Drop for Channel {
    /// Stops listening, ends the commands still going (waiting a little for their reports) and removes the
    /// folder.
    fn drop(&mut self) {
        self.over.store(true, Ordering::SeqCst);
        let deadline = Instant::now() + self.grace.max(Duration::from_secs(3)) + Duration::from_secs(5);
        while self.busy.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Accepts connections until `over`, each served on a thread of its own.
fn serve(
    listener: UnixListener,
    runs: Arc<Runs>,
    secret: String,
    over: Arc<AtomicBool>,
    busy: Arc<AtomicUsize>,
    going: Going,
) {
    std::thread::spawn(move || {
        while !over.load(Ordering::SeqCst) {
            match listener.accept() {
                Ok((stream, _)) => {
                    let (runs, secret, over, busy) = (runs.clone(), secret.clone(), over.clone(), busy.clone());
                    let going = going.clone();
                    busy.fetch_add(1, Ordering::SeqCst);
                    std::thread::spawn(move || {
                        answer(&runs, &secret, &over, &going, stream);
                        busy.fetch_sub(1, Ordering::SeqCst);
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(25)),
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    });
}

/// The shim's end: frames written under a lock (stdout and stderr come from two threads).
#[derive(Clone)]
struct Shim(Arc<Mutex<UnixStream>>);

impl Shim {
    /// Sends a frame; `false` once the shim is gone.
    fn send(&self, frame: &Frame) -> bool {
        let mut s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        write_frame(&mut *s, frame).is_ok()
    }

    fn say(&self, line: &str) -> bool {
        self.send(&Frame::Stderr(format!("sky runner: {line}\n").into_bytes()))
    }
}

/// Serves one connection: checks the request, runs it, and ends with its exit status.
fn answer(runs: &Runs, secret: &str, over: &Arc<AtomicBool>, going: &Going, stream: UnixStream) {
    let (Ok(()), Ok(reading)) = (stream.set_nonblocking(false), stream.try_clone()) else { return };
    let _ = reading.set_read_timeout(Some(REQUEST_WAIT));
    let mut reading = BufReader::new(reading);
    let mut line = Vec::new();
    let read = (&mut reading).take(MAX_REQUEST_BYTES).read_until(b'\n', &mut line);
    let shim = Shim(Arc::new(Mutex::new(stream)));
    let request = read.ok().and_then(|_| serde_json::from_slice::<Request>(&line).ok());
    let code = match (request, admit(&shim, &runs.sky_exe, secret)) {
        (_, Err(why)) => refuse(&shim, EXIT_REFUSED, &format!("{why}; nothing was run")),
        (None, _) => refuse(&shim, EXIT_REFUSED, "the request could not be read"),
        (Some(r), Ok(())) if !cfg!(target_os = "linux") && !same_secret(&r.secret, secret) => {
            refuse(&shim, EXIT_REFUSED, "the request does not carry this turn's secret; nothing was run")
        }
        (Some(r), Ok(())) => run(runs, &r, over, going, reading.into_inner(), &shim),
    };
    shim.send(&Frame::Exit(code));
}

/// Who may use the channel, on the kernel's word about the connecting process (`SO_PEERCRED`): this
/// runner's user, running this `sky` (the same file: device and inode), and a descendant of this runner
/// process (a turn's command or its children; one turn runs at a time, each with its own socket). Nothing
/// secret is in the agent's environment, files or transcript.
#[cfg(target_os = "linux")]
fn admit(shim: &Shim, sky_exe: &Path, _secret: &str) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let stream = shim.0.lock().unwrap_or_else(|e| e.into_inner());
    let peer = rustix::net::sockopt::socket_peercred(&*stream)
        .map_err(|e| format!("the caller's credentials cannot be read ({e})"))?;
    drop(stream);
    if peer.uid != rustix::process::getuid() {
        return Err("the caller runs as another user".into());
    }
    let pid = peer.pid.as_raw_nonzero().get();
    let not_shim = || "the caller is not agentsky's shim (this runner's `sky`)".to_owned();
    let exe = std::fs::metadata(format!("/proc/{pid}/exe")).map_err(|_| not_shim())?;
    let sky = std::fs::metadata(sky_exe).map_err(|e| format!("the runner's own `sky` cannot be read ({e})"))?;
    if (exe.dev(), exe.ino()) != (sky.dev(), sky.ino()) {
        return Err(not_shim());
    }
    if !descends_from(pid, std::process::id() as i32) {
        return Err("the caller is not a process of this runner's turn".into());
    }
    Ok(())
}

/// Elsewhere the request's secret decides (checked by the caller).
#[cfg(not(target_os = "linux"))]
fn admit(_shim: &Shim, _sky_exe: &Path, _secret: &str) -> Result<(), String> {
    Ok(())
}

/// Whether `pid` is `ancestor` or one of its descendants, by the parents `/proc` gives.
#[cfg(target_os = "linux")]
fn descends_from(pid: i32, ancestor: i32) -> bool {
    let mut p = pid;
    for _ in 0..4096 {
        if p == ancestor {
            return true;
        }
        if p <= 1 {
            return false;
        }
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else { return false };
        // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
        let ppid = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse().ok());
        match ppid {
            Some(next) => p = next,
            None => return false,
        }
    }
    false
}

fn refuse(shim: &Shim, code: i32, why: &str) -> i32 {
    shim.say(why);
    code
}

/// Runs a checked request to its end; its exit status.
fn run(runs: &Runs, r: &Request, over: &Arc<AtomicBool>, going: &Going, reading: UnixStream, shim: &Shim) -> i32 {
    if !shim::SHIMS.iter().any(|(cli, _)| *cli == r.cli) {
        return refuse(shim, EXIT_REFUSED, &format!("`{}` is not a provider CLI the runner runs", r.cli));
    }
    let Some(real) =
        shim::find_real(&r.cli, runs.path.as_ref(), std::slice::from_ref(&runs.shims), Some(&runs.sky_exe))
    else {
        let why = format!("the real `{}` is not installed on the runner's PATH; nothing was run", r.cli);
        return refuse(shim, EXIT_NOT_INSTALLED, &why);
    };
    let scopes = match shim::classify(&r.cli, &r.args) {
        Need::Local => vec![],
        Need::Access { scopes, .. } => scopes,
    };
    // Registered before the credential is fetched, so a revocation arriving meanwhile is not missed.
    let mine = Registered::new(going, &r.grant_id);
    // The classification names scopes by the wire crate's words; each is one of its scopes.
    let scopes: Vec<Scope> = scopes.iter().filter_map(|s| Scope::parse(s)).collect();
    let (vars, ttl_s) = match runs.client.credential(&runs.lease, &r.grant_id, &scopes) {
        Ok(GrantCredential::Env { vars, ttl_s }) => (vars, ttl_s),
        Ok(GrantCredential::Ssh { private_key, ttl_s }) => {
            match runs.agent.load(&runs.sky_exe, runs.path.as_ref(), &runs.meta, &private_key, ttl_s) {
                Ok(socket) => (vec![("SSH_AUTH_SOCK".to_owned(), socket.to_string_lossy().into_owned())], ttl_s),
                Err(why) => return refuse(shim, EXIT_REFUSED, &format!("the key could not be loaded: {why}")),
            }
        }
        Err(CallError::Refused(why)) => return refuse(shim, EXIT_REFUSED, &format!("agentsky refused: {why}")),
        Err(e) => return refuse(shim, EXIT_UNREACHABLE, &format!("the credential could not be fetched: {e}")),
    };
    if mine.revoked() {
        return refuse(shim, EXIT_REFUSED, &format!("grant {} was revoked: nothing was run", r.grant_id));
    }
    let mut cmd = Command::new(&runs.sky_exe);
    cmd.args(["__supervise", "/dev/null"]).arg(&real).args(&r.args);
    for name in SCRUBBED_ENV {
        cmd.env_remove(name);
    }
    cmd.envs(runs.env.iter().map(|(k, v)| (k, v)));
    match &runs.path {
        Some(p) => cmd.env("PATH", p),
        None => cmd.env_remove("PATH"),
    };
    cmd.envs(vars.iter().map(|(k, v)| (k, v)));
    cmd.current_dir(if r.cwd.is_dir() { &r.cwd } else { &runs.work });
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return refuse(shim, EXIT_NOT_INSTALLED, &format!("cannot run {}: {e}", real.display())),
    };
    drop(vars);
    let lifeline = child.stdin.take();
    let relays: Vec<_> = [
        child.stdout.take().map(|o| relay(o, shim.clone(), Frame::Stdout)),
        child.stderr.take().map(|e| relay(e, shim.clone(), Frame::Stderr)),
    ]
    .into_iter()
    .flatten()
    .collect();
    // Ends the command when the shim goes away, the turn ends, the grant is revoked ([`Channel::forget`],
    // also while it was starting: the flag is already up then) or the grant expires (its credential goes
    // with it).
    let cancel = mine.cancel.clone();
    watch(reading, over.clone(), cancel.clone());
    let limit = ttl_s.map_or(NO_LIMIT, |s| Duration::from_secs(s.max(1)).min(NO_LIMIT));
    let (status, expired, ended) = wait_for(child, lifeline, limit, &cancel, runs.grace);
    let revoked = mine.revoked();
    drop(mine);
    cancel.store(true, Ordering::SeqCst);
    if expired {
        shim.say(&format!("grant {} expired: the command was ended with it", r.grant_id));
    } else if revoked && ended {
        shim.say(&format!("grant {} was revoked: the command was ended", r.grant_id));
    }
    for r in relays {
        let _ = r.join();
    }
    // 137: it had to be killed and its status could not be read.
    let code = status.as_ref().map_or(137, exit_code);
    let argv: Vec<String> = std::iter::once(r.cli.clone()).chain(r.args.iter().cloned()).collect();
    if let Err(e) = runs.client.command(&runs.lease, &r.grant_id, &argv, code) {
        shim.say(&format!("the exit status was not recorded with agentsky: {e}"));
    }
    code
}

/// A command's place in [`Going`] from before its credential is fetched until it ends (or is refused).
struct Registered<'a> {
    going: &'a Going,
    cancel: Arc<AtomicBool>,
    revoked: Arc<AtomicBool>,
}

impl<'a> Registered<'a> {
    fn new(going: &'a Going, grant_id: &str) -> Self {
        let (cancel, revoked) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
        going.lock().unwrap_or_else(|e| e.into_inner()).push((grant_id.to_owned(), cancel.clone(), revoked.clone()));
        Self { going, cancel, revoked }
    }

    fn revoked(&self) -> bool {
        self.revoked.load(Ordering::SeqCst)
    }
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        let mut going = self.going.lock().unwrap_or_else(|e| e.into_inner());
        going.retain(|(_, c, _)| !Arc::ptr_eq(c, &self.cancel));
    }
}

/// Copies a stream of the command to the shim as frames; after the shim is gone, drains it.
fn relay(mut from: impl Read + Send + 'static, shim: Shim, frame: fn(Vec<u8>) -> Frame) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let (mut buf, mut open) = ([0u8; 8192], true);
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 {
                break;
            }
            open = open && shim.send(&frame(buf[..n].to_vec()));
        }
    })
}

/// Raises `cancel` once the shim's side closes (it was ended) or the turn is `over`.
fn watch(mut reading: UnixStream, over: Arc<AtomicBool>, cancel: Arc<AtomicBool>) {
    let _ = reading.set_read_timeout(Some(Duration::from_millis(200)));
    std::thread::spawn(move || {
        let mut sink = [0u8; 256];
        while !cancel.load(Ordering::SeqCst) {
            if over.load(Ordering::SeqCst) {
                break;
            }
            match reading.read(&mut sink) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                Err(_) => break,
            }
        }
        cancel.store(true, Ordering::SeqCst);
    });
}
