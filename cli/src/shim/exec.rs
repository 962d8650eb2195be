//! Running the real CLI: found on `PATH` outside the shim folder, then `exec`ed or waited for.

use super::{say, EXIT_NOT_INSTALLED};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The real `cli`: the first executable of that name on `path` outside `skip` that is not this `sky`.
pub fn find_real(cli: &str, path: Option<&OsString>, skip: &[PathBuf], me: Option<&Path>) -> Option<PathBuf> {
    // The folder relative `PATH` entries are read against.
    let cwd = std::env::current_dir().unwrap_or_default();
    let me = me.and_then(|m| std::fs::canonicalize(m).ok());
    let skip: Vec<PathBuf> = skip.iter().filter_map(|d| std::fs::canonicalize(d).ok()).collect();
    let outside_skip =
        |c: &PathBuf| c.parent().and_then(|d| std::fs::canonicalize(d).ok()).is_none_or(|d| !skip.contains(&d));
    which::which_in_all(cli, Some(path?), cwd)
        .ok()?
        .filter(outside_skip)
        .find(|candidate| me.is_none() || std::fs::canonicalize(candidate).ok() != me)
}

/// Runs `real` with `args` and extra `env`: replaces this process on Unix; returns the exit code.
pub(super) fn run_real(real: &Path, args: &[String], env: &[(String, String)]) -> i32 {
    let mut cmd = std::process::Command::new(real);
    cmd.args(args).envs(env.iter().map(|(k, v)| (k, v)));
    #[cfg(unix)]
    {
        let e = std::os::unix::process::CommandExt::exec(&mut cmd);
        eprintln!("sky shim: cannot run {}: {e}", real.display());
        EXIT_NOT_INSTALLED
    }
    #[cfg(not(unix))]
    match cmd.status() {
        Ok(s) => s.code().unwrap_or(1),
        Err(e) => {
            eprintln!("sky shim: cannot run {}: {e}", real.display());
            EXIT_NOT_INSTALLED
        }
    }
}

/// Runs the real CLI with a grant's credential outside a runner's turn and waits for it: its exit status,
/// 128 + the signal for one that ended it, as shells do. Nothing is reported (nothing observed it).
pub(super) fn run_granted(real: &Path, args: &[String], env: &[(String, String)]) -> i32 {
    let status = std::process::Command::new(real).args(args).envs(env.iter().map(|(k, v)| (k, v))).status();
    match status {
        Ok(s) => s.code().unwrap_or_else(|| {
            #[cfg(unix)]
            if let Some(sig) = std::os::unix::process::ExitStatusExt::signal(&s) {
                return 128 + sig;
            }
            1
        }),
        Err(e) => {
            say(&format!("cannot run {}: {e}", real.display()));
            EXIT_NOT_INSTALLED
        }
    }
}
