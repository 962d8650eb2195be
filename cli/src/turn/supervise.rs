//! Processes: the supervisor that ends an agent's whole process group when the runner goes, and how an
//! exit status is told.

use std::io::Read;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// `exited with status 3`, `was killed by signal 9`.
pub fn describe_exit(status: &ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return format!("was killed by signal {sig}");
        }
    }
    match status.code() {
        Some(0) => "exited with status 0".into(),
        // The supervisor's way of passing on a signal.
        Some(c) if cfg!(unix) && c > 128 && c < 160 => {
            format!("exited with status {c} (killed by signal {})", c - 128)
        }
        Some(c) => format!("exited with status {c}"),
        None => "ended without an exit status".into(),
    }
}

/// `sky __supervise <stdin-file> <command…>`: the runner's supervisor (Unix). Runs the command in a process
/// group of its own with the file as its stdin, and waits. When the command exits, ends whatever of its
/// group is left and exits with its status (128 + N for a signal). When the supervisor's own stdin closes
/// (the runner ended the turn, or died), sends SIGTERM to the group, SIGKILL after 3 s, and exits 143.
pub fn supervise(args: &[String]) -> i32 {
    let [stdin_file, argv @ ..] = args else {
        eprintln!("sky __supervise: usage: sky __supervise <stdin-file> <command…>");
        return 2;
    };
    if argv.is_empty() {
        eprintln!("sky __supervise: no command");
        return 2;
    }
    let stdin = match std::fs::File::open(stdin_file) {
        Ok(f) => Stdio::from(f),
        Err(_) => Stdio::null(),
    };
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]).stdin(stdin);
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let why = if e.kind() == std::io::ErrorKind::NotFound { "not found".to_owned() } else { e.to_string() };
            eprintln!("sky runner: cannot run `{}`: {why}", argv[0]);
            return 127;
        }
    };
    let group = child.id();
    let (tx, rx) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        let mut sink = [0u8; 256];
        let mut stdin = std::io::stdin();
        while let Ok(n) = stdin.read(&mut sink) {
            if n == 0 {
                break;
            }
        }
        let _ = tx.send(());
    });
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                signal_group(group, Signal::Kill);
                return exit_code(&status);
            }
            Ok(None) => {}
            Err(_) => return 1,
        }
        match rx.recv_timeout(Duration::from_millis(100)) {
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            _ => {
                signal_group(group, Signal::Term);
                let deadline = Instant::now() + Duration::from_secs(3);
                while Instant::now() < deadline {
                    if let Ok(Some(_)) = child.try_wait() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
                signal_group(group, Signal::Kill);
                let _ = child.wait();
                return 143;
            }
        }
    }
}

pub(super) fn exit_code(status: &ExitStatus) -> i32 {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return 128 + sig;
        }
    }
    status.code().unwrap_or(1)
}

/// The signals the supervisor sends a process group.
#[derive(Clone, Copy)]
enum Signal {
    Term,
    Kill,
}

/// Sends `signal` to the process group `group` (a group already gone is fine).
fn signal_group(group: u32, signal: Signal) {
    #[cfg(unix)]
    if let Some(pgid) = i32::try_from(group).ok().and_then(rustix::process::Pid::from_raw) {
        let signal = match signal {
            Signal::Term => rustix::process::Signal::TERM,
            Signal::Kill => rustix::process::Signal::KILL,
        };
        let _ = rustix::process::kill_process_group(pgid, signal);
    }
    #[cfg(not(unix))]
    let _ = (group, signal);
}
